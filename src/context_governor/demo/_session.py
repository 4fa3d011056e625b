"""The scripted session of ``context-governor demo``.

A coding agent (the scripted model) investigates an expiry bug in a small
project with the real built-in tools. The session is written so that, with a
small context window, every stage of the pipeline has work to do, each
for the reason it exists in a real agent:

* compact (the default cache policy), or microcompact and snip (the seed's
  policy, ``--compaction seed``): file reads pile up over several turns;
* backfill: the user cancels a run while a slow command is running, so a
  tool call is persisted without its result;
* alternation: the model server fails (503) on a question, so the user's
  follow-up makes two user messages in a row;
* orphans: the app restarts and reloads a history trimmed to its last
  messages, and the cut falls inside a tool-call block.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..governor import Governor
from ..llm import ModelHTTPError, ScriptedModel, ScriptItem, tool_call
from ..messages import Message
from ..policies import Compaction, get_policy
from ..providers import validate
from ..report import Report
from ..runner import AgentRunner, ModelCall, ProgressPrinter, RunHooks, ToolEvent
from ._project import DEMO_FILES, project_file

__all__ = [
    "CACHE_STAGES",
    "DEMO_STAGES",
    "SEED_STAGES",
    "STORE_KEEPS",
    "SYSTEM_PROMPT",
    "DemoSummary",
    "Turn",
    "run_demo",
    "trim_like_a_store",
    "turns",
    "write_project",
]

SYSTEM_PROMPT = (
    "You are a coding agent working in a Python project. Use the tools to read "
    "and search the code before you answer; answer briefly."
)
#: The seed's stages, in pipeline order: the demo is meant to make each act.
SEED_STAGES = ("orphans", "backfill", "microcompact", "snip", "alternation")
#: The same under the default cache policy, whose compact stage does the cutting.
CACHE_STAGES = ("orphans", "backfill", "compact", "alternation")
#: The stages the demo makes act, by compaction policy.
DEMO_STAGES = {"seed": SEED_STAGES, "cache": CACHE_STAGES}
#: The app's session store keeps the system prompt and about this many messages.
STORE_KEEPS = 14


def write_project(root: Path) -> None:
    """Write the sample project under ``root``."""
    for name in DEMO_FILES:
        text = project_file(name)
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _calls(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def _read(path: str) -> dict[str, Any]:
    return tool_call("read_file", {"path": path})


@dataclass
class Turn:
    """One user message and what the scripted model does with it."""

    title: str
    user: str
    script: list[ScriptItem]
    #: cancel the run as soon as this many tool calls have finished
    cancel_after_tools: int | None = None
    #: before the turn, the app reloads its history, trimmed to the last messages
    reload_trimmed: bool = False


def turns() -> list[Turn]:
    """The session, turn by turn."""
    return [
        Turn(
            "the bug report",
            "Links created with expires_in keep redirecting after they expire. "
            "Find where expiry is handled.",
            [
                _calls(
                    tool_call("list_dir", {"path": "."}),
                    tool_call("find_files", {"pattern": "*.py"}),
                ),
                _calls(tool_call("grep", {"pattern": "expire", "path": "src"})),
                _calls(_read("src/shortlink/timeutil.py"), _read("src/shortlink/models.py")),
                _calls(_read("src/shortlink/routes.py")),
                "Expiry is computed by timeutil.parse_expiry() in UTC and checked by "
                "timeutil.is_expired(), which compares it with timeutil.utcnow().",
            ],
        ),
        Turn(
            "more reading",
            "Check the config defaults and the validators too, and count the lines of code.",
            [
                _calls(_read("src/shortlink/config.py"), _read("src/shortlink/validators.py")),
                _calls(_read("src/shortlink/db.py"), _read("src/shortlink/ratelimit.py")),
                _calls(tool_call("exec", {"command": "wc -l src/shortlink/*.py"})),
                "Config and validators look fine: SHORTLINK_DEFAULT_TTL is 0 and "
                "SHORTLINK_MAX_TTL is a year. The package is about 1,000 lines.",
            ],
        ),
        Turn(
            "cancelled by the user",
            "Run the expiry tests.",
            [
                _calls(
                    _read("tests/test_expiry.py"),
                    # The demo's stand-in for a slow test run.
                    tool_call(
                        "exec", {"command": "sleep 3; python3 -m pytest -q tests/test_expiry.py"}
                    ),
                )
            ],
            cancel_after_tools=1,
        ),
        Turn(
            "the model server fails",
            "Sorry, that was taking too long. What have you found so far?",
            [ModelHTTPError("HTTP 503 from the model server: overloaded", status=503)],
        ),
        Turn(
            "the user asks again",
            "Hello? In two sentences: what is the bug?",
            [
                "timeutil.utcnow() returns datetime.now(), local time, while expiries are "
                "stored in UTC. So is_expired() is off by the server's UTC offset and links "
                "east of UTC keep working for hours after they expire."
            ],
        ),
        Turn(
            "after a restart",
            "One more: where is the rate limit configured?",
            [
                _calls(tool_call("grep", {"pattern": "RATE", "path": "src"})),
                _calls(_read("src/shortlink/config.py")),
                "SHORTLINK_RATE_LIMIT and SHORTLINK_RATE_BURST, read by config.load_config() into "
                "rate_limit_per_minute and rate_limit_burst, which ratelimit.RateLimiter uses.",
            ],
            reload_trimmed=True,
        ),
    ]


def trim_like_a_store(history: list[Message], keep: int = STORE_KEEPS) -> list[Message]:
    """What a naive session store gives back: the system prompt and the last messages.

    The cut is moved back until it falls between a tool call and its result
    (so the result loses its call): the demo wants the orphan that such stores
    really produce.
    """
    system = [m for m in history[:1] if m.get("role") == "system"]
    rest = history[len(system) :]
    start = max(0, len(rest) - keep)
    while start > 0 and not (
        rest[start].get("role") == "tool" and rest[start - 1].get("role") == "assistant"
    ):
        start -= 1
    return system + rest[start:]


@dataclass
class DemoSummary:
    """What the demo did: the reports of every model call and what they add up to."""

    reports: list[Report] = field(default_factory=list)
    requests: int = 0
    violations: int = 0
    history: list[Message] = field(default_factory=list)
    #: the stages this session is meant to make act (they depend on the policy)
    stages: tuple[str, ...] = CACHE_STAGES

    @property
    def stage_actions(self) -> Counter[str]:
        return Counter(a.stage for r in self.reports for a in r.actions)

    @property
    def missing_stages(self) -> list[str]:
        acted = self.stage_actions
        return [s for s in self.stages if not acted[s]]


async def _run_turn(
    runner: AgentRunner,
    history: list[Message],
    turn: Turn,
    printer: ProgressPrinter,
    reports: list[Report],
) -> list[Message]:
    """Run one turn; returns the messages it added to the history (also when cancelled)."""
    task: asyncio.Task[Any] | None = None
    finished_tools = 0

    def before_model(call: ModelCall) -> None:
        reports.append(call.report)
        printer.before_model(call)

    def after_tool(event: ToolEvent) -> None:
        nonlocal finished_tools
        printer.after_tool(event)
        finished_tools += 1
        if task is not None and finished_tools == turn.cancel_after_tools:
            task.cancel()

    runner.hooks = RunHooks(
        before_model=before_model, after_tool=after_tool, on_text=printer.on_text
    )
    task = asyncio.create_task(runner.run(history))
    try:
        result = await task
    except asyncio.CancelledError:
        printer.info("  (cancelled by the user: the unfinished call has no result in the history)")
        return list(runner.new_messages)
    printer.end_text()
    if result.stop_reason != "completed":
        printer.info(f"  run stopped: {result.stop_reason} ({result.error})")
    return list(result.new_messages)


async def run_demo(
    workspace: Path,
    printer: ProgressPrinter,
    *,
    context_window: int,
    max_output: int = 1024,
    profile: str = "openai",
    compaction: str | Compaction = "cache",
) -> DemoSummary:
    """Play the session over ``workspace`` (the sample project must be written there)."""
    from ..tools import builtin_tools

    tools = builtin_tools(workspace, max_output_chars=8000, exec_timeout=20)
    governor = Governor(
        profile=profile,
        model="gpt-4o-mini",
        context_window=context_window,
        max_output=max_output,
        compaction=compaction,
        # the demo owns its history and only ever adds new messages (the runner builds
        # each one fresh; trimming makes a new list): the promise holds
        immutable_messages=True,
    )
    script = turns()
    model = ScriptedModel([item for turn in script for item in turn.script], model="gpt-4o-mini")
    runner = AgentRunner(model, tools, governor, max_iterations=10, tool_timeout=20)
    # The nanobot profile is the seed whatever the policy asked for.
    policy = "seed" if governor.profile.name == "nanobot" else get_policy(compaction).name
    summary = DemoSummary(stages=DEMO_STAGES.get(policy, SEED_STAGES))
    history: list[Message] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for number, turn in enumerate(script, 1):
        printer.info("")
        printer.info(f"── turn {number}: {turn.title}")
        if turn.reload_trimmed:
            trimmed = trim_like_a_store(history)
            printer.info(
                f"  (the app restarted; its store gave back {len(trimmed)} of "
                f"{len(history)} messages, cut inside a tool-call block)"
            )
            history = trimmed
        printer.info(f"user: {turn.user}")
        history = [*history, {"role": "user", "content": turn.user}]
        history += await _run_turn(runner, history, turn, printer, summary.reports)
    provider = governor.profile.provider or "openai"
    summary.requests = len(model.requests)
    summary.violations = sum(
        len(validate(r.messages, provider=provider, model="gpt-4o-mini")) for r in model.requests
    )
    summary.history = history
    return summary
