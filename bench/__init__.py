"""Reproducible benchmarks of context-governor against its baselines.

``python -m bench.run`` (or ``make bench``) replays generated coding-agent
sessions and writes docs/benchmarks.md; see bench/README.md.
"""
