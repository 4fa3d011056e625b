"""pydantic-ai adapter: real agents (FunctionModel, and OpenAIChatModel over HTTP against the
fake upstream), the history processors, and the edge's round trip as a property."""

from __future__ import annotations

import asyncio
import copy
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from fake_upstream import FakeUpstream, Reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from pydantic_ai import Agent, AgentRunResultEvent, ModelRetry
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    CompactionPart,
    FilePart,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelSettingsDeltaPart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from context_governor import PROFILES, Report, validate
from context_governor.adapters import _pydantic_ai_edge as edge
from context_governor.adapters.pydantic_ai import (
    Governance,
    GovernHistory,
    Target,
    async_history_processor,
    history_processor,
)
from context_governor.counting import exact_counter

WINDOW = 12_000
DEFAULT_OUTPUT = 4_096  # govern()'s output reserve when the request sets none
DOC = Path(__file__).resolve().parent.parent / "docs" / "adapters-pydantic-ai.md"
IMAGE = ImageUrl(url="https://example.com/screenshot.png")


def _chat(messages: list[ModelMessage], info: AgentInfo | None = None) -> list[dict[str, Any]]:
    """What a Chat Completions provider would get: the instructions, then the history."""
    chats = [{k: v for k, v in m.items() if k != edge.CARRY} for m in edge.decode(messages)]
    if info is not None and info.instructions:
        chats.insert(0, {"role": "system", "content": info.instructions})
    return chats


def _tools(info: AgentInfo) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description or "", "parameters": t.parameters_json_schema}}
        for t in info.function_tools
    ]


