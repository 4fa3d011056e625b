"""``python -m context_governor`` runs the CLI."""

from .cli import main

main()
