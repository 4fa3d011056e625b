"""The real Claude Code reads 40 screenshots through ``context-governor proxy`` at 48k.

Claude Code (the pinned npm release, ``make agent-clis``) is asked to look at 40 real
PNG screenshots of 1280x800 (made at test time, ~180 KB each), one Read call each: its
Read tool answers with an ``image`` block (base64) inside the tool_result. It runs
through a real ``context-governor proxy --profile anthropic --context-window 48000``
in front of tests/cli_upstream.py's ``ScreenshotUpstream``, which asks for the next
screenshot after the highest one the request shows read and answers a final text after
the 40th.

The session outgrows the window: 40 images of 1,334 visual tokens are ~53k tokens
before Claude Code's own prompt. Counted as their base64 text, as the proxy used to,
they made it believe the request was 130x over the window, change nothing, and send
half of the requests over it. The test asserts that:

* Claude Code finishes (exit 0, the final text in its output) and nothing but
  localhost was called;
* every request is valid (``validate_request``, and thinking blocks returned as issued);
* no request is over 48,000 tokens by the upstream's **independent** count: text as in
  tests/test_agent_clis.py, each image by Anthropic's documented rule read from its
  own header (``imagesize``; ``cli_upstream.claude_image_tokens``), cross-checked
  against the library's ``media_count`` on every distinct image;
* the newest screenshot is in every request after it was read, its image whole (byte
  for byte as Claude Code first sent it).

It prints the figures (requests, the largest prompt against the window, how many older
screenshots the last request held masked or cut) and names the offending request with
the proxy's own lines when it fails. The session runs once (a module fixture) for the
tests that read it, at CG_TEST_LEVEL=full only (make test-full, CI): ~15 s. The
harness's own checks (the PNGs, the image rule, the upstream's count) run at every level.

``test_older_screenshots_are_masked_before_turns_are_cut``: under ``mask_first`` the 40
calls with their screenshots masked fit the window, so no turn is cut: older screenshots
become placeholders that say what they were (an image-only tool result is masked,
however short its text: stages/_media_mask.py).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_clis import CLIS, Cli, OutsideCalls, ProxyProcess, run_cli
from cli_upstream import (
    SCREENSHOT_FINAL_TEXT,
    SCREENSHOT_PROMPT,
    SCREENSHOT_SIZE,
    SCREENSHOTS,
    ScreenshotUpstream,
    Shot,
    claude_image_tokens,
    image_size,
    make_screenshots,
    screenshot_png,
)
from levels import FULL

from context_governor.counting._media import media_count

WINDOW = 48_000
full_only = pytest.mark.skipif(
    not FULL, reason="the real agent CLIs run at CG_TEST_LEVEL=full (make test-full, CI)"
)


def _claude_prepare(home: Path, ws: Path, root: str, model: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    """Claude Code as tests/agent_clis.py runs it, with turns for 40 reads and the answer."""
    argv, env = CLIS["claude"].prepare(home, ws, root, model, prompt)
    argv[argv.index("--max-turns") + 1] = str(SCREENSHOTS + 10)
    return argv, env


CLAUDE: Cli = dataclasses.replace(CLIS["claude"], prepare=_claude_prepare)


# ---------------------------------------------------------------------- the harness itself
# (every level: a harness that stopped checking would pass the CLI test for nothing)


def test_the_screenshots_are_distinct_real_pngs_of_a_realistic_size(tmp_path: Path) -> None:
    paths = make_screenshots(tmp_path, count=3)
    payloads = [path.read_bytes() for path in paths]
    assert len(set(payloads)) == 3
    for data in payloads:
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert 100_000 < len(data) < 300_000, len(data)
        block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": base64.b64encode(data).decode()}}  # fmt: skip
        assert image_size(block) == SCREENSHOT_SIZE


@pytest.mark.parametrize(
    ("size", "model", "tokens"),
    [
        ((1280, 800), "claude-opus-5-5", 46 * 29),  # inside both tiers: not resized
        ((1280, 800), "claude-3-5-sonnet-20241022", 46 * 29),
        ((200, 200), "claude-sonnet-4-5", 64),  # the page's own example
        ((1920, 1080), "claude-sonnet-4-5", 1560),  # standard tier: 1456x819
        ((1920, 1080), "claude-opus-4-7", 69 * 39),  # high tier: not resized (2,691)
        ((8000, 8000), "claude-sonnet-4-5", 1521),  # 1092x1092 at most 1,568 tokens
    ],
)
def test_the_independent_image_rule(size: tuple[int, int], model: str, tokens: int) -> None:
    assert claude_image_tokens(*size, model) == tokens


def test_the_screenshot_upstream_counts_images_by_their_rule_not_their_base64(tmp_path: Path) -> None:
    make_screenshots(tmp_path, count=2)
    upstream = ScreenshotUpstream(48_000, tmp_path, screenshots=2)
    data = base64.b64encode(screenshot_png(1)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": str(tmp_path / "s01.png")}}
    body = {"model": "claude-opus-5-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Look."},
        {"role": "assistant", "content": [read]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [image]}]},
    ]}  # fmt: skip
    tokens = upstream.count("anthropic", body)
    assert 46 * 29 < tokens < 46 * 29 + 40  # the image and a few words, not ~200k of base64
    assert upstream.answered(body) == {1: [image]}
    what, (name, args) = upstream.step("anthropic", {**body, "tools": [
        {"name": "Read", "input_schema": {"properties": {"file_path": {}}}}]}, [])  # fmt: skip
    assert (what, name, Path(args["file_path"]).name) == ("call", "Read", "s02.png")


# ---------------------------------------------------------------------- the session


@dataclasses.dataclass
class Session:
    upstream: ScreenshotUpstream
    proxy: ProxyProcess
    done: subprocess.CompletedProcess[str]
    outside: list[str]
    workspace: Path
    seconds: float

    def story(self, limit: int = 80) -> str:
        """Every request as the upstream judged it, and the proxy's own lines."""
        upstream = self.upstream
        shots = {shot.request: shot for shot in upstream.shots}
        lines = []
        for i, seen in enumerate(upstream.log):
            shot = shots.get(i)
            held = (
                f" newest=s{shot.newest:02d}{'' if shot.newest_whole else ' NOT WHOLE'}"
                f" images={shot.images} ({shot.image_tokens} tok) text={shot.text_tokens}"
                f" masked={len(shot.masked)} cut={len(shot.cut)}"
                if shot else ""
            )  # fmt: skip
            problems = " INVALID: " + "; ".join(seen.problems)[:300] if seen.problems else ""
            lines.append(
                f"  #{i} {seen.method} {seen.path} prompt={seen.prompt_tokens} reserve={seen.reserve}"
                f"{' OVER' if seen.over else ''}{held}{problems}"
            )
        said = self.proxy.request_lines() or self.proxy.lines
        return (
            f"window {upstream.window} (independent count: tests/cli_upstream.py)\n"
            + "upstream saw:\n" + "\n".join(lines[-limit:])
            + "\nproxy said:\n" + "\n".join("  " + line[:600] for line in said[-limit:])
        )

    def figures(self) -> str:
        upstream = self.upstream
        governed = upstream.governed_requests
        prompt = max((s.prompt_tokens for s in governed), default=0)
        total = max(governed, key=lambda s: s.prompt_tokens + s.reserve, default=None)
        last = upstream.shots[-1] if upstream.shots else None
        sizes = sorted({size for size in upstream.image_sizes() if size})
        as_files = sum(
            1 for n, data in upstream.first_sent.items()
            if data == base64.b64encode((self.workspace / f"s{n:02d}.png").read_bytes()).decode()
        )  # fmt: skip
        return (
            f"{len(governed)} requests ({len(upstream.log)} in all) in {self.seconds:.0f} s; "
            f"max prompt {prompt:,} tokens of the {upstream.window:,} window (max prompt + "
            f"reserve: {total.prompt_tokens:,} + {total.reserve:,}); " if total else "no request; "
        ) + (
            f"images sent {sizes}, {as_files} of {len(upstream.first_sent)} byte for byte "
            "as the files; "
            + (
                f"last request: newest s{last.newest:02d}, {last.images} screenshots whole, "
                f"{len(last.masked)} older ones masked, {len(last.cut)} cut with their turns"
                if last else ""
            )
        )  # fmt: skip


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """One run of Claude Code over the 40 screenshots; every test below reads it."""
    tmp_path = tmp_path_factory.mktemp("screenshots")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    make_screenshots(workspace)
    outside = OutsideCalls()
    upstream = ScreenshotUpstream(WINDOW, workspace)
    upstream.start()
    proxy = ProxyProcess(upstream.root_url + CLAUDE.upstream_suffix, *CLAUDE.proxy_flags,
                         "--context-window", str(WINDOW))  # fmt: skip
    started = time.monotonic()
    try:
        done = run_cli(CLAUDE, home=tmp_path / "home", workspace=workspace, root=proxy.root,
                       model=CLAUDE.model, prompt=SCREENSHOT_PROMPT, outside=outside, timeout=300)  # fmt: skip
    finally:
        proxy.stop()
        upstream.stop()
        outside.stop()
    run = Session(upstream, proxy, done, outside.attempts, workspace, time.monotonic() - started)
    print(f"\nscreenshot session: {run.figures()}")
    if os.environ.get("CG_CLI_DUMP"):  # every request body as the upstream got it, to debug
        dump = Path(os.environ["CG_CLI_DUMP"]) / "claude-screenshots.jsonl"
        dump.parent.mkdir(parents=True, exist_ok=True)
        dump.write_text("".join(json.dumps({"api": api, "body": body}) + "\n" for api, body in upstream.bodies))
        (dump.parent / "claude-screenshots-proxy.log").write_text("\n".join(proxy.lines) + "\n")
    yield run