class _Scripted:
    """A FunctionModel function: tool calls with thinking, one bad call (retried), then
    an answer; it asserts that every request it sees is valid and fits."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.seen: list[int] = []
        self.counter = exact_counter(None)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        chats = _chat(messages, info)
        assert validate(chats, provider="openai") == []
        extra = sum(
            self.counter.message_tokens({"role": "user", "content": edge.opaque_text(p)})
            for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ThinkingPart)
        )
        prompt = self.counter.prompt_tokens(chats, _tools(info)) + extra
        assert prompt + DEFAULT_OUTPUT <= WINDOW, prompt
        assert isinstance(messages[0], ModelRequest)  # the task is never cut
        self.seen.append(len(messages))
        n = len(self.seen)
        if n > self.steps:
            return ModelResponse(parts=[TextPart("The bug is in m3.")])
        path = "missing.py" if n == 2 else f"src/m{n}.py"
        return ModelResponse(
            parts=[
                ThinkingPart("I should read the next module. " * 10, signature="sig"),
                ToolCallPart("read_file", {"path": path}, tool_call_id=f"call_{n}"),
            ]
        )


def _agent(model: Any, capability: Any) -> Agent[None, str]:
    agent = Agent(model, instructions="You are a coding agent.", capabilities=[capability])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        if path == "missing.py":
            raise ModelRetry("no such file; read one under src/")
        return f"contents of {path}: " + "x = compute(y) " * 150

    return agent


def test_function_model_run_outgrows_the_window_and_gets_valid_requests_that_fit() -> None:
    steps = 16
    script = _Scripted(steps)
    reports: list[Report] = []
    gov = GovernHistory(context_window=WINDOW, on_report=reports.append)
    result = _agent(FunctionModel(script), gov).run_sync(["Fix the bug; see the screenshot.", IMAGE])

    assert result.output == "The bug is in m3."
    assert len(reports) == len(script.seen) == steps + 1
    history = result.all_messages()
    # Governed: the model saw fewer messages than the history held.
    assert max(script.seen) < len(history) - 1
    assert any(r.tokens_before > r.budget for r in reports if r.budget is not None)
    assert all(r.ok for r in reports)
    # The run's own history is whole: every call, every return, the retry and the thinking.
    returns = [p for m in history for p in m.parts if isinstance(p, ToolReturnPart)]
    assert len(returns) == steps and any(p.outcome == "retried" for p in returns)
    assert all("x = compute(y)" in p.model_response_str() for p in returns if p.outcome != "retried")
    thinking = [p for m in history for p in m.parts if isinstance(p, ThinkingPart)]
    assert len(thinking) == steps
    first = history[0]
    assert isinstance(first, ModelRequest) and first.parts[0].content == ["Fix the bug; see the screenshot.", IMAGE]


def test_kept_messages_are_the_frameworks_objects() -> None:
    """What governance leaves alone reaches the model as pydantic-ai's own objects: every
    model response (never rebuilt here) and the newest tool return; only the first request,
    which carries the note on the cut, and the requests whose old tool returns were
    cleared are new."""
    script = _Scripted(24)  # enough reads that a cut is needed with old results masked
    seen: list[list[ModelMessage]] = []

    def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        return script(messages, info)

    result = _agent(FunctionModel(spy), GovernHistory(context_window=WINDOW)).run_sync("Fix the bug")
    history = result.all_messages()
    own = {id(m) for m in history}
    # Request n (from 0) carries 2n + 1 messages of the history: fewer means it was cut.
    governed = [sent for n, sent in enumerate(seen) if len(sent) < 2 * n + 1]
    assert governed
    for sent in governed:
        assert id(sent[-1]) in own
        assert all(id(m) in own for m in sent if isinstance(m, ModelResponse))
        new = [m for m in sent if id(m) not in own]
        assert new[:1] == [sent[0]]
        # besides the first request (the note), only requests whose tool returns were
        # cleared (masked before the turn is cut) are rebuilt
        for message in new[1:]:
            assert isinstance(message, ModelRequest)
            assert all(
                isinstance(p, ToolReturnPart) and "was removed" in str(p.content)
                for p in message.parts
            )


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_stream_events"])
def test_over_http_with_the_openai_chat_model(upstream: FakeUpstream, streamed: bool) -> None:
    """pydantic-ai's own OpenAI client against the fake upstream, which rejects (400) any
    request that breaks a rule or does not fit: without governance the fifth would not."""
    upstream.context_window = 3_000
    for i in range(8):
        upstream.push(Reply.calls(("read_file", {"path": f"src/m{i}.py"})))
    upstream.push(Reply.text("The bug is in m3."))
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=upstream.base_url, api_key="test"))
    reports: list[Report] = []
    agent = Agent(
        model,
        instructions="You are a coding agent.",
        capabilities=[GovernHistory(context_window=3_000, on_report=reports.append)],
        model_settings={"max_tokens": 300},
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return f"contents of {path}: " + "x = compute(y) " * 120

    if streamed:

        async def stream() -> Any:
            async with agent.run_stream_events("Fix the bug") as events:
                async for event in events:
                    if isinstance(event, AgentRunResultEvent):
                        return event.result
            raise AssertionError("the run did not finish")

        result = asyncio.run(stream())
    else:
        result = agent.run_sync("Fix the bug")

    assert result.output == "The bug is in m3."
    assert len(upstream.requests) == 9 == len(reports)
    assert all(bool(b.get("stream")) == streamed for b in upstream.requests)
    counter = exact_counter("gpt-4o-mini")
    for body in upstream.requests:
        assert counter.prompt_tokens(body["messages"], body.get("tools")) + 300 <= 3_000
        assert body["messages"][1]["content"].startswith("Fix the bug")
    assert min(len(b["messages"]) for b in upstream.requests[4:]) < 10
    assert len(result.all_messages()) == 18  # the run's history is whole


@pytest.mark.parametrize("factory", [history_processor, async_history_processor])
def test_history_processors_sync_and_async(factory: Any) -> None:
    """As a ProcessHistory processor: every request valid and inside the window. pydantic-ai
    stores what a processor returns, so the run's history is the governed one."""
    script = _Scripted(14)
    processor = factory(context_window=WINDOW)
    result = _agent(FunctionModel(script), ProcessHistory(processor)).run_sync("Fix the bug")
    assert result.output == "The bug is in m3."
    report = processor.governance.last
    assert report is not None and report.ok
    # governance changed the history at some step (the last one may only append to the
    # governed history pydantic-ai stored): pydantic-ai replaced its history
    assert len(result.all_messages()) < 2 + 2 * 15



