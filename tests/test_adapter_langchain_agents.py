"""LangChain v1 ``create_agent`` middleware and LangGraph ``create_react_agent`` pre-model hook.

Real agents run a multi-step tool session on a strict fake chat model: it checks
every request it gets against its provider's rules and its window (and fails the
run if one breaks them), and scripts the tool calls. The session outgrows the
window; the graph's stored history must come out exactly as an ungoverned run
stores it.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents")
pytest.importorskip("langgraph.prebuilt")

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from context_governor import Report, validate
from context_governor.adapters.langchain import GovernorMiddleware, target_of, to_openai
from context_governor.adapters.langgraph import pre_model_hook
from context_governor.counting import exact_counter

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of create_agent
    from langgraph.prebuilt import create_react_agent

WINDOW = 4_000
MAX_OUTPUT = 500
STEPS = 8


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"contents of {path}:\n" + "\n".join(f"{path}:{n}: value_{n} = compute({n})" for n in range(60))


class StrictChatModel(BaseChatModel):
    """A chat model that only accepts valid, in-window requests, and answers from a script."""

    provider: str = "anthropic"
    model_name: str = "claude-sonnet-4-5"
    window: int = WINDOW
    check: bool = True
    script: list[AIMessage] = Field(default_factory=list)
    received: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "strict-fake"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        return {"ls_provider": self.provider, "ls_model_name": self.model_name, "ls_max_tokens": MAX_OUTPUT}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(list(messages))
        if self.check:
            dicts = to_openai(messages)
            provider = {"google_genai": "gemini"}.get(self.provider, self.provider)
            broken = validate(dicts, provider=provider, model=self.model_name)
            assert broken == [], [f"{v.rule}: {v.error}" for v in broken]
            prompt = exact_counter(self.model_name).prompt_tokens(dicts, None)
            # the budget: the window less the output reserve and the 1,024-token margin
            assert prompt <= self.window - MAX_OUTPUT - 1024, f"{prompt} prompt tokens: over the budget"
        return ChatResult(generations=[ChatGeneration(message=self.script[len(self.received) - 1])])


def _script(provider: str) -> list[AIMessage]:
    """STEPS tool calls (each with the provider's reasoning blocks), then the answer."""
    out = []
    for step in range(STEPS):
        blocks: list[Any] = (
            [{"type": "thinking", "thinking": f"step {step}: read the next file", "signature": f"sig{step}"}]
            if provider == "anthropic"
            else []
        )
        out.append(
            AIMessage(
                [*blocks, {"type": "text", "text": f"Reading part {step}."}],
                tool_calls=[{"name": "read_file", "args": {"path": f"src/m{step}.py"}, "id": f"toolu_{step:02d}"}],
                id=f"ai-{step}",
                response_metadata={"model_name": "scripted", "stop_reason": "tool_use"},
                usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            )
        )
    out.append(AIMessage("The bug is in m3.", id="ai-final", response_metadata={"stop_reason": "end_turn"}))
    return out


def _opening() -> list[BaseMessage]:
    # Two user messages in a row: Gemini rejects that (GE-4) unless they are merged.
    return [HumanMessage("Fix the tokenizer bug."), HumanMessage("Start with the m files.")]


def _shape(messages: Sequence[BaseMessage]) -> list[tuple[Any, ...]]:
    """A message as the state stores it, less the ids add_messages draws at random."""
    return [
        (
            type(m).__name__,
            m.content,
            getattr(m, "tool_call_id", None),
            getattr(m, "tool_calls", None),
            m.additional_kwargs,
            m.response_metadata,
        )
        for m in messages
    ]


PROVIDERS = [("anthropic", "claude-sonnet-4-5"), ("google_genai", "gemini-2.5-flash")]


def _run_create_agent(model: StrictChatModel, middleware: list[Any], thread: str) -> dict[str, Any]:
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt="You are a coding agent.",
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    return agent.invoke({"messages": _opening()}, config={"configurable": {"thread_id": thread}})


def _check_session(
    model: StrictChatModel, reports: list[Report], state: list[BaseMessage], reference: list[BaseMessage]
) -> None:
    assert len(model.received) == STEPS + 1  # every call was accepted (the model checks)
    assert len(reports) == STEPS + 1
    assert any(r.tokens_before > r.budget for r in reports)  # the session outgrew the window
    assert all(r.tokens_after <= r.budget for r in reports)
    assert [len(r) for r in model.received][-1] < len(state)  # the last call was cut
    # The stored history is exactly what an ungoverned run stores.
    assert _shape(state) == _shape(reference)
    tool_results = [m for m in state if isinstance(m, ToolMessage)]
    assert len(tool_results) == STEPS and all(m.content == read_file.invoke({"path": f"src/m{i}.py"}) for i, m in enumerate(tool_results))
    # The newest turn reaches the model as the agent stored it: the same objects.
    last_call = model.received[-1]
    assert last_call[-1] is state[-2] and last_call[-2] is state[-3]


@pytest.mark.parametrize(("provider", "name"), PROVIDERS)
def test_create_agent_middleware_governs_every_call_and_leaves_state_alone(provider: str, name: str) -> None:
    reports: list[Report] = []
    model = StrictChatModel(provider=provider, model_name=name, script=_script(provider))
    middleware = GovernorMiddleware(context_window=WINDOW, on_report=reports.append)
    out = _run_create_agent(model, [middleware], "t1")

    reference_model = StrictChatModel(provider=provider, model_name=name, script=_script(provider), check=False)
    reference = _run_create_agent(reference_model, [], "t1")["messages"]
    _check_session(model, reports, out["messages"], reference)
    assert out["messages"][-1].content == "The bug is in m3."
    # The target came from the model: its provider's profile, its name, its max_tokens.
    expected = {"anthropic": "anthropic", "google_genai": "gemini"}[provider]
    assert {r.profile for r in reports} == {expected} and reports[0].model == name
    assert reports[0].max_output == MAX_OUTPUT
    # One Governor for the thread.
    assert middleware.conversations.get("t1") is not None and len(middleware.conversations) == 1
    # The system prompt was governed with the messages and reached the model first.
    assert all(isinstance(call[0], SystemMessage) for call in model.received)
    # Unrewritten AI messages reach the model whole: thinking blocks, metadata, ids.
    by_id = {m.id: m for m in out["messages"] if isinstance(m, AIMessage)}
    sent_ai = [m for call in model.received for m in call if isinstance(m, AIMessage)]
    assert sent_ai and all(m.id in by_id for m in sent_ai)
    whole = [m for m in sent_ai if m.content == by_id[m.id].content]
    assert whole and all(m.response_metadata == by_id[m.id].response_metadata for m in whole)
    if provider == "anthropic":
        assert any(b.get("type") == "thinking" for m in whole for b in m.content if isinstance(b, dict))


def test_create_agent_without_middleware_breaks_the_strict_model() -> None:
    """The check is real: the same session, ungoverned, is refused by the strict model."""
    model = StrictChatModel(provider="google_genai", model_name="gemini-2.5-flash", script=_script("gemini"))
    with pytest.raises(AssertionError, match="GE-4"):
        _run_create_agent(model, [], "t1")
    model = StrictChatModel(script=_script("anthropic"))
    with pytest.raises(AssertionError, match="over the budget"):
        _run_create_agent(model, [], "t1")


def test_create_agent_async_and_one_governor_per_thread() -> None:
    reports: list[Report] = []
    middleware = GovernorMiddleware(context_window=WINDOW, on_report=reports.append)

    async def run(thread: str) -> dict[str, Any]:
        model = StrictChatModel(script=_script("anthropic"))
        agent = create_agent(model, tools=[read_file], middleware=[middleware], checkpointer=InMemorySaver())
        return await agent.ainvoke({"messages": _opening()}, config={"configurable": {"thread_id": thread}})

    first = asyncio.run(run("a"))
    second = asyncio.run(run("b"))
    assert first["messages"][-1].content == second["messages"][-1].content == "The bug is in m3."
    assert len(reports) == 2 * (STEPS + 1) and all(r.tokens_after <= r.budget for r in reports)
    governors = [middleware.conversations.get("a"), middleware.conversations.get("b")]
    assert None not in governors and governors[0] is not governors[1]


@pytest.mark.parametrize(("provider", "name"), PROVIDERS)
def test_langgraph_pre_model_hook_governs_llm_input_only(provider: str, name: str) -> None:
    reports: list[Report] = []
    model = StrictChatModel(provider=provider, model_name=name, script=_script(provider))
    hook = pre_model_hook(chat_model=model, context_window=WINDOW, on_report=reports.append)
    assert hook.settings["profile"] == target_of(model).profile

    def run(model: StrictChatModel, hook: Any) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(model, [read_file], pre_model_hook=hook, checkpointer=InMemorySaver())
        history = [SystemMessage("You are a coding agent."), *_opening()]
        return agent.invoke({"messages": history}, config={"configurable": {"thread_id": "t1"}})

    out = run(model, hook)
    reference_model = StrictChatModel(provider=provider, model_name=name, script=_script(provider), check=False)
    reference = run(reference_model, None)["messages"]
    _check_session(model, reports, out["messages"], reference)
    assert "llm_input_messages" not in out  # never part of what the graph returns
    assert hook.conversations.get("t1") is not None


def test_target_of_reads_through_bound_models() -> None:
    model = StrictChatModel(provider="google_genai", model_name="gemini-2.5-flash")
    model.profile = {"max_input_tokens": 12_345}
    target = target_of(model)
    assert (target.profile, target.model, target.context_window, target.max_output) == ("gemini", "gemini-2.5-flash", 12_345, MAX_OUTPUT)
    assert target_of(model.bind(stop=["END"])) == target
    assert target_of(object()).profile == "openai"


def test_langgraph_hook_rejects_a_state_without_messages() -> None:
    with pytest.raises(ValueError, match="messages"):
        pre_model_hook(context_window=WINDOW)({"other": []})


def test_missing_langgraph_says_which_extra() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None\n"
        "try:\n    import context_governor.adapters.langgraph\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "pip install 'context-governor[langgraph]'" in out


# -- the docs' examples run as shown ---------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "adapters"


def doc_examples(doc: str) -> dict[str, str]:
    """The code blocks a docs page marks as a copy of an example file, by file."""
    text = (ROOT / "docs" / doc).read_text()
    found = re.findall(r"<!-- example: (\S+) -->\n```python\n(.*?)```", text, re.DOTALL)
    return dict(found)


def _run_example(name: str) -> str:
    done = subprocess.run([sys.executable, name], cwd=EXAMPLES, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_langchain_docs_show_the_example_files_as_they_are() -> None:
    blocks = doc_examples("adapters-langchain.md")
    assert set(blocks) == {"examples/adapters/langchain_agent.py", "examples/adapters/langgraph_agent.py"}
    for path, code in blocks.items():
        assert code == (ROOT / path).read_text(), path


def test_create_agent_example_prints_what_the_docs_show() -> None:
    out = _run_example("langchain_agent.py")
    text = (ROOT / "docs" / "adapters-langchain.md").read_text()
    shown = re.search(r"\$ cd examples/adapters && python langchain_agent.py\n(.*?)```", text, re.DOTALL)
    assert shown is not None and out == shown.group(1)


def test_langgraph_example_runs() -> None:
    out = _run_example("langgraph_agent.py").splitlines()
    calls = [re.findall(r"[\d,]+", line) for line in out if line.startswith("model call:")]
    assert len(calls) == 7
    figures = [[int(n.replace(",", "")) for n in call] for call in calls]
    assert any(after < before for before, after, _ in figures) and all(after <= budget for _, after, budget in figures)
    assert out[-2:] == ["stored history: 15 messages, none cut", "answer: The bug is in m3: compute(3) is never called."]
