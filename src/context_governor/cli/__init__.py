"""The ``context-governor`` command line.

Exit codes: 0 success; 1 the result is not usable as it stands (``govern``: over
the budget or a provider rule still broken; ``lint``: violations; ``run``: no
answer); 2 bad input or usage (one line on stderr that points at the problem,
never a traceback).

Every command names its target ``--profile`` (``--provider`` is kept as a hidden
alias) and finds the context window the same way: ``--context-window``, else
the model's published window (providers/windows.py), else none, which a line on stderr
says.
"""

from __future__ import annotations

import click

from .. import __version__
from ._config import register
from ._demo import demo_command
from ._govern import govern_command
from ._lint import lint_command
from ._proxy import proxy_command
from ._run import run_command

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="context-governor")
def main() -> None:
    """Govern an LLM agent's context before each model request.

    Keeps the message list legal for the target provider and inside the token
    budget, reports every change, and never modifies the history it was given.
    """


# Each command is a module of this package; the package registers them, each with its
# --config option (config.py).
for _command in (govern_command, lint_command, run_command, demo_command, proxy_command):
    main.add_command(register(_command))

if __name__ == "__main__":  # pragma: no cover
    main()