@pytest.mark.parametrize("factory", [history_processor, async_history_processor])
def test_processors_take_the_hook_settings_by_keyword_only(factory: Any) -> None:
    """Both processors pass every hook setting to their engine, refuse an unknown or a
    positional one (a TypeError at the call, as a misspelt keyword always was), and the
    async one is a coroutine function while the sync one is not."""
    reports: list[Report] = []
    settings: dict[str, Any] = {
        "profile": "anthropic",
        "model": "claude-sonnet-4-5",
        "context_window": 9_000,
        "max_tool_result_chars": 500,
        "compaction": "seed",
        "count_tokens": len,
        "on_report": reports.append,
    }
    processor = factory(**settings)
    governance = processor.governance
    assert isinstance(governance, Governance)
    assert {name: getattr(governance, name) for name in settings} == settings
    assert asyncio.iscoroutinefunction(processor) is (factory is async_history_processor)
    with pytest.raises(TypeError, match="context_windw"):
        factory(context_windw=9_000)
    with pytest.raises(TypeError):
        factory("anthropic")

def test_repairs_map_back_to_parts() -> None:
    """An orphan return is dropped, an unanswered call answered, and the rest untouched."""
    answered = ModelResponse(parts=[ThinkingPart("hmm"), ToolCallPart("read_file", {"path": "a"}, tool_call_id="c1")])
    lost = ModelResponse(parts=[TextPart("Reading b."), ToolCallPart("read_file", {"path": "b"}, tool_call_id="lost")])
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart("start")]),
        answered,
        ModelRequest(parts=[ToolReturnPart("read_file", "A", tool_call_id="c1"), ToolReturnPart("read_file", "stale", tool_call_id="orphan")]),
        lost,
        ModelRequest(parts=[UserPromptPart("next")]),
    ]
    snapshot = copy.deepcopy(history)
    reports: list[Report] = []
    out = Governance(context_window=200_000, on_report=reports.append).govern(history, Target(None, "openai", "gpt-4o"))

    assert history == snapshot
    assert out[0] is history[0] and out[1] is answered and out[3] is lost
    returns = [(p.tool_call_id, p.content) for m in out for p in m.parts if isinstance(p, ToolReturnPart)]
    assert ("orphan", "stale") not in returns and ("c1", "A") in returns
    assert any(call_id == "lost" for call_id, _ in returns)
    assert validate(_chat(out), provider="openai") == []
    (report,) = reports
    assert {("orphans", "drop"), ("backfill", "insert")} <= {(a.stage, a.kind) for a in report.actions}


def test_merged_user_prompts_keep_their_items() -> None:
    """Two user prompts in a row are merged (the openai profile's alternation): every
    image, audio and cache point of both is still the framework's own object. (Before the
    items were found by ref, the first prompt's audio came back as its JSON text.)"""
    img, audio, text = ImageUrl(url="https://e.com/a.png"), AudioUrl(url="https://e.com/a.mp3"), TextContent("note", metadata={"k": 1})
    wav, point = BinaryContent(b"RIFF", media_type="audio/wav"), CachePoint()
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(["look", img, audio, text])]),
        ModelRequest(parts=[UserPromptPart(["and", wav, point])]),
    ]
    for profile in ("openai", "anthropic", "mistral"):
        out = Governance(context_window=50_000, profile=profile).govern(history, Target(None, "openai", "gpt-4o"))
        (message,) = out
        (part,) = message.parts
        assert isinstance(part, UserPromptPart) and isinstance(part.content, list)
        assert part.content[:4] == ["look", img, audio, text] and part.content[5:] == [wav, point]
        assert all(a is b for a, b in zip(part.content[1:4], (img, audio, text), strict=True))
        assert part.content[5] is wav and part.content[6] is point


