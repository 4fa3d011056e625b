"""ProxyConfig's groups (issue 35, item 5): each group checks its settings and names the
one it refuses; a config file gives each group as a table of [proxy] (the flat keys
still load, with a warning naming their table); the flat keywords and attributes still
work, with a DeprecationWarning naming the new place; and the config crosses to the
worker processes (``--workers N``, CONFIG_ENV) with every setting intact."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from context_governor import ConfigError
from context_governor.cli import _proxy as proxy_cli
from context_governor.cli import main
from context_governor.proxy import (
    AccessConfig,
    CountingConfig,
    GoverningConfig,
    LimitsConfig,
    PageConfig,
    ProxyConfig,
    SummariesConfig,
    TelemetryConfig,
    TimeoutsConfig,
)
from context_governor.proxy import _app as proxy_app
from context_governor.proxy._config import CONFIG_ENV, FLAT, GROUPS, FlatSettings

KEY = "ck-0123456789abcdef0123"
TOKEN = "t0ken-for-the-page-0123"

# ----------------------------------------------------------------------------- groups

#: One bad value for every setting of every group, and the name its error must give.
BAD: list[tuple[type[Any], dict[str, Any], str]] = [
    (TimeoutsConfig, {"connect": 0}, "timeouts.connect"),
    (TimeoutsConfig, {"read": float("nan")}, "timeouts.read"),
    (LimitsConfig, {"max_body_bytes": 0}, "limits.max_body_bytes"),
    (LimitsConfig, {"max_in_flight": -1}, "limits.max_in_flight"),
    (LimitsConfig, {"max_in_flight_per_client": True}, "limits.max_in_flight_per_client"),
    (LimitsConfig, {"max_uploads": 0}, "limits.max_uploads"),
    (PageConfig, {"store": "ftp://x"}, "page.store"),
    (LimitsConfig, {"header_timeout": 0}, "limits.header_timeout"),
    (LimitsConfig, {"body_timeout": -1.0}, "limits.body_timeout"),
    (GoverningConfig, {"run_in": "fork"}, "governing.run_in"),
    (GoverningConfig, {"processes": 0}, "governing.processes"),
    (CountingConfig, {"store": "ftp://x"}, "counting.store"),
    (CountingConfig, {"retention": 5}, "counting.retention"),
    (CountingConfig, {"calibrate_upstream": "yes"}, "counting.calibrate_upstream"),
    (SummariesConfig, {"model": ""}, "summaries.model"),
    (SummariesConfig, {"model": "m", "store": "ftp://x"}, "summaries.store"),
    (SummariesConfig, {"model": "m", "base_url": "file:///x"}, "summaries.base_url"),
    (SummariesConfig, {"model": "m", "timeout": 0}, "summaries.timeout"),
    (SummariesConfig, {"model": "m", "retention": -1}, "summaries.retention"),
    (AccessConfig, {"allow_origins": "http://x"}, "access.allow_origins"),
    (AccessConfig, {"allow_hosts": [1]}, "access.allow_hosts"),
    (AccessConfig, {"client_keys": [KEY]}, "access.client_keys"),
    (PageConfig, {"enabled": "yes"}, "page.enabled"),
    (PageConfig, {"conversations": 0}, "page.conversations"),
    (PageConfig, {"requests": 0}, "page.requests"),
    (PageConfig, {"report_bytes": 0}, "page.report_bytes"),
    (PageConfig, {"content": 1}, "page.content"),
    (PageConfig, {"content_bytes": 0}, "page.content_bytes"),
    (PageConfig, {"token": "short"}, "page.token"),
    (TelemetryConfig, {"metrics": 1}, "telemetry.metrics"),
    (TelemetryConfig, {"otlp_endpoint": "ftp://collector"}, "telemetry.otlp_endpoint"),
]


@pytest.mark.parametrize(("group", "kwargs", "name"), BAD, ids=[name for *_, name in BAD])
def test_each_groups_error_names_the_setting(group: type[Any], kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ConfigError, match=rf"(^|\W){re.escape(name)}\b"):
        group(**kwargs)


def test_every_setting_of_every_group_has_a_bad_value_above() -> None:
    named = {name for *_, name in BAD}
    assert named == {f"{g}.{f.name}" for g, cls in GROUPS.items() for f in dataclasses.fields(cls)}


def test_the_checks_across_groups_and_the_group_types_are_proxyconfigs() -> None:
    with pytest.raises(ConfigError, match=r"^summaries\.model needs compaction 'cache'"):
        ProxyConfig(upstream="http://x/v1", compaction="seed", summaries=SummariesConfig(model="m"))
    with pytest.raises(ConfigError, match=r"^page\.content needs the page \(page\.enabled\)"):
        PageConfig(enabled=False, content=True)
    with pytest.raises(ConfigError, match="page must be a PageConfig"):
        ProxyConfig(upstream="http://x/v1", page={"requests": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ProxyConfig("http://x/v1", None, None, None, {}, 4096, "cache", {}, TimeoutsConfig())  # type: ignore[misc]


def test_groups_are_frozen_and_show_no_secret() -> None:
    config = ProxyConfig(
        upstream="http://x/v1?token=pw-secret",
        api_key="sk-the-upstream-key",
        access=AccessConfig(client_keys={"ci": KEY}, allow_origins=["http://localhost:3000/"]),
        page=PageConfig(token=TOKEN),
        counting=CountingConfig(store="redis://:count-secret@cache:6379/0"),
        summaries=SummariesConfig(model="m", store="redis://:summary-secret@cache:6379/1"),
        telemetry=TelemetryConfig(otlp_endpoint="http://otel:otlp-secret@collector:4318"),
    )
    shown = repr(config)
    for secret in ("pw-secret", "sk-the-upstream-key", KEY, TOKEN, "count-secret", "summary-secret", "otlp-secret"):
        assert secret not in shown
        assert config.redactor()(f"saw {secret}") == "saw ***"
    assert "access=AccessConfig(allow_origins=('http://localhost:3000',)" in shown
    assert "client_keys={'ci': '***'}" in shown and "token='***'" in shown
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.page.requests = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.access.client_keys["x"] = KEY  # type: ignore[index]


# ----------------------------------------------------------------------------- the flat names


def test_the_flat_keywords_still_build_the_same_config_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        flat = ProxyConfig(upstream="http://x/v1", read_timeout=30.0, ui_requests=100, client_keys={"ci": KEY})
    (warning,) = caught
    said = str(warning.message)
    assert "deprecated and will be removed in the next release" in said
    for place in ("timeouts=TimeoutsConfig(read=...)", "page=PageConfig(requests=...)", "access=AccessConfig(client_keys=...)"):
        assert place in said
    assert warning.filename == __file__  # the caller's line
    grouped = ProxyConfig(
        upstream="http://x/v1",
        timeouts=TimeoutsConfig(read=30.0),
        page=PageConfig(requests=100),
        access=AccessConfig(client_keys={"ci": KEY}),
    )
    assert flat == grouped


def test_the_flat_attributes_still_read_with_a_warning() -> None:
    config = ProxyConfig(upstream="http://x/v1", page=PageConfig(requests=100), limits=LimitsConfig(max_in_flight=5))
    with pytest.warns(DeprecationWarning, match=r"ProxyConfig\.ui_requests is deprecated .*read \.page\.requests"):
        assert config.ui_requests == 100  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match=r"read \.limits\.max_in_flight"):
        assert config.max_in_flight == 5  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert config.page.requests == 100  # the new place says nothing


def test_flat_errors_name_the_setting_as_given() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError, match=r"^ui_requests must be a positive integer"):
        ProxyConfig(upstream="http://x/v1", ui_requests=0)
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError, match=r"^count_retention needs count_store$"):
        ProxyConfig(upstream="http://x/v1", count_retention=5)
    with pytest.raises(ConfigError, match="give page or ui_token"):
        ProxyConfig(upstream="http://x/v1", page=PageConfig(), ui_token=TOKEN)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        ProxyConfig(upstream="http://x/v1", colour="red")  # type: ignore[call-arg]


#: Settings added after the groups replaced the flat names: they never had one.
NEVER_FLAT = {("limits", "max_uploads"), ("limits", "header_timeout"), ("limits", "body_timeout"),
              ("page", "store")}


def test_the_flat_names_cover_every_group_setting_once() -> None:
    assert set(FLAT) == set(FlatSettings.__annotations__)
    places = list(FLAT.values())
    assert len(places) == len(set(places))
    every = {(g, f.name) for g, cls in GROUPS.items() for f in dataclasses.fields(cls)}
    assert set(places) == every - NEVER_FLAT


# ----------------------------------------------------------------------------- worker processes


def _everything() -> ProxyConfig:
    """A config whose every setting differs from its default."""
    return ProxyConfig(
        upstream="https://upstream.example/v1?token=tk",
        upstreams={"anthropic": "https://anthropic.example?token=at"},
        api_key="sk-the-upstream-key",
        profile="glm",
        context_window=64_000,
        model_windows={"gpt-4o": 128_000, "gpt-4o-mini": 64_000},
        max_output=1_000,
        compaction="cache",
        compaction_settings={"trigger": 30_000, "exclude_tools": ["memory"]},
        compacted="drop",
        cache_breakpoints=False,
        timeouts=TimeoutsConfig(connect=3.0, read=45.5),
        limits=LimitsConfig(max_body_bytes=1_000_000, max_in_flight=9, max_in_flight_per_client=4,
                           max_uploads=7, header_timeout=3.5, body_timeout=30.0),
        governing=GoverningConfig(run_in="process", processes=3),
        counting=CountingConfig(store="sqlite:///counts.db", retention=3600.0, calibrate_upstream=True),
        summaries=SummariesConfig(
            model="small", store="memory://", base_url="http://summaries.example/v1", timeout=5.0, retention=60.0
        ),
        access=AccessConfig(
            allow_origins=("http://localhost:3000",), allow_hosts=("llm.example.com",), client_keys={"ci": KEY}
        ),
        page=PageConfig(
            enabled=True, conversations=7, requests=9, report_bytes=3_000, content=True, content_bytes=4_000, token=TOKEN,
            store="sqlite:///page.db",
        ),
        telemetry=TelemetryConfig(metrics=False, otlp_endpoint="http://collector:4318"),
    )


def _settings(config: ProxyConfig) -> dict[str, Any]:
    """Every setting by its dotted name."""
    found: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in GROUPS:
            found.update({f"{f.name}.{g.name}": getattr(value, g.name) for g in dataclasses.fields(value)})
        else:
            found[f.name] = value
    return found


def test_the_json_for_workers_keeps_every_setting() -> None:
    config = _everything()
    default = _settings(ProxyConfig(upstream="http://x/v1"))
    same = [name for name, value in _settings(config).items() if value == default[name]]
    assert same == ["compaction", "page.enabled"]  # summaries need the cache policy, content the page
    again = ProxyConfig.from_json(config.to_json())
    assert again == config and _settings(again) == _settings(config)
    with pytest.raises(ConfigError, match=r"unknown settings: colour, page\.colour"):
        ProxyConfig.from_json('{"upstream": "http://x/v1", "colour": "red", "page": {"colour": "red"}}')
    with pytest.raises(ConfigError, match="page must be a JSON object"):
        ProxyConfig.from_json('{"upstream": "http://x/v1", "page": 3}')


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting from the environment: the file's are the ones the test checks."""
    for name in ("CONTEXT_GOVERNOR_UI_TOKEN", "CONTEXT_GOVERNOR_CLIENT_KEYS", "CONTEXT_GOVERNOR_UPSTREAM_KEY", CONFIG_ENV):
        monkeypatch.delenv(name, raising=False)


