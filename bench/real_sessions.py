"""Real sessions and media: our counts against the providers' own usage, and what a
screenshot costs to govern.

* **Counts against usage**: every request of the recorded real corpus
  (tests/data/real_sessions, public agent traffic with the upstream's usage recorded:
  images, Claude thinking and redacted thinking, OpenAI encrypted reasoning, Gemini
  thought signatures) governed at an unlimited window; ``tokens_before`` against the
  prompt tokens the provider billed for that request.
* **A screenshot as its provider bills it**: a 1280x800 PNG counted on each wire format,
  against the figure the provider's documentation gives for that size.
* **Time**: ``govern_request`` of a body with a 5 MB image against the same body
  without it (medians of the same run), and, as the baseline of before, tokenizing the
  image's base64 text once.

Run: ``python -m bench.real_sessions [--repeats N] [--out docs/benchmarks.md]``.
"""

from __future__ import annotations

import base64
import importlib
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_governor.counting import counting_encoding
from context_governor.formats import govern_request

from .section import section_main
from .shapes import png

HEADING = "## Real sessions and media"
ROOT = Path(__file__).resolve().parent.parent
W, H = 1280, 800
#: What each provider's documentation gives for a 1280x800 image (docs/token-counting.md)
DOCUMENTED = {
    "anthropic": math.ceil(W / 28) * math.ceil(H / 28),  # visual tokens of 28 px
    "openai": 85 + 170 * 6,  # gpt-4o high detail: 768 short side, 3 x 2 tiles of 512
    "responses": 85 + 170 * 6,
    "gemini": 6 * 258,  # tiles of the short side / 1.5: 3 x 2 of 258
}


def _bodies(image: str | None) -> dict[str, dict[str, Any]]:
    """The same short exchange on each wire format, with ``image`` (base64) or without."""
    question = "what is in this screenshot?"
    url = f"data:image/png;base64,{image}"
    an: list[dict[str, Any]] = [{"type": "text", "text": question}]
    chat: list[dict[str, Any]] = [{"type": "text", "text": question}]
    rs: list[dict[str, Any]] = [{"type": "input_text", "text": question}]
    gm: list[dict[str, Any]] = [{"text": question}]
    if image is not None:
        source = {"type": "base64", "media_type": "image/png", "data": image}
        an.append({"type": "image", "source": source})
        chat.append({"type": "image_url", "image_url": {"url": url, "detail": "high"}})
        rs.append({"type": "input_image", "image_url": url, "detail": "high"})
        gm.append({"inline_data": {"mime_type": "image/png", "data": image}})
    after = "thanks, now fix it"
    return {
        "anthropic": {"model": "claude-sonnet-4-5", "max_tokens": 4000, "messages": [
            {"role": "user", "content": an}, {"role": "assistant", "content": "A login form."},
            {"role": "user", "content": after}]},
        "openai": {"model": "gpt-4o", "messages": [
            {"role": "user", "content": chat}, {"role": "assistant", "content": "A login form."},
            {"role": "user", "content": after}]},
        "responses": {"model": "gpt-4o", "input": [
            {"role": "user", "content": rs},
            {"role": "assistant", "content": [{"type": "output_text", "text": "A login form."}]},
            {"role": "user", "content": after}]},
        "gemini": {"model": "gemini-2.5-pro", "contents": [
            {"role": "user", "parts": gm}, {"role": "model", "parts": [{"text": "A login form."}]},
            {"role": "user", "parts": [{"text": after}]}]},
    }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Usage:
    session: str
    step: int
    api: str
    ours: int
    upstream: int
    bounded: bool

    @property
    def ratio(self) -> float:
        return self.ours / self.upstream