@pytest.mark.parametrize("profile", [p for p in PROFILES if p != "nanobot"])
def test_every_profile_judges_what_is_sent(profile: str) -> None:
    """The edge's private key is not part of what is sent: a target that rejects unknown
    keys (Groq, GLM) must not be reported as getting it (it was, as GQ-1 / GLM-4)."""
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart(["look", IMAGE])]),
        ModelResponse(parts=[ThinkingPart("t"), ToolCallPart("read_file", {"a": 1}, tool_call_id="call_abcdefghijklmnop")]),
        ModelRequest(parts=[ToolReturnPart("read_file", "x", tool_call_id="call_abcdefghijklmnop")]),
        ModelRequest(parts=[UserPromptPart("go")]),
    ]
    governance = Governance(context_window=50_000, profile=profile)
    out = governance.govern(history, Target(None, "openai", "gpt-4o"))
    report = governance.last
    assert report is not None and report.ok, report.notes
    assert report.provider is not None
    assert validate(_chat(out), provider=report.provider, model=report.model) == []


def test_profile_follows_the_serving_model() -> None:
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("hi")])]
    claude = Governance()
    claude.govern(history, Target(None, "anthropic", "claude-sonnet-4-5"))
    assert claude.last is not None and claude.last.profile == "anthropic"
    gemini = Governance()
    gemini.govern(history, Target(None, "google-gla", "gemini-2.5-pro"))
    assert gemini.last is not None and gemini.last.profile == "gemini"
    forced = Governance(profile="mistral", context_window=20_000)
    forced.govern(history, Target(None, "anthropic", "claude-sonnet-4-5"))
    assert forced.last is not None and forced.last.profile == "mistral" and forced.last.context_window == 20_000


def test_one_governor_per_conversation_and_steps_are_incremental() -> None:
    """A conversation's second step reuses its Governor and decode cache: the messages it
    saw before are the same chat objects, so the Governor's fast path applies."""
    governance = Governance(context_window=50_000)
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("go")])]
    governance.govern(history, Target("conv-1", "openai", "gpt-4o"))
    history.append(ModelResponse(parts=[ToolCallPart("read_file", {"path": "a"}, tool_call_id="c1")]))
    history.append(ModelRequest(parts=[ToolReturnPart("read_file", "A", tool_call_id="c1")]))
    out = governance.govern(history, Target("conv-1", "openai", "gpt-4o"))
    assert out is history
    governance.govern(history, Target("conv-2", "openai", "gpt-4o"))
    assert len(governance._conversations) == 2
    (conversation, _) = governance._conversation(Target("conv-1", "openai", "gpt-4o"))
    assert set(conversation.cache) == {id(m) for m in history}
    # A message changed in place (a part appended) is decoded again, not served stale.
    last = history[-1]
    assert isinstance(last, ModelRequest)
    last.parts = [*last.parts, UserPromptPart("and one more thing")]
    (chats,) = [c for c in edge.decode(history, conversation.cache) if c["role"] == "user" and "more" in str(c["content"])]
    assert chats["content"] == "and one more thing"


