"""Would the pipeline leave this list alone? A cheaper yes than running it.

A Governor's appending step needs to know that its new messages need no repair: that
``run()`` on a small window (a placeholder user message, the newest model turn and the
new messages) returns the window itself with no action, note or violation. Running the
whole pipeline to learn that costs several times what the answer needs, because most of
``run()`` exists to make and report changes. :func:`leaves_alone` answers the same
question for the windows a Governor asks about and skips only work whose outcome is
already known:

* input repair of the messages the caller says are known clean (the input repair looks
  at each message on its own, so a message it left alone once it leaves alone again);
* the cache policy's compaction and snip (``compact.fit_stage``) when the list's total
  is at most the policy's trigger: no request of the list is then over the trigger, so
  nothing compacts, and the total is under the budget, so snip keeps everything. This is
  the rule ``compact.would_compact`` already relies on;
* ``_fit``'s second look (its passes act only when a repair changes the list or the
  output is over the trigger or the budget) and the report itself.

Every other stage runs as ``run()`` runs it, and the answer is no at the first stage
that changes the list or records anything. It is never yes where ``run()`` would change
something: tests/test_probe.py checks that over every profile with generated windows.
"""

from __future__ import annotations

from .inputs import repair_messages
from .messages import Message
from .pipeline import Settings, context
from .providers.rules import find_violations
from .stages import compact
from .tokens import TokenCounter


def leaves_alone(
    messages: list[Message], s: Settings, counter: TokenCounter, clean: int = 0
) -> bool:
    """True only if ``run(messages, s, counter)`` would return ``messages`` itself with no
    action, note or violation. ``messages[:clean]`` are known to pass the input repair
    unchanged. False for anything it does not show cheaply (near the trigger, the
    nanobot profile, a stage that raises): then ask ``run()``."""
    profile, budget, policy = s.profile, s.budget, s.compaction
    if profile.provider is None or not messages:
        return False
    ctx = context(s, counter)
    if s.prefill and not ctx.keep_prefill:
        return False  # run() notes that the prefill is not accepted
    try:
        total = counter.prompt_tokens(messages, s.tools)
        if budget is not None and (
            budget <= 0 or policy.kind != "cache" or total > policy.thresholds(budget)[0]
        ):
            return False
        for stage in profile.prepare:
            part = messages[clean:] if stage is repair_messages else messages
            if stage(part, ctx) is not part or ctx.actions or ctx.notes:
                return False
        for stage in (*profile.stages, *profile.finish):
            if stage is compact.fit_stage:
                continue  # at most the trigger (checked above): nothing compacts or is snipped
            if stage(messages, ctx) is not messages or ctx.actions or ctx.notes:
                return False
        return next(find_violations(s.provider.rules, messages, s.target), None) is None
    except Exception:  # run() falls back (an action) or raises: not a plain yes
        return False