def test_workers_rebuild_the_commands_config_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    """``proxy --workers 2``: the config the command made is the one each worker process
    builds from CONFIG_ENV (uvicorn's supervisor stood in for by one that builds the app
    the way a worker does)."""
    import uvicorn.supervisors

    built: list[ProxyConfig] = []
    served: list[ProxyConfig] = []
    serve = proxy_cli._serve
    monkeypatch.setattr(proxy_cli, "_serve", lambda uvicorn, config, *rest: (served.append(config), serve(uvicorn, config, *rest)))
    monkeypatch.setattr(proxy_app, "create_app", lambda config: built.append(config))

    class Supervisor:
        def __init__(self, config: Any, sockets: Any) -> None:
            assert config.workers == 2

        def run(self) -> None:
            proxy_app.app_from_env()

    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", Supervisor)
    path = tmp_path / "proxy.toml"
    path.write_text(TABLES, encoding="utf-8")
    result = CliRunner().invoke(main, ["proxy", "--config", str(path), "--port", "0", "--workers", "2"])
    assert result.exit_code == 0, result.output
    (config,) = served
    assert built == [config]
    assert _settings(built[0]) == _settings(config)
    assert config.page.token == TOKEN and config.access.client_keys == {"ci": KEY}


# ----------------------------------------------------------------------------- config file

