"""Media and reasoning in whole requests: counted as their provider bills them, old media
masked before turns are cut.

The unit rules (each provider's image, document and audio formula) are tested in
tests/test_media_counting.py; here they meet the pipeline: every wire format, the
Governor, the report, the compaction, offload_dir.
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path
from typing import Any

import images
import pytest

from context_governor import Governor, govern, govern_request

W, H = 1280, 800
#: What each provider documents for a 1280x800 image (independent of our code):
#: Anthropic ceil(w/28) x ceil(h/28) visual tokens (it fits 1568 px and 1568 tokens);
#: OpenAI gpt-4o high detail: 1280x800 -> shortest side 768 -> 1229x768 -> 3x2 tiles of
#: 512: 85 + 170 x 6; Gemini 2.x: larger than 384 px, so tiled (each tile 258).
DOCUMENTED = {
    "anthropic": math.ceil(W / 28) * math.ceil(H / 28),
    "openai": 85 + 170 * 6,
}


def png(width: int = W, height: int = H, noise: int = 750_000) -> bytes:
    """A PNG with a real header of ``width`` x ``height`` and ``noise`` bytes of data: its
    size as a real screenshot's, its pixels irrelevant (only the header is read)."""
    return images.png(width, height, os.urandom(noise))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _anthropic(image: bool) -> dict[str, Any]:
    first: list[dict[str, Any]] = [{"type": "text", "text": "what is in this screenshot?"}]
    if image:
        first.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(png())}})
    return {"model": "claude-sonnet-4-5", "max_tokens": 4000, "messages": [
        {"role": "user", "content": first},
        {"role": "assistant", "content": "A login form."},
        {"role": "user", "content": "thanks, now fix it"},
    ]}  # fmt: skip


def _chat(image: bool) -> dict[str, Any]:
    first: list[dict[str, Any]] = [{"type": "text", "text": "what is in this screenshot?"}]
    if image:
        url = "data:image/png;base64," + _b64(png())
        first.append({"type": "image_url", "image_url": {"url": url, "detail": "high"}})
    return {"model": "gpt-4o", "messages": [
        {"role": "user", "content": first},
        {"role": "assistant", "content": "A login form."},
        {"role": "user", "content": "thanks, now fix it"},
    ]}  # fmt: skip


def _responses(image: bool) -> dict[str, Any]:
    first: list[dict[str, Any]] = [{"type": "input_text", "text": "what is in this screenshot?"}]
    if image:
        url = "data:image/png;base64," + _b64(png())
        first.append({"type": "input_image", "image_url": url, "detail": "high"})
    return {"model": "gpt-4o", "input": [
        {"role": "user", "content": first},
        {"role": "assistant", "content": [{"type": "output_text", "text": "A login form."}]},
        {"role": "user", "content": "thanks, now fix it"},
    ]}  # fmt: skip


BODIES = {"anthropic": _anthropic, "openai": _chat, "responses": _responses}


@pytest.mark.parametrize("api", list(BODIES))
def test_a_pasted_screenshot_costs_what_its_provider_documents(api: str) -> None:
    """The issue's repro: a ~1 MB PNG was 931,825 tokens (Anthropic) or 682,498 (OpenAI),
    and at 128k the whole conversation was dropped. Now it is within 10% of the
    documented figure and nothing is cut."""
    with_image = govern_request(BODIES[api](True), api=api, context_window=128_000)  # type: ignore[arg-type]
    without = govern_request(BODIES[api](False), api=api, context_window=128_000)  # type: ignore[arg-type]
    cost = with_image.report.tokens_before - without.report.tokens_before
    documented = DOCUMENTED["anthropic" if api == "anthropic" else "openai"]
    assert abs(cost - documented) <= documented * 0.10, (cost, documented)
    assert with_image.report.ok and with_image.report.messages_after == with_image.report.messages_before