def _corpus() -> Any:
    """The corpus reader of the tests (tests/real_sessions.py), by path: one converter."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        return importlib.import_module("real_sessions")
    finally:
        sys.path.pop(0)


def measure_usage() -> list[Usage]:
    corpus = _corpus()
    rows = []
    for session in corpus.load_corpus():
        for step in corpus.step_records(session):
            if not step.upstream_prompt_tokens or not step.complete:
                continue
            report = govern_request(
                step.body, api=step.api, model=step.model, context_window=1 << 40
            ).report
            bounded = any("upper bound" in note for note in report.notes)
            upstream = int(step.upstream_prompt_tokens)
            rows.append(
                Usage(session.name, step.index, step.api, report.tokens_before, upstream, bounded)
            )
    return rows


@dataclass(frozen=True, slots=True)
class Media:
    api: str
    counted: int
    documented: int
    with_ms: float
    without_ms: float


def _median_ms(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure_media(repeats: int) -> tuple[list[Media], float, int]:
    """Per API: the image's count and the median time with and without a 5 MB image;
    and, as before, the time to tokenize the image's base64 text once, and its tokens."""
    image = base64.b64encode(png(W, H, os.urandom(5_000_000))).decode()
    with_image, without = _bodies(image), _bodies(None)
    rows = []
    for api in with_image:

        def run(body: dict[str, Any], api: str = api) -> int:
            return govern_request(body, api=api, context_window=200_000).report.tokens_before  # type: ignore[arg-type]

        shown, plain = with_image[api], without[api]
        counted = run(shown) - run(plain)
        timed = _median_ms(lambda: run(shown), repeats)  # noqa: B023 (called right here)
        bare = _median_ms(lambda: run(plain), repeats)  # noqa: B023
        rows.append(Media(api, counted, DOCUMENTED[api], timed, bare))
    encoding = counting_encoding("o200k_base")
    assert encoding is not None
    started = time.perf_counter()
    as_text = len(encoding.encode(image[:1_000_000], disallowed_special=()))
    text_ms = (time.perf_counter() - started) * 1000 * len(image) / 1_000_000
    return rows, text_ms, as_text * len(image) // 1_000_000


def render(usage: Sequence[Usage], media: Sequence[Media], text_ms: float, text_tokens: int) -> str:
    lines = [
        HEADING,
        "",
        "Every request of the recorded real corpus (public agent traffic with the provider's "
        "usage: images, Claude thinking and redacted thinking, OpenAI encrypted reasoning, "
        "Gemini thought signatures), counted by us at an unlimited window, against the "
        "prompt tokens the provider billed. `bound`: an image given by URL, counted at its "
        "rule's upper bound (the report says so).",
        "",
        "| session | request | API | ours | provider | ours / provider |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for u in usage:
        mark = " (bound)" if u.bounded else ""
        lines.append(
            f"| {u.session} | {u.step} | {u.api} | {u.ours:,} | {u.upstream:,} | "
            f"{u.ratio:.2f}{mark} |"
        )
    exact = [u.ratio for u in usage if not u.bounded]
    lines += [
        "",
        f"Requests without a bound image: median ratio {statistics.median(exact):.2f}, "
        f"range {min(exact):.2f}-{max(exact):.2f} over {len(exact)} requests.",
        "",
        f"A 1280x800 PNG of 5 MB on each wire format: what it adds to the count against "
        f"the provider's documented figure, and the median time of `govern_request` with "
        f"and without it. Before, its base64 was counted as text: {text_tokens:,} tokens, "
        f"{text_ms:,.0f} ms to tokenize once.",
        "",
        "| API | counted | documented | with the image | without | added |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for m in media:
        lines.append(
            f"| {m.api} | {m.counted:,} | {m.documented:,} | {m.with_ms:.1f} ms | "
            f"{m.without_ms:.1f} ms | {m.with_ms - m.without_ms:+.1f} ms |"
        )
    return "\n".join(lines) + "\n"


def build(repeats: int) -> str:
    media, text_ms, text_tokens = measure_media(repeats)
    return render(measure_usage(), media, text_ms, text_tokens)


def main(argv: Sequence[str] | None = None) -> int:
    return section_main(__doc__, argv, {"repeats": 9}, lambda a: build(a.repeats))


if __name__ == "__main__":
    raise SystemExit(main())