#: Every table of [proxy], each setting off its default.
TABLES = f"""
[proxy]
upstream = "http://localhost:9/v1"
api-key = "sk-the-upstream-key"

[proxy.timeouts]
connect-timeout = 3
read-timeout = 45.5

[proxy.limits]
max-body = 1000000
max-in-flight = 9
max-in-flight-per-client = 4

[proxy.governing]
govern-in = "process"
govern-processes = 3

[proxy.counting]
count-store = "memory://"
count-retention = 3600
count-tokens-upstream = true

[proxy.summaries]
summary-model = "small"
summary-store = "memory://"
summary-base-url = "http://summaries.example/v1"
summary-timeout = 5
summary-retention = 60

[proxy.access]
client-key = ["ci:{KEY}"]
allow-origin = ["http://localhost:3000"]
allow-host = ["llm.example.com"]

[proxy.page]
ui-conversations = 7
ui-requests = 9
ui-reports-mb = 3
ui-content = true
ui-content-mb = 4
ui-token = "{TOKEN}"

[proxy.telemetry]
no-metrics = true
otlp-endpoint = "http://collector:4318"
"""


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, clean_env: None) -> list[ProxyConfig]:
    """The proxy command up to serving: the config it would serve with."""
    seen: list[ProxyConfig] = []
    monkeypatch.setattr(proxy_cli, "_serve", lambda uvicorn, config, *rest: seen.append(config))
    return seen