def test_a_gemini_inline_image_is_counted_by_tiles_not_base64() -> None:
    body = {"contents": [{"role": "user", "parts": [
        {"text": "what is in this screenshot?"},
        {"inline_data": {"mime_type": "image/png", "data": _b64(png())}},
    ]}]}  # fmt: skip
    plain = {"contents": [{"role": "user", "parts": [{"text": "what is in this screenshot?"}]}]}
    kwargs: dict[str, Any] = {"api": "gemini", "model": "gemini-2.5-pro", "context_window": 128_000}
    cost = govern_request(body, **kwargs).report.tokens_before - govern_request(plain, **kwargs).report.tokens_before
    # Gemini's tiling: tiles of the short side / 1.5 (533 px): 3 x 2 tiles of 258 tokens
    documented = math.ceil(W / (H / 1.5)) * math.ceil(H / (H / 1.5)) * 258
    assert abs(cost - documented) <= documented * 0.10, (cost, documented)


def test_a_url_image_gets_the_documented_upper_bound_and_the_report_says_so() -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "and this one?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/shot.png"}},
    ]}]}  # fmt: skip
    result = govern_request(body, api="openai", context_window=128_000)
    assert any("upper bound" in note and "url image" in note for note in result.report.notes)
    assert result.report.tokens_before > 765  # at least a 1024x1024 high-detail image