def test_a_step_gives_back_last_steps_rebuilt_messages() -> None:
    """Once the cache policy has cleared old tool results, each later step repeats those
    changes: the rebuilt messages are the same objects as on the last step (a look-up, not
    a rebuild, and a stable prefix for the framework's own caching)."""
    governance = Governance(context_window=16_000, compaction="cache")
    target = Target("conv", "openai", "gpt-4o")
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Fix the bug")])]
    outs: list[list[ModelMessage]] = []
    for i in range(40):
        history.append(ModelResponse(parts=[ToolCallPart("read_file", {"p": str(i)}, tool_call_id=f"c{i}")]))
        history.append(ModelRequest(parts=[ToolReturnPart("read_file", f"step {i}\n" * 120, tool_call_id=f"c{i}")]))
        outs.append(governance.govern(history, target))
    own = {id(m) for m in history}
    repeated = 0
    for before, after in pairwise(outs):
        rebuilt = [m for m in before if id(m) not in own]
        same_prefix = [a for a, b in zip(before, after, strict=False) if a == b]
        repeated += sum(1 for m in rebuilt if any(m is n for n in after))
        assert all(any(m is n for n in after) for m in rebuilt if m in same_prefix)
    assert repeated > 0


def test_a_history_with_no_chat_form_is_left_alone() -> None:
    """Requests made only of parts with no chat form (a settings delta) have nothing to
    govern: the history comes back as it is, not an error."""
    delta = ModelRequest(parts=[ModelSettingsDeltaPart(settings={"temperature": 0.2})])
    history: list[ModelMessage] = [delta]
    assert Governance(context_window=1_000).govern(history, Target(None, "openai", "gpt-4o")) is history
    # Between other messages it travels with the one before it, and comes back in place.
    mixed: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("hi")]), delta, ModelResponse(parts=[TextPart("ok")])]
    decoded = edge.decode(mixed)
    assert len(decoded) == 2 and edge.encode(decoded, decoded) == mixed


# -- the edge's round trip, over generated ModelMessage lists ----------------------------------

_text = st.text(alphabet="abc xyz{}\"\n", min_size=0, max_size=12)
_ids = st.sampled_from(["c1", "c2", "c3", "call_4"])
_user_items = st.lists(
    st.one_of(
        _text,
        st.just(IMAGE),
        st.builds(lambda d: BinaryContent(d, media_type="image/png"), st.binary(max_size=8)),
        st.just(AudioUrl(url="https://example.com/a.mp3")),
    ),
    min_size=1,
    max_size=3,
)
_request_part = st.one_of(
    st.builds(SystemPromptPart, _text),
    st.builds(UserPromptPart, st.one_of(_text, _user_items)),
    st.builds(lambda n, c, i: ToolReturnPart(n, c, tool_call_id=i), st.just("read_file"), st.one_of(_text, st.dictionaries(_text, st.integers(), max_size=2)), _ids),
    st.builds(lambda c, i: ToolReturnPart("read_file", c, tool_call_id=i, outcome="retried"), _text, _ids),
    st.builds(lambda c: RetryFeedbackPart(c, retry=RetryInfo(cause="output_validation")), _text),
    st.builds(lambda t: ModelSettingsDeltaPart(settings={"temperature": t}), st.sampled_from([0.0, 0.5])),
    st.builds(CompactionPart, _text),
)
_response_part = st.one_of(
    st.builds(TextPart, _text),
    st.builds(lambda c: ThinkingPart(c, signature="sig"), _text),
    st.builds(lambda n, i: ToolCallPart(n, {"path": "p"}, tool_call_id=i), st.just("read_file"), _ids),
    st.builds(lambda i: NativeToolCallPart(tool_name="web_search", args={"q": "x"}, tool_call_id=i, provider_name="openai"), _ids),
    st.builds(lambda i: NativeToolReturnPart(tool_name="web_search", content="r", tool_call_id=i, provider_name="openai"), _ids),
    st.builds(lambda d: FilePart(BinaryContent(d, media_type="image/png")), st.binary(max_size=4)),
    st.builds(CompactionPart, _text),
)
_message = st.one_of(
    st.builds(ModelRequest, st.lists(_request_part, min_size=1, max_size=3)),
    st.builds(ModelResponse, st.lists(_response_part, min_size=0, max_size=3)),
)
_histories = st.lists(_message, min_size=1, max_size=8)