def _proxy(tmp_path: Path, text: str, *args: str) -> Any:
    path = tmp_path / "proxy.toml"
    path.write_text(text, encoding="utf-8")
    return CliRunner().invoke(main, ["proxy", "--config", str(path), "--port", "0", *args])


def test_the_tables_load(tmp_path: Path, served: list[ProxyConfig]) -> None:
    result = _proxy(tmp_path, TABLES)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    (config,) = served
    assert config.timeouts == TimeoutsConfig(connect=3.0, read=45.5)
    assert config.limits == LimitsConfig(max_body_bytes=1_000_000, max_in_flight=9, max_in_flight_per_client=4)
    assert config.governing == GoverningConfig(run_in="process", processes=3)
    assert config.counting == CountingConfig(store="memory://", retention=3600.0, calibrate_upstream=True)
    assert config.summaries == SummariesConfig(
        model="small", store="memory://", base_url="http://summaries.example/v1", timeout=5.0, retention=60.0
    )
    assert config.access == AccessConfig(
        allow_origins=("http://localhost:3000",), allow_hosts=("llm.example.com",), client_keys={"ci": KEY}
    )
    assert config.page == PageConfig(
        conversations=7, requests=9, report_bytes=3 << 20, content=True, content_bytes=4 << 20, token=TOKEN
    )
    assert config.telemetry == TelemetryConfig(metrics=False, otlp_endpoint="http://collector:4318")
    assert config.api_key == "sk-the-upstream-key"


def test_the_tables_are_the_groups() -> None:
    assert set(proxy_cli.TABLES) == set(GROUPS)
    out = CliRunner().invoke(main, ["proxy", "--help"]).output
    epilog = out.partition("Settings only a --config file takes, by table:")[2]
    assert "[proxy.timeouts] connect-timeout, read-timeout" in epilog
    assert "[proxy.limits] body-timeout, header-timeout, max-body, max-in-flight," in epilog