@full_only
def test_claude_code_reads_40_screenshots_inside_a_48k_window(session: Session) -> None:
    upstream, figures, story = session.upstream, session.figures(), session.story()
    assert session.outside == [], f"Claude Code tried to reach beyond localhost: {session.outside}"
    assert not upstream.invalid, f"{len(upstream.invalid)} invalid requests; {figures}\n{story}"
    over = upstream.over_window
    assert not over, (
        f"{len(over)} of {len(upstream.governed_requests)} requests over the {WINDOW:,} window "
        f"(first: #{upstream.log.index(over[0])}, {over[0].prompt_tokens:,} + {over[0].reserve:,}); "
        f"{figures}\n{story}"
    )
    broken = [shot for shot in upstream.shots if not shot.newest_whole]
    assert not broken, (
        f"the newest screenshot is not whole in {len(broken)} requests "
        f"(first: #{broken[0].request}, s{broken[0].newest:02d}); {figures}\n{story}"
    )
    done = session.done
    assert done.returncode == 0, f"claude exited {done.returncode}\n{done.stderr[-1200:]}\n{figures}\n{story}"
    assert SCREENSHOT_FINAL_TEXT in done.stdout, f"claude did not finish: {done.stdout[-1200:]}\n{story}"
    assert upstream.finished()
    assert sorted(upstream.first_sent) == list(range(1, SCREENSHOTS + 1)), f"{figures}\n{story}"
    assert len(upstream.governed_requests) >= SCREENSHOTS + 1, story  # 40 reads and the answer
    # The session outgrew the window (40 x 1,334 image tokens alone), so room was made.
    last: Shot = upstream.shots[-1]
    assert last.masked or last.cut, f"the last request holds every screenshot: {figures}\n{story}"


