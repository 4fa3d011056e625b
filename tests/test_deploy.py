"""deploy/: what can be run of it on a machine without a container runtime.

No Docker daemon and no cluster run the tests, so each deployment is checked by its
parts (docs/deploy.md):

- the image: its Dockerfile read step by step (a user of its own, the health check,
  the port, the command), then its two copies, its install and its command run in a
  fresh virtual environment, with the Secret's environment, answering /healthz;
- compose's topology with its processes started directly: Redis, two proxy replicas
  with the example config and the shared count store, Debian's nginx with
  deploy/nginx.conf round-robin in front, and a fake upstream that reports more usage
  than the proxy counts. The replicas forward byte-identical bodies for the same
  conversation from the first request on, and once one learned a usage ratio, the
  other governs with it too; a restarted replica reads it back from Redis;
- the compose, Kubernetes and systemd files name the same image, command, port,
  health path and config as the Dockerfile and deploy/proxy.toml, which loads with the
  real command.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fake_limits import FakeLimits
from redis_server import redis_url
from starlette.requests import Request
from starlette.responses import Response

from context_governor.cli import _proxy as proxy_cli
from context_governor.cli import main
from context_governor.formats import govern_request

__all__ = ["redis_url"]  # the fixture, used by name

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
CONFIG = DEPLOY / "proxy.toml"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
IMAGE = f"context-governor-proxy:{VERSION}"
#: The image's command, as the brief and docs/deploy.md give it.
COMMAND = ["context-governor", "proxy", "--config", "/etc/context-governor/proxy.toml",
           "--host", "0.0.0.0"]  # fmt: skip
SECRETS = ("CONTEXT_GOVERNOR_UPSTREAM_KEY", "CONTEXT_GOVERNOR_CLIENT_KEYS",
           "CONTEXT_GOVERNOR_UI_TOKEN")  # fmt: skip
NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
)


# ----------------------------------------------------------------------------- reading


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), continuations joined."""
    steps: list[tuple[str, str]] = []
    pending = ""
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.lstrip().startswith("#") and not pending:
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending.strip():
            keyword, _, args = pending.strip().partition(" ")
            steps.append((keyword.upper(), " ".join(args.split())))
        pending = ""
    return steps


def step(keyword: str) -> list[str]:
    return [args for kw, args in dockerfile() if kw == keyword]


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def image_command() -> list[str]:
    (entry,) = step("ENTRYPOINT")
    (cmd,) = step("CMD")
    return exec_form(entry) + exec_form(cmd)


def config() -> dict[str, Any]:
    return tomllib.loads(CONFIG.read_text())


def yaml_documents(path: Path) -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with langchain-core (.[dev])")
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    """This environment without the proxy's secrets (a developer's shell may hold
    them), plus ``extra``."""
    env = {
        k: v for k, v in os.environ.items() if k not in SECRETS and k != "CONTEXT_GOVERNOR_CONFIG"
    }
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


