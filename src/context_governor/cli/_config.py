"""``--config FILE``: the settings of every command in one TOML file; flags override it.

The file's top-level keys are settings any command may take (``profile``,
``context-window``...; a command that has no such option leaves it alone); a table
named after a command (``[proxy]``, ``[run]``, ``[govern]``, ``[lint]``, ``[demo]``)
holds that command's own; ``[compaction]`` holds the cache policy's settings
(policies.SETTINGS) and ``policy = "cache" | "seed"``. Keys are the options' long
names, with dashes or underscores (``read-timeout`` or ``read_timeout``).

A command may group its settings in tables of its own table (``sub_tables``: the
proxy's ``[proxy.timeouts]``, ``[proxy.limits]``...); such a setting given in the
command's table itself still loads for one release, with a warning naming its table.

The values become click's ``default_map`` for the command: a flag on the command line
(or its environment variable) wins, and each value is checked by the option's own
type, so an error names the file, the table and the key. Options moved off the
command line (``hidden``) are still accepted there for one release, with a warning
that says where the setting goes (``warn_moved``).
"""

from __future__ import annotations

import functools
import textwrap
import tomllib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

import click
from click.core import ParameterSource

from ..errors import ConfigError
from ..policies import SETTINGS, policy_from_settings
from ._common import fail

__all__ = [
    "COMMAND_TABLES",
    "CONFIG_ENV",
    "Setting",
    "compaction_for",
    "compaction_settings",
    "config_epilog",
    "config_option",
    "register",
    "sub_tables",
    "warn_moved",
]

#: Names a config file from the environment when --config is not given.
CONFIG_ENV = "CONTEXT_GOVERNOR_CONFIG"
#: The tables a config file may have besides [compaction].
COMMAND_TABLES = ("govern", "lint", "run", "demo", "proxy")
_META = "context_governor.compaction"
_F = TypeVar("_F", bound=Callable[..., Any])


def _key(name: str) -> str:
    return name.replace("-", "_")


def _options(command: click.Command) -> dict[str, click.Option]:
    """The command's options by the key a config file uses for each (its long name)."""
    found: dict[str, click.Option] = {}
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in (None, "config"):
            continue
        for opt in param.opts:
            if opt.startswith("--") and opt != "--help":
                found[_key(opt[2:])] = param
    return found


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except tomllib.TOMLDecodeError as exc:
        fail(f"{path} is not valid TOML: {exc}")


def _value(option: click.Option, value: Any, where: str) -> Any:
    """``value`` as click's default_map takes it for ``option``; exit 2 naming ``where``
    when the option's type refuses it (the same check the command line gets)."""
    if option.multiple:
        if isinstance(value, Mapping):  # model-window = { "gpt-4o" = 128000 }
            value = [f"{k}={v}" for k, v in value.items()]
        elif not isinstance(value, list):
            value = [value]
        value = [_text(v) for v in value]
    if option.is_flag and not isinstance(value, bool):
        fail(f"{where} must be true or false, got {value!r}")
    try:
        option.type_cast_value(click.Context(click.Command("config")), value)
    except click.BadParameter as exc:
        fail(f"{where}: {exc.message}")
    return value