def test_a_flat_key_still_loads_with_a_warning_naming_its_table(tmp_path: Path, served: list[ProxyConfig]) -> None:
    result = _proxy(tmp_path, '[proxy]\nupstream = "http://localhost:9/v1"\nread-timeout = 30\nui-requests = 100\n')
    assert result.exit_code == 0, result.output
    (config,) = served
    assert config.timeouts.read == 30.0 and config.page.requests == 100
    for key, table in (("read-timeout", "timeouts"), ("ui-requests", "page")):
        assert (
            f"warning: {tmp_path / 'proxy.toml'}: {key} in the [proxy] table is deprecated and will be "
            f"removed in the next release: set it in the [proxy.{table}] table"
        ) in result.stderr


def test_the_moved_flags_name_their_table(tmp_path: Path, served: list[ProxyConfig]) -> None:
    result = _proxy(tmp_path, '[proxy]\nupstream = "http://localhost:9/v1"\n', "--read-timeout", "7")
    assert result.exit_code == 0, result.output
    assert served[0].timeouts.read == 7.0
    assert "set read-timeout in the [proxy.timeouts] table of a --config file" in result.stderr


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[proxy]\nread-timeout = 30\n[proxy.timeouts]\nread-timeout = 40\n",
         "[proxy] read-timeout and [proxy.timeouts] read-timeout are one setting: give it once"),
        ("[proxy.limits]\nread-timeout = 30\n", "[proxy.limits] has no setting 'read-timeout'; it goes in [proxy.timeouts]"),
        ("[proxy.limits]\nupstream = 'http://x'\n", "[proxy.limits] has no setting 'upstream'; it goes in [proxy]"),
        ("[proxy.limits]\ncolour = 1\n", "[proxy.limits] has no setting 'colour'; settings: max-body, max-in-flight"),
        ("[proxy.colours]\nred = 1\n", "unknown table [proxy.colours]; tables: [proxy.access], [proxy.counting]"),
        ("[proxy]\ncolour = 1\n", "[proxy] has no setting 'colour'; settings: api-key, cache-breakpoints, compacted, compaction"),
        ("[proxy.limits]\nmax-in-flight = 0\n", "[proxy.limits] max-in-flight: 0 is not in the range x>=1"),
    ],
)  # fmt: skip
def test_mistakes_in_the_tables_name_the_place(tmp_path: Path, served: list[ProxyConfig], text: str, said: str) -> None:
    result = _proxy(tmp_path, '[proxy]\nupstream = "http://localhost:9/v1"\n' + text.replace("[proxy]\n", "", 1))
    assert result.exit_code == 2, result.output
    assert said in result.stderr and served == []


def test_credentials_in_the_upstream_and_an_api_key_are_refused_together() -> None:
    """Userinfo becomes basic auth in the Authorization header, where the api key goes
    too: given both, one would silently replace the other."""
    with pytest.raises(ConfigError, match="upstream carries credentials"):
        ProxyConfig(upstream="https://user:pw@gateway.example/v1", api_key="sk-x")
    assert ProxyConfig(upstream="https://user:pw@gateway.example/v1").api_key is None
    assert ProxyConfig(upstream="https://gateway.example/v1", api_key="sk-x").api_key == "sk-x"


def test_the_proxy_builds_every_encoding_in_the_background_at_start() -> None:
    """The first request for a model nobody configured (gpt-4o: o200k) used to wait
    1.3-1.8 s for its tokenizer; the proxy now builds every encoding in the background
    once it serves. In a fresh interpreter, so no other test has built one."""
    script = (
        "import asyncio\n"
        "from context_governor import counting as encodings\n"
        "from context_governor.proxy import ProxyConfig\n"
        "from context_governor.proxy._executor import Governance\n"
        "built = []\n"
        "encodings.build_hooks.append(built.append)\n"
        "governance = Governance(ProxyConfig(upstream='http://x/v1'))\n"
        "asyncio.run(governance.start())\n"
        "assert governance.warming is not None\n"
        "governance.warming.join(60)\n"
        "print(sorted(set(built)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['cl100k_base', 'o200k_base']"