class Proxy:
    """A proxy process: started with ``args``, up once its banner named its port and
    /healthz answered."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            args, cwd=cwd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
        )
        assert self.process.stderr is not None
        self.banner = [self.process.stderr.readline()]
        match = re.search(r":(\d+)/v1 ", self.banner[0])
        if match is None:
            self.process.wait(20)
            pytest.fail(f"the proxy did not start: {self.banner[0]}{self.process.stderr.read()}")
        self.port = int(match.group(1))
        self.url = f"http://127.0.0.1:{self.port}"
        while not self.banner[-1].lstrip().startswith(("page", "metrics")):
            self.banner.append(self.process.stderr.readline())
            assert self.banner[-1], "".join(self.banner)
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the proxy did not answer /healthz"
            assert self.process.poll() is None, "".join(self.banner)
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        assert self.process.stderr is not None
        self.process.stderr.close()


# ----------------------------------------------------------------------------- the image


def test_the_image_runs_as_its_own_user_checks_its_health_and_serves_the_config() -> None:
    steps = dockerfile()
    keywords = [kw for kw, _ in steps]
    assert keywords[0] == "FROM" and step("FROM")[0].startswith("python:3.11-slim")
    (user,) = step("USER")
    assert user.partition(":")[0] not in ("root", "0") and user.partition(":")[0].isdigit()
    # the user is set after every RUN (installing needs root), before the command
    assert max(i for i, kw in enumerate(keywords) if kw == "RUN") < keywords.index("USER")
    assert image_command() == COMMAND
    port = config()["proxy"]["port"]
    assert step("EXPOSE") == [str(port)]
    (health,) = step("HEALTHCHECK")
    options, _, probe = health.partition(" CMD ")
    assert re.search(r"--interval=\d+s", options) and re.search(r"--timeout=\d+s", options)
    assert f"http://127.0.0.1:{port}/healthz" in " ".join(exec_form(probe))
    # the config the command reads is the one the image ships (a mount replaces it)
    assert "deploy/proxy.toml /etc/context-governor/proxy.toml" in step("COPY")
    # the state volume is the working directory: the config's relative SQLite store
    assert config()["proxy"]["counting"]["count-store"] == "sqlite:///counts.db"
    assert step("VOLUME") == ['["/var/lib/context-governor"]']
    assert step("WORKDIR") == ["/var/lib/context-governor"]
    # the extras it installs exist: the proxy's server, and the shared count store's client
    (extras,) = [a for a in step("ARG") if a.startswith("EXTRAS=")]
    names = extras.partition("=")[2].split(",")
    assert {"proxy", "redis"} <= set(names) <= set(PYPROJECT["project"]["optional-dependencies"])
    # the build context holds what the image copies, and only that
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    kept = {line[1:] for line in ignored if line.startswith("!")}
    copied = {src for args in step("COPY") for src in args.split()[:-1]}
    assert copied == kept, (copied, kept)


def test_the_images_install_and_command_run_in_a_fresh_environment(tmp_path: Path) -> None:
    """The Dockerfile's copies and its pip install, in a fresh venv (pip's cache and
    index as the machine has them); then its command with the shipped config, in the
    state directory as working directory: refused as an open relay with an upstream key
    and no client key, served with both (the Secret's environment), /healthz answered
    to the image's own HEALTHCHECK command without a key, a request without one refused."""
    image = tmp_path / "image"  # the image's file system: /x is image/x
    for args in step("COPY"):
        *sources, dest = args.split()
        target = image / dest.lstrip("/")
        for source in sources:
            if dest.endswith("/"):
                target.mkdir(parents=True, exist_ok=True)
                into = target / Path(source).name
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                into = target
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, into, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(ROOT / source, into)
    (extras,) = [a.partition("=")[2] for a in step("ARG") if a.startswith("EXTRAS=")]
    (install,) = [a for a in step("RUN") if "pip install" in a]
    (requirement,) = re.findall(r'pip install "([^"]+)"', install)
    requirement = requirement.replace("${EXTRAS}", extras).replace("/", str(image) + "/", 1)
    assert requirement.endswith("[proxy,redis]") and Path(requirement.partition("[")[0]).is_dir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)  # the installed package, not the worktree's
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         requirement],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # the copied sources are gone in the image; the venv's package is what runs
    shutil.rmtree(image / "tmp")
    workdir = image / step("WORKDIR")[0].lstrip("/")
    workdir.mkdir(parents=True)
    command = [str(bin_dir / COMMAND[0]), *COMMAND[1:]]
    command[command.index("--config") + 1] = str(image / "etc/context-governor/proxy.toml")
    # an upstream key and no client key on 0.0.0.0: refused (exit 2), never listening
    refused = subprocess.run(
        command, cwd=workdir, env={**env, "CONTEXT_GOVERNOR_UPSTREAM_KEY": "sk-test-owner"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert "refusing to listen on 0.0.0.0 with --api-key and no --client-key" in refused.stderr
    # the team's secrets: served on 0.0.0.0 (on a free port, not the machine's 8787)
    team = {**env, "CONTEXT_GOVERNOR_UPSTREAM_KEY": "sk-test-owner",
            "CONTEXT_GOVERNOR_CLIENT_KEYS": "alice:alice-key-0123456789 bob:bob-key-0123456789",
            "CONTEXT_GOVERNOR_UI_TOKEN": ""}  # fmt: skip
    proxy = Proxy([*command, "--port", "0"], workdir, team)
    try:
        assert "learned: shared through the count store" in "".join(proxy.banner)
        assert "https://api.anthropic.com/v1 (anthropic rules)" in "".join(proxy.banner)
        (health,) = step("HEALTHCHECK")
        probe = exec_form(health.partition(" CMD ")[2])
        probe = [p.replace(":8787/", f":{proxy.port}/") for p in probe]
        checked = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, checked.stderr
        chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        refused_client = httpx.post(proxy.url + "/v1/chat/completions", json=chat, timeout=10)
        assert refused_client.status_code == 401
        assert refused_client.json()["error"]["code"] == "invalid_api_key"
    finally:
        proxy.stop()
    installed = subprocess.run(
        [str(bin_dir / "python"), "-c", "import context_governor, redis, uvicorn; "
         "print(context_governor.__file__)"], env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert installed.returncode == 0 and str(venv) in installed.stdout, installed.stderr


# ----------------------------------------------------------------------------- replicas


class Recording(FakeLimits):
    """FakeLimits that keeps the exact bytes of every chat body it was sent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.bodies: list[bytes] = []
        super().__init__(*args, **kwargs)

    async def _chat(self, request: Request) -> Response:
        self.bodies.append(await request.body())
        return await super()._chat(request)


def _words(turn: int, words: int) -> str:
    return f"turn {turn}: " + " ".join(f"w{turn}x{j}" for j in range(words))


def _chat(turns: int, words: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for i in range(turns):
        messages.append({"role": "user", "content": _words(2 * i, words)})
        messages.append({"role": "assistant", "content": _words(2 * i + 1, words)})
    messages.append({"role": "user", "content": "and now?"})
    return {"model": MODEL, "messages": messages, "max_tokens": RESERVE}


MODEL = "gpt-4o"
WINDOW = 30_000
RESERVE = 1_000
FACTOR = 1.3


def _tokens(body: dict[str, Any]) -> int:
    return govern_request(body, api="openai", model=MODEL).report.tokens_before


def _nginx_config(tmp: Path, balancer: int, replicas: list[int]) -> Path:
    """deploy/nginx.conf with the replicas' addresses, the port and the logs swapped for
    the test's, and the temporary files under ``tmp`` (Debian's defaults are /var/lib/nginx)."""
    text = (DEPLOY / "nginx.conf").read_text()
    swaps = {
        "server proxy-1:8787": f"server 127.0.0.1:{replicas[0]}",
        "server proxy-2:8787": f"server 127.0.0.1:{replicas[1]}",
        "listen 8080;": f"listen 127.0.0.1:{balancer};",
        "access_log /dev/stdout replicas;": f"access_log {tmp}/access.log replicas;",
        "error_log /dev/stderr warn;": f"error_log {tmp}/error.log warn;",
        "http {": "http {\n" + "".join(
            f"    {kind}_temp_path {tmp}/{kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        ),
    }  # fmt: skip
    for old, new in swaps.items():
        assert text.count(old) == 1, f"deploy/nginx.conf no longer has {old!r} once"
        text = text.replace(old, new)
    path = tmp / "nginx.conf"
    path.write_text(text)
    return path


@pytest.fixture
def nginx_bin() -> str:
    if NGINX is None:
        reason = (
            "nginx is not installed: `apt-get install -y nginx` (make test does it when apt "
            "is available)"
        )
        if os.environ.get("CG_ALLOW_NO_NGINX") == "1":
            pytest.skip(reason)
        pytest.fail(reason)
    return NGINX


@pytest.fixture
def upstream_fake() -> Iterator[Recording]:
    fake = Recording(limit=1_000_000, style="openai", factor=FACTOR, max_output=RESERVE).start()
    yield fake
    fake.stop()


def test_two_replicas_behind_nginx_govern_alike_and_a_restart_keeps_what_was_learned(
    tmp_path: Path, redis_url: str, nginx_bin: str, upstream_fake: Recording
) -> None:
    """compose.yaml's topology, its processes started directly. The fake upstream counts
    1.3x what the proxy counts; once a replica learned that from an answer's usage, a
    conversation that fits the window by our count no longer fits it by the upstream's,
    and is compacted: by both replicas alike (the store is shared), though not by a
    proxy without the store."""
    small, medium, large = _chat(1, 80), _chat(1, 300), _chat(10, 290)
    # what each conversation is for: too small to teach a ratio (MIN_SAMPLE), a sample,
    # and one that fits 30k by our count but not by the upstream's
    budget = WINDOW - RESERVE - 1024
    assert _tokens(small) < 1_000 < _tokens(medium) < 0.3 * budget
    assert budget / FACTOR < _tokens(large) < 0.9 * budget

    def replica(port: int = 0) -> Proxy:
        args = [sys.executable, "-m", "context_governor", "proxy", "--config", str(CONFIG),
                "--host", "127.0.0.1", "--port", str(port), "--count-store", redis_url,
                "--upstream", upstream_fake.base_url, "--context-window", str(WINDOW)]  # fmt: skip
        return Proxy(args, tmp_path, _env())

    started: list[Proxy] = []
    nginx: subprocess.Popen[bytes] | None = None
    try:
        started += [replica(), replica()]
        a, b = started
        assert all("learned: shared through the count store" in "".join(p.banner) for p in started)
        balancer = _free_port()
        conf = _nginx_config(tmp_path, balancer, [a.port, b.port])
        nginx = subprocess.Popen(
            [nginx_bin, "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(conf),
             "-g", f"daemon off; pid {tmp_path}/nginx.pid;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        front = f"http://127.0.0.1:{balancer}"
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(front + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert nginx.poll() is None, (tmp_path / "error.log").read_text()
            assert time.monotonic() < deadline, "nginx did not come up"
            time.sleep(0.05)

        def through(body: dict[str, Any], url: str = front) -> httpx.Response:
            response = httpx.post(url + "/v1/chat/completions", json=body, timeout=60)
            assert response.status_code == 200, response.text
            return response

        def served_by() -> list[int]:
            log = (tmp_path / "access.log").read_text().splitlines()
            return [
                int(m.group(1)) for m in re.finditer(r"upstream=127\.0\.0\.1:(\d+)", "\n".join(log))
            ]

        # 1. the first requests, nothing learned: round-robin, byte-identical bodies
        before = len(served_by())
        for _ in range(4):
            through(small)
        assert sorted(set(served_by()[before:])) == sorted({a.port, b.port})
        assert len(set(upstream_fake.bodies)) == 1 and len(upstream_fake.bodies) == 4

        # 2. replica a learns the ratio from an answer's usage; b reads it from Redis
        said = through(medium, a.url).headers
        assert "x-context-governor-upstream-ratio" not in said  # learned from this answer
        governed = [through(large, a.url)]
        ratio = governed[0].headers["x-context-governor-upstream-ratio"]
        assert float(ratio) >= FACTOR
        deadline = time.monotonic() + 10  # b reads the store again every REFRESH_SECONDS
        while True:
            last = through(large, b.url)
            if last.headers.get("x-context-governor-upstream-ratio") == ratio:
                break
            assert time.monotonic() < deadline, last.headers
            time.sleep(0.5)
        governed.append(last)
        # 3. now through the balancer, either replica: the same compacted body
        upstream_fake.bodies.clear()
        before = len(served_by())
        for _ in range(4):
            governed.append(through(large))
        assert sorted(set(served_by()[before:])) == sorted({a.port, b.port})
        assert len(set(upstream_fake.bodies)) == 1, "the replicas governed differently"
        compacted = json.loads(upstream_fake.bodies[0])
        assert len(compacted["messages"]) < len(large["messages"])
        ratios = [r.headers["x-context-governor-upstream-ratio"] for r in governed]
        assert set(ratios) == {ratio}, ratios  # the one that learned it too (_learning.py)
        windows = {r.headers["x-context-governor-window-governed"] for r in governed}
        assert len(windows) == 1 and int(windows.pop()) < WINDOW / FACTOR + 1
        shared = upstream_fake.bodies[0]

        # 4. why the store must be shared: a proxy without it forwards the body uncut
        alone = Proxy(
            [sys.executable, "-m", "context_governor", "proxy", "--config", str(CONFIG),
             "--host", "127.0.0.1", "--port", "0", "--count-store", "memory://",
             "--upstream", upstream_fake.base_url, "--context-window", str(WINDOW)],
            tmp_path, _env(),
        )  # fmt: skip
        started.append(alone)
        upstream_fake.bodies.clear()
        lone = through(large, alone.url)
        assert "x-context-governor-upstream-ratio" not in lone.headers
        assert json.loads(upstream_fake.bodies[0])["messages"] == large["messages"]
        alone.stop()

        # 5. a rollout restarts b: meanwhile the balancer sends everything to a; the new
        # b reads the ratio back from Redis before its first request is governed
        b.stop()
        upstream_fake.bodies.clear()
        through(large)
        through(large)
        restarted = replica(b.port)
        started.append(restarted)
        first = through(large, restarted.url)
        assert first.headers["x-context-governor-upstream-ratio"] == ratio
        assert set(upstream_fake.bodies) == {shared}
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(10)
        for proxy in started:
            proxy.stop()


# ----------------------------------------------------------------------------- the files


def test_the_example_config_loads_with_the_real_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """deploy/proxy.toml through the proxy command up to serving: each setting reaches
    the config, with the image's arguments (and compose's store) and an empty Secret."""
    seen: list[Any] = []
    monkeypatch.setattr(proxy_cli, "_serve", lambda uvicorn, config, *rest: seen.append(config))
    empty = dict.fromkeys(SECRETS, "")  # a Secret's empty values: unset
    args = [*COMMAND[1:], "--port", "0"]
    args[args.index("--config") + 1] = str(CONFIG)
    for extra in ([], ["--count-store", "redis://redis:6379/0"]):
        seen.clear()
        result = CliRunner().invoke(main, args + extra, env=empty, catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        (got,) = seen
        assert got.api_key is None and not got.access.client_keys and got.page.token is None
        assert dict(got.upstreams) == {
            "openai": "https://api.openai.com",
            "anthropic": "https://api.anthropic.com",
            "gemini": "https://generativelanguage.googleapis.com",
        }
        assert got.counting.store == (extra[1] if extra else "sqlite:///counts.db")
        assert got.counting.retention == 604_800
    # the keys from the environment, as the Secret gives them
    seen.clear()
    keys = {"CONTEXT_GOVERNOR_CLIENT_KEYS": "alice:alice-key-0123456789 bob:bob-key-0123456789",
            "CONTEXT_GOVERNOR_UPSTREAM_KEY": "sk-owner"}  # fmt: skip
    result = CliRunner().invoke(main, args, env=keys, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert seen[0].api_key == "sk-owner" and set(seen[0].access.client_keys) == {"alice", "bob"}


def _compose() -> dict[str, Any]:
    (document,) = yaml_documents(DEPLOY / "compose.yaml")
    return document


def test_compose_runs_the_image_twice_with_redis_behind_nginx() -> None:
    services = _compose()["services"]
    replicas = {k: v for k, v in services.items() if k.startswith("proxy")}
    assert sorted(replicas) == ["proxy-1", "proxy-2"]
    port = config()["proxy"]["port"]
    for service in replicas.values():
        assert service["image"] == IMAGE and service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert service["command"] == [*COMMAND[2:], "--count-store", "redis://redis:6379/0"]
        assert "./proxy.toml:/etc/context-governor/proxy.toml:ro" in service["volumes"]
        assert set(service["environment"]) == set(SECRETS)
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"
    assert services["redis"]["image"].startswith("redis:")
    balancer = services["balancer"]
    assert balancer["image"].startswith("nginx:")
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in balancer["volumes"]
    assert balancer["ports"] == [f"127.0.0.1:{port}:8080"]
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert {f"server {name}:{port}" for name in replicas} <= set(
        re.findall(r"server \S+:\d+", nginx)
    )
    assert "listen 8080;" in nginx and "proxy_buffering off;" in nginx


def test_kubernetes_runs_two_replicas_probed_on_healthz_with_the_same_config() -> None:
    documents = {
        (d["kind"], d["metadata"]["name"]): d for d in yaml_documents(DEPLOY / "kubernetes.yaml")
    }
    port = config()["proxy"]["port"]
    configmap = documents["ConfigMap", "context-governor-proxy"]
    assert configmap["data"]["proxy.toml"] == CONFIG.read_text()
    secret = documents["Secret", "context-governor-proxy-secrets"]
    assert set(secret["stringData"]) == set(SECRETS)
    assert all(value == "" for value in secret["stringData"].values())  # unset until filled
    deployment = documents["Deployment", "context-governor-proxy"]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert str(pod["securityContext"]["runAsUser"]) == step("USER")[0].partition(":")[0]
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["args"] == [
        *COMMAND[2:],
        "--count-store",
        "redis://context-governor-redis:6379/0",
    ]
    assert container["envFrom"] == [{"secretRef": {"name": secret["metadata"]["name"]}}]
    assert container["ports"] == [{"name": "http", "containerPort": port}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts["/etc/context-governor"] == "config"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == configmap["metadata"]["name"]
    service = documents["Service", "context-governor-proxy"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    redis = documents["Deployment", "context-governor-redis"]
    assert redis["spec"]["template"]["spec"]["containers"][0]["image"].startswith("redis:")
    assert documents["Service", "context-governor-redis"]["spec"]["ports"][0]["port"] == 6379


def _unit() -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in (DEPLOY / "context-governor-proxy.service").read_text().splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            values.setdefault(key, []).append(value)
    return values


def test_the_systemd_unit_runs_the_images_command_with_a_state_directory(tmp_path: Path) -> None:
    unit = _unit()
    (exec_start,) = unit["ExecStart"]
    argv = shlex.split(exec_start)
    assert Path(argv[0]).is_absolute() and Path(argv[0]).name == COMMAND[0]
    assert argv[1:] == COMMAND[1:]
    assert unit["DynamicUser"] == ["yes"] and unit["StateDirectory"] == ["context-governor"]
    # the working directory is the state directory: the config's sqlite:///counts.db
    assert unit["WorkingDirectory"] == ["/var/lib/context-governor"]
    assert unit["Restart"] == ["on-failure"] and unit["RestartPreventExitStatus"] == ["2"]
    assert unit["EnvironmentFile"] == ["-/etc/context-governor/secrets.env"]
    analyze = shutil.which("systemd-analyze")
    if analyze is None:  # the rest needs systemd's own reader of unit files
        return
    copy = tmp_path / "context-governor-proxy.service"
    copy.write_text(
        (DEPLOY / "context-governor-proxy.service").read_text().replace(argv[0], sys.executable, 1)
    )
    checked = subprocess.run(
        [analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr
