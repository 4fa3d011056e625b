"""Thin adapters to agent frameworks.

Each adapter is its own submodule and imports its framework only when that
submodule is imported, so that the core package never depends on a framework.
"""

__all__: list[str] = []