def _text(value: Any) -> Any:
    """A number in a list for a repeatable option, as the command line would give it."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return str(value) if number else value


def _compaction_table(data: Mapping[str, Any]) -> dict[str, Any]:
    """The [compaction] table (empty when the file has none, or says ``compaction =
    "seed"`` at the top, which is the policy's name as a shared key)."""
    table = data.get("compaction", {})
    return dict(table) if isinstance(table, dict) else {}


def _shared(known: dict[str, click.Option], data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The top-level keys this command has an option for; a key no command has is an
    error, one another command has is left to it."""
    tables = {*COMMAND_TABLES, "compaction"}
    everyone = {key for name in COMMAND_TABLES for key in _option_keys(name)}
    found: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            if key not in tables:
                listed = ", ".join(f"[{t}]" for t in sorted(tables))
                fail(f"{path}: unknown table [{key}]; tables: {listed}")
            continue
        name = _key(key)
        if name in known:
            found[known[name].name or name] = _value(known[name], value, f"{path}: {key}")
        elif name not in everyone:
            fail(f"{path}: no command has a setting {key!r}")
    return found


def _own(
    command: click.Command, known: dict[str, click.Option], data: Mapping[str, Any], path: str
) -> dict[str, Any]:
    """The command's own table, and its tables (``sub_tables``): every key must be one
    of its options, in its table; a setting given twice (in the command's table and in
    its own) is an error."""
    name = command.name or ""
    layout = _tables.get(name, {})
    given: dict[str, tuple[str, Any]] = {}  # option key -> (where it was given, value)
    for key, value in data.get(name, {}).items():
        if key in layout and isinstance(value, dict):
            for sub_key, sub_value in value.items():
                _given(given, _in_sub_table(name, known, key, sub_key, path), sub_value, path)
        else:
            _given(given, _in_own_table(name, known, key, value, path), value, path)
    return {
        known[option].name or option: _value(known[option], value, f"{path}: {where}")
        for option, (where, value) in given.items()
    }


def _given(given: dict[str, tuple[str, Any]], at: tuple[str, str], value: Any, path: str) -> None:
    option, where = at
    if option in given:
        first = given[option][0]
        fail(f"{path}: {first} and {where} are one setting: give it once")
    given[option] = (where, value)


def _table_of(command: str, option: str) -> str | None:
    """The table of the command's own table that holds ``option`` (a key), if any."""
    return next((t for t, keys in _tables.get(command, {}).items() if option in keys), None)


def _in_own_table(
    command: str, known: dict[str, click.Option], key: str, value: Any, path: str
) -> tuple[str, str]:
    """A key of the command's table: its option and where it was given; a setting that
    has a table of its own is warned about (deprecated there), a table that is none of
    the command's is an error."""
    option = _key(key)
    if option not in known:
        _unknown(command, known, key, value, path)
    table = _table_of(command, option)
    if table is not None:
        click.echo(
            f"warning: {path}: {key} in the [{command}] table is deprecated and will be "
            f"removed in the next release: set it in the [{command}.{table}] table",
            err=True,
        )
    return option, f"[{command}] {key}"


def _unknown(
    command: str, known: dict[str, click.Option], key: str, value: Any, path: str
) -> NoReturn:
    """Exit 2 for a key of [command] that is no setting there (nor one of its tables)."""
    layout = _tables.get(command, {})
    tables = ", ".join(f"[{command}.{t}]" for t in sorted(layout))
    if isinstance(value, dict) and layout:
        fail(f"{path}: unknown table [{command}.{key}]; tables: {tables}")
    own = [k for k in known if k != "provider" and _table_of(command, k) is None]
    listed = ", ".join(sorted(k.replace("_", "-") for k in own))
    fail(
        f"{path}: [{command}] has no setting {key!r}; settings: {listed}"
        + (f"; tables: {tables}" if tables else "")
    )


def _in_sub_table(
    command: str, known: dict[str, click.Option], table: str, key: str, path: str
) -> tuple[str, str]:
    """A key of the table ``[command.table]``: its option and where it was given."""
    option = _key(key)
    if option in known and _table_of(command, option) == table:
        return option, f"[{command}.{table}] {key}"
    home = _table_of(command, option) if option in known else None
    if home is not None:
        fail(f"{path}: [{command}.{table}] has no setting {key!r}; it goes in [{command}.{home}]")
    if option in known:
        fail(f"{path}: [{command}.{table}] has no setting {key!r}; it goes in [{command}]")
    listed = ", ".join(k.replace("_", "-") for k in _tables[command][table])
    fail(f"{path}: [{command}.{table}] has no setting {key!r}; settings: {listed}")


def _policy(known: dict[str, click.Option], data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """``policy`` of the [compaction] table as the command's --compaction default, and
    the table's other keys checked against the cache policy's settings."""
    table = _compaction_table(data)
    policy = table.pop("policy", None)
    if policy is not None and policy not in ("cache", "seed"):
        fail(f"{path}: [compaction] policy must be 'cache' or 'seed', got {policy!r}")
    unknown = sorted(set(map(_key, table)) - set(SETTINGS))
    if unknown:
        listed = ", ".join(["policy", *SETTINGS])
        fail(f"{path}: [compaction] has no setting {unknown[0]!r}; settings: {listed}")
    return {} if policy is None or "compaction" not in known else {"compaction": policy}


def _default_map(command: click.Command, data: dict[str, Any], path: str) -> dict[str, Any]:
    """click's default_map for ``command`` from a config file's ``data``: the shared
    keys, then the [compaction] policy, then the command's own table (which wins)."""
    known = _options(command)
    return {
        **_shared(known, data, path),
        **_policy(known, data, path),
        **_own(command, known, data, path),
    }


_registry: dict[str, click.Command] = {}
#: The tables of a command's own table (``sub_tables``): each table's option keys, by command.
_tables: dict[str, dict[str, tuple[str, ...]]] = {}


def sub_tables(layout: Mapping[str, Sequence[str]]) -> Callable[[click.Command], click.Command]:
    """Declare tables of a command's own table: ``{"limits": ("max-body", ...)}`` puts
    those settings in ``[command.limits]``. The same keys in ``[command]`` still load,
    with a warning, for one release; --help and the moved flags' warnings name each
    setting's table."""

    def declare(command: click.Command) -> click.Command:
        keys = set(_options(command))
        tables = {t: tuple(_key(k) for k in names) for t, names in layout.items()}
        stray = sorted({k for names in tables.values() for k in names} - keys)
        assert not stray, f"{command.name}: no such options: {stray}"
        _tables[command.name or ""] = tables
        return command

    return declare


def _option_keys(name: str) -> set[str]:
    command = _registry.get(name)
    return set() if command is None else set(_options(command))


def _read(ctx: click.Context, param: click.Parameter, path: str | None) -> None:
    """--config's callback (eager: before every other option is read)."""
    if path is None:
        return
    data = _load(path)
    assert ctx.command is not None
    ctx.default_map = {**(ctx.default_map or {}), **_default_map(ctx.command, data, path)}
    settings = {_key(k): v for k, v in _compaction_table(data).items() if k != "policy"}
    ctx.meta[_META] = (path, settings)


def config_option(command: _F) -> _F:
    """``--config FILE`` (env CONTEXT_GOVERNOR_CONFIG): read first, flags override it."""
    return click.option(
        "--config",
        type=click.Path(dir_okay=False),
        default=None,
        envvar=CONFIG_ENV,
        show_envvar=True,
        is_eager=True,
        expose_value=False,
        callback=_read,
        metavar="FILE",
        help="A TOML file of settings (this command's table, shared keys, [compaction]); "
        "options given here override it. See docs/cli.md, 'Config file'.",
    )(command)


def register(command: click.Command) -> click.Command:
    """Give ``command`` its --config option, know it (shared keys are checked against
    every command's options), list its config-only settings at the end of its --help,
    and warn about those given on the command line (``warn_moved``)."""
    command = config_option(command)
    _registry[command.name or ""] = command
    command.epilog = config_epilog(command)
    callback = command.callback
    assert callback is not None

    @functools.wraps(callback)
    def warned(*args: Any, **kwargs: Any) -> Any:
        warn_moved(click.get_current_context())
        return callback(*args, **kwargs)

    command.callback = warned
    return command


def _moved(command: click.Command) -> list[tuple[click.Option, str]]:
    """The options moved to the config file (hidden ones, but for --provider, the old
    name of --profile, which has its own rule), each with its flag."""
    return [
        (p, next(o for o in p.opts if o.startswith("--")))
        for p in command.params
        if isinstance(p, click.Option) and p.hidden and p.name not in (None, "provider_alias")
    ]


def config_epilog(command: click.Command) -> str | None:
    """The --help lines naming the settings only a config file takes (hidden options),
    each under its table."""
    name = command.name or ""
    by_table: dict[str, list[str]] = {}
    for option, flag in _moved(command):
        table = _table_of(name, _key(flag[2:]))
        place = f"[{name}]" if table is None else f"[{name}.{table}]"
        by_table.setdefault(place, []).append(flag[2:] + _envvar(option))
    if not by_table:
        return command.epilog
    if list(by_table) == [f"[{name}]"]:
        head = f"Settings only a --config file takes ([{name}] table):"
        lines = textwrap.wrap(", ".join(sorted(by_table[f"[{name}]"])), 74, break_on_hyphens=False)
        body = ["  " + line for line in lines]
    else:
        head = "Settings only a --config file takes, by table:"
        body = [
            line
            for place, keys in sorted(by_table.items())
            for line in textwrap.wrap(
                f"{place} {', '.join(sorted(keys))}",
                76,
                initial_indent="  ",
                subsequent_indent="      ",
                break_on_hyphens=False,
            )
        ]
    text = "\n".join(["\b", head, *body])
    return text if not command.epilog else f"{command.epilog}\n\n{text}"


def _envvar(option: click.Option) -> str:
    """`` (or $NAME)`` for an option an environment variable also sets."""
    names = [option.envvar] if isinstance(option.envvar, str) else list(option.envvar or ())
    return f" (or ${names[0]})" if names and option.show_envvar else ""


def compaction_settings(ctx: click.Context) -> tuple[str | None, dict[str, Any]]:
    """The config file's path and its [compaction] settings (without ``policy``)."""
    found: tuple[str, dict[str, Any]] | None = ctx.meta.get(_META)
    return (None, {}) if found is None else found


class Setting(click.Option):
    """A setting only a config file shows (hidden, listed at the end of --help) that was
    never a documented flag: given on the command line it works, with no warning."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "hidden": True})


def warn_moved(ctx: click.Context) -> None:
    """One warning per hidden option given on the command line (but a ``Setting``): it
    works for one more release, and its setting belongs in the config file."""
    name = ctx.command.name or ""
    for option, flag in _moved(ctx.command):
        if isinstance(option, Setting):
            continue
        if ctx.get_parameter_source(option.name or "") is ParameterSource.COMMANDLINE:
            table = _table_of(name, _key(flag[2:]))
            place = name if table is None else f"{name}.{table}"
            click.echo(
                f"warning: {flag} on the command line is deprecated and will be removed in "
                f"the next release: set {flag[2:]} in the [{place}] table of a --config file",
                err=True,
            )


def compaction_for(ctx: click.Context, name: str) -> Any:
    """What govern()'s ``compaction`` is for the policy ``name`` the command was given,
    with the config file's [compaction] settings: the name itself when there are none
    (as before config files), else the policy (ConfigError naming the setting)."""
    path, settings = compaction_settings(ctx)
    if not settings:
        return name
    if name == "seed":
        click.echo(
            f"note: the [compaction] settings of {path} are the cache policy's: the seed "
            "policy has none",
            err=True,
        )
        return name
    try:
        return policy_from_settings(name, settings)
    except ConfigError as exc:
        fail(f"{path}: [compaction] {exc}")
