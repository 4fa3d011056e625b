"""`run` and `proxy` take their --summary-* options from one definition (cli/_common.py):
the same names, defaults and order, the proxy's two extra options, and each command's
own bound on --summary-timeout."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from context_governor.cli import main

SHARED = ["summary_model", "summary_store", "summary_timeout"]


def _summary_params(command: str) -> list[click.Parameter]:
    return [p for p in main.commands[command].params if (p.name or "").startswith("summary_")]


def test_both_commands_share_the_summary_options_in_one_order() -> None:
    run, proxy = _summary_params("run"), _summary_params("proxy")
    assert [p.name for p in run] == SHARED
    assert [p.name for p in proxy] == [
        "summary_model",
        "summary_store",
        "summary_base_url",
        "summary_timeout",
        "summary_retention",
    ]
    for name in SHARED:
        ours, theirs = (next(p for p in ps if p.name == name) for ps in (run, proxy))
        assert ours.opts == theirs.opts == ["--" + name.replace("_", "-")]
        assert ours.default == theirs.default
    # the options sit together in each command's help
    params = [p.name for p in main.commands["proxy"].params]
    start = params.index("summary_model")
    assert params[start : start + 5] == [p.name for p in proxy]


@pytest.mark.parametrize(("command", "accepts"), [("run", False), ("proxy", True)])
def test_summary_timeout_bounds_differ_as_before(command: str, accepts: bool) -> None:
    timeout = next(p for p in _summary_params(command) if p.name == "summary_timeout")
    assert timeout.type.convert("0.1", timeout, None) == 0.1
    if accepts:
        assert timeout.type.convert("0.05", timeout, None) == 0.05
    else:
        with pytest.raises(click.BadParameter):
            timeout.type.convert("0.05", timeout, None)
    with pytest.raises(click.BadParameter):
        timeout.type.convert("0", timeout, None)


def test_run_help_lists_the_summary_options() -> None:
    """--summary-model is an option; where summaries are kept and how long a request
    waits are config-file settings (the --help epilog names them; the old flags still
    work for one release, with a warning)."""
    out = CliRunner().invoke(main, ["run", "--help"]).output
    options, _, epilog = out.partition("Settings only a --config file takes")
    assert "--summary-model" in options
    for name in ("summary-store", "summary-timeout"):
        assert f"--{name}" not in options and name in epilog
    assert "summary-base-url" not in out and "summary-retention" not in out
    out = CliRunner().invoke(main, ["proxy", "--help"]).output
    options, _, epilog = out.partition("Settings only a --config file takes")
    for name in ("summary-store", "summary-timeout", "summary-base-url", "summary-retention"):
        assert f"--{name}" not in options and name in epilog