@full_only
def test_the_independent_image_count_agrees_with_the_library(session: Session) -> None:
    """Every image Claude Code sent: the test's rule and ``media_count`` give one figure."""
    disagree = []
    for n, data in sorted(session.upstream.first_sent.items()):
        block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
        size = image_size(block)
        assert size is not None, f"s{n:02d}: the image Claude Code sent has no readable size"
        ours = claude_image_tokens(*size, CLAUDE.model)
        theirs = media_count(block, "anthropic", CLAUDE.model)
        if theirs is None or ours != theirs.tokens:
            disagree.append(f"s{n:02d} {size}: test {ours}, library {theirs}")
    assert not disagree, "the library counts images differently: " + "; ".join(disagree)


@full_only
def test_older_screenshots_are_masked_before_turns_are_cut(session: Session) -> None:
    """mask_first: the whole trail masked fits the window (40 calls and placeholders are
    ~10k tokens beside Claude Code's ~16k prompt), so no screenshot's turn should be cut;
    older screenshots are masked instead."""
    shots = session.upstream.shots
    cut = [shot for shot in shots if shot.cut]
    assert not cut, (
        f"{len(cut)} requests cut screenshot turns (first: #{cut[0].request}, "
        f"{len(cut[0].cut)} cut, {len(cut[0].masked)} masked); {session.figures()}\n{session.story()}"
    )
    assert shots and shots[-1].masked, session.figures()