def _browser(steps: int, noise: int = 150_000) -> list[dict[str, Any]]:
    """A browser agent: a tool call per step, then the page's screenshot from the user."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You drive a web browser."},
        {"role": "user", "content": "Book a table for two at eight."},
    ]
    for s in range(steps):
        call = {"id": f"call_{s}", "type": "function", "function": {"name": "click", "arguments": json.dumps({"x": s})}}
        url = "data:image/png;base64," + _b64(png(noise=noise))
        messages += [
            {"role": "assistant", "content": f"Step {s}.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{s}", "content": f"clicked at {s}"},
            {"role": "user", "content": [{"type": "text", "text": f"screenshot after step {s}"},
                                         {"type": "image_url", "image_url": {"url": url}}]},
        ]  # fmt: skip
    return messages


def _images(messages: list[dict[str, Any]]) -> list[int]:
    return [
        i for i, m in enumerate(messages)
        if isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
    ]  # fmt: skip


def test_a_browser_agent_s_old_screenshots_are_masked_before_any_turn_is_cut() -> None:
    """A screenshot per step at 32k: every request fits, the agent's whole trail (its
    text, its calls, the results) is kept, the newest screenshot stays, older ones
    become placeholders that say what they were."""
    history = _browser(40)
    gov = Governor(model="gpt-4o", context_window=32_000)
    for end in range(5, len(history) + 1, 3):
        result = gov.govern(history[:end])
        assert result.report.within_budget and result.report.ok, (end, result.report.notes)
        if history[end - 1].get("role") == "user" and end > 2:
            assert _images(result.messages)[-1] == len(result.messages) - 1  # the newest whole
    final = govern(history, model="gpt-4o", context_window=32_000)
    assert final.messages == result.messages or end != len(history)
    assert not any(a.stage == "compact" and a.kind == "drop" for a in final.report.actions)
    masked = [m for m in final.messages if m.get("role") == "user" and isinstance(m.get("content"), list)
              and not any(p.get("type") == "image_url" for p in m["content"])]  # fmt: skip
    assert masked, "older screenshots should have been masked"
    text = masked[0]["content"][-1]["text"]
    assert "image/png 1280x800" in text and "removed to fit the context window" in text
    assert masked[0]["content"][0]["text"].startswith("screenshot after step")  # text kept
    assert len(_images(final.messages)) >= 1


def test_a_masked_screenshot_can_be_brought_back_from_offload_dir(tmp_path: Path) -> None:
    from context_governor import CompactionPolicy

    history = _browser(30, noise=60_000)
    policy = CompactionPolicy(offload_dir=tmp_path / "offload")
    result = govern(history, model="gpt-4o", context_window=16_000, compaction=policy)
    texts = [
        p["text"] for m in result.messages if m.get("role") == "user" and isinstance(m.get("content"), list)
        for p in m["content"] if p.get("type") == "text" and "stored at" in p["text"]
    ]  # fmt: skip
    assert texts, result.report
    path = Path(texts[0].split("stored at ", 1)[1].rstrip("]"))
    data = path.read_bytes()
    originals = {
        base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
        for m in history if isinstance(m.get("content"), list)
        for p in m["content"] if p.get("type") == "image_url"
    }  # fmt: skip
    assert data in originals and path.suffix == ".png"


def test_earlier_turns_thinking_is_not_counted_on_a_model_that_strips_it() -> None:
    """Sonnet 4.5 strips earlier turns' thinking from its context (Anthropic's
    context-windows page); Opus 4.5 keeps it and bills it as input."""
    signature = "E" + "x" * 4_000  # a signed thinking block's ciphertext
    body = {"max_tokens": 4000, "messages": [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "let me think " * 200, "signature": signature},
            {"type": "text", "text": "first answer"}]},
        {"role": "user", "content": "second question"},
    ]}  # fmt: skip
    strips = govern_request({**body, "model": "claude-sonnet-4-5"}, api="anthropic", context_window=200_000)
    keeps = govern_request({**body, "model": "claude-opus-4-5"}, api="anthropic", context_window=200_000)
    assert strips.report.tokens_before < 60 < 500 < keeps.report.tokens_before
    assert strips.body["messages"][1] == body["messages"][1]  # counted less, sent as it was


def test_reasoning_before_the_newest_user_message_is_not_counted() -> None:
    """OpenAI's reasoning guide: earlier turns' reasoning items are ignored and removed;
    those after the newest user message (the tool loop in progress) are read."""
    sealed = "gAAAAA" + "Q" * 20_000

    def body(live: bool) -> dict[str, Any]:
        items: list[dict[str, Any]] = [{"role": "user", "content": "fix the bug"}]
        if not live:
            items += [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": sealed},
                      {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
                      {"role": "user", "content": "now the tests"}]  # fmt: skip
        else:
            items += [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": sealed},
                      {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "c1", "output": "ok"}]  # fmt: skip
        return {"model": "gpt-5", "input": items}

    earlier = govern_request(body(False), api="responses", context_window=200_000).report.tokens_before
    live = govern_request(body(True), api="responses", context_window=200_000).report.tokens_before
    assert earlier < 100
    # the reasoning it carries: ~1,000 characters of envelope, then 5.8 a token
    assert abs(live - (len(sealed) - 1_000) / 5.8) < 100


def test_a_masked_image_s_placeholder_stays_within_the_tool_result_cap() -> None:
    """A tool result near ``max_tool_result_chars`` whose image is masked at a compaction
    (a screenshot read: its text under ``min_chars``): its placeholder's text is cut to the
    cap there, so governing the output again cuts nothing (it used to: the cap ran before
    the compaction added the placeholder)."""
    cap = 600
    history: list[dict[str, Any]] = [{"role": "user", "content": "click through the app"}]
    for step in range(12):
        call = {"id": f"c{step}", "type": "function",
                "function": {"name": "screenshot", "arguments": "{}"}}  # fmt: skip
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        url = "data:image/png;base64," + _b64(png(noise=20_000))
        history.append({"role": "tool", "tool_call_id": f"c{step}", "content": [
            {"type": "text", "text": f"page {step}: " + "ok " * 162},
            {"type": "image_url", "image_url": {"url": url}},
        ]})  # fmt: skip
        history.append({"role": "assistant", "content": f"Looked at page {step}."})
        history.append({"role": "user", "content": "next"})
    kwargs: dict[str, Any] = {"model": "gpt-4o", "context_window": 12_000, "max_tool_result_chars": cap}
    result = govern(history, **kwargs)
    assert any("older media part" in a.detail for a in result.report.actions)  # masked
    for m in result.messages:
        if m.get("role") == "tool" and isinstance(m.get("content"), list):
            assert sum(len(p.get("text", "")) for p in m["content"]) <= cap
    again = govern(result.messages, **kwargs)
    assert again.messages == result.messages
    assert not [a for a in again.report.actions if a.stage == "cap"]