@settings(max_examples=examples(full=150, fast=60), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_histories)
def test_round_trip_gives_back_the_same_objects(history: list[ModelMessage]) -> None:
    decoded = edge.decode(history)
    if not decoded:  # no chat form at all: nothing to govern, the history is left as it is
        assert all(edge.decode_one(m) == [] for m in history)
        return
    out = edge.encode(decoded, decoded)
    assert len(out) == len(history) and all(a is b for a, b in zip(out, history, strict=True))


@settings(max_examples=examples(full=120, fast=40), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_histories, st.sampled_from([300, 5_500, 200_000]), st.sampled_from(["openai", "anthropic", "gemini", "mistral", "groq", "qwen"]))
def test_governed_histories_are_valid_and_keep_what_they_can(history: list[ModelMessage], window: int, profile: str) -> None:
    """Whatever the history and the target, the governed one is valid for it (or the report
    says why), leaves the input alone, keeps unchanged parts as the same objects, and is stable."""
    history = [*history, ModelRequest(parts=[UserPromptPart("now")])]
    snapshot = copy.deepcopy(history)
    target = Target(None, "openai", "gpt-4o")
    governed = Governance(context_window=window, profile=profile)
    out = governed.govern(history, target)
    assert history == snapshot
    report = governed.last
    assert report is not None and report.provider is not None
    if not report.violations:
        assert validate(_chat(out), provider=report.provider, model=report.model) == []
    # Parts with no chat form are never rebuilt: each one sent is the framework's own object.
    parts = {id(p) for m in history for p in m.parts}
    opaque = (ThinkingPart, NativeToolCallPart, NativeToolReturnPart, FilePart, CompactionPart)
    opaque += (ModelSettingsDeltaPart,)
    assert all(id(p) in parts for m in out for p in m.parts if isinstance(p, opaque))
    # Every user content item but a plain string is the framework's own object, even in a
    # message the target's rules merged from two.
    items = {id(i) for m in history for p in m.parts if isinstance(p, UserPromptPart) and not isinstance(p.content, str) for i in p.content}
    for m in out:
        for p in m.parts:
            if isinstance(p, UserPromptPart) and not isinstance(p.content, str):
                assert all(isinstance(i, str) or id(i) in items for i in p.content)
    # A history that needs nothing comes back as the very same list.
    assert (out is history) == (not report.changed)
    # Idempotent: governing the governed history again changes nothing.
    if report.ok:
        again = Governance(context_window=window, profile=profile).govern(out, target)
        assert again is out


def test_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "try:\n"
        "    import context_governor.adapters.pydantic_ai\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'context-governor[pydantic-ai]'" in out.stdout


def test_the_docs_example_runs(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's example, as printed, against the fake upstream (named by the environment
    variables the openai client reads), with a window it outgrows."""
    monkeypatch.setenv("OPENAI_BASE_URL", upstream.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    upstream.context_window = 8_000
    for i in range(10):
        upstream.push(Reply.calls(("read_module", {"name": f"m{i}"})))
    upstream.push(Reply.text("The bug is in m7."))
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1

    exec(compile(blocks[0], str(DOC), "exec"), {"__name__": "__main__"})

    printed = capsys.readouterr().out
    assert printed.startswith("The bug is in m7.\n")
    assert "22 messages in the run's history" in printed
    totals = [tuple(map(int, m)) for m in re.findall(r"request \d+: (\d+) -> (\d+) tokens", printed)]
    assert len(totals) == 11 and any(before > after for before, after in totals)


def test_each_request_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="context_governor.adapters.pydantic_ai")
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("a")]), ModelRequest(parts=[UserPromptPart("b")])]
    Governance(context_window=50_000).govern(history, Target(None, "openai", "gpt-4o"))
    (info,) = [r for r in caplog.records if r.levelname == "INFO"]
    assert info.getMessage().startswith("context-governor: 2 -> 1 messages")
    caplog.clear()
    Governance(context_window=100).govern(history, Target(None, "openai", "gpt-4o"))
    assert any("budget" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")
