"""Long agent sessions for the compaction tests: a task, many tool steps, and user
prompts now and then, so that turns have very different lengths."""

from __future__ import annotations

import json
import random
from typing import Any

Message = dict[str, Any]
TASK = "Fix the bug."
#: a model per provider where the rules depend on it (the others: None)
MODELS: dict[str, str | None] = {
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-pro",
    "deepseek": "deepseek-reasoner",
    "vllm": "meta-llama/Llama-3.1-8B-Instruct",
}


def long_session(rng: random.Random, steps: int, prompt: str | None = None) -> list[Message]:
    """A legal agent history: a task, then tool steps (some parallel), with now and then a
    reply and a new user prompt (``prompt``, or a random short one) — turns of very
    different lengths, so that a cut can fall anywhere."""
    msgs: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": TASK},
    ]
    p_prompt = rng.choice([0.05, 0.2, 0.5])
    for step in range(steps):
        if rng.random() < p_prompt:
            if rng.random() < 0.7:
                msgs.append({"role": "assistant", "content": f"Done with part {step}."})
            text = prompt or rng.choice(["continue", "go on", f"Now part {step}.", "ok"])
            msgs.append({"role": "user", "content": text})
        calls = [
            {
                "id": f"call{step}x{k}",
                "type": "function",
                "function": {
                    "name": rng.choice(["read_file", "exec", "grep"]),
                    "arguments": json.dumps({"path": f"src/m{step}.py"}),
                },
            }
            for k in range(1 if rng.random() < 0.8 else 2)
        ]
        msgs.append({"role": "assistant", "content": None, "tool_calls": calls})
        for call in calls:
            size = rng.choice([60, 400, 1500, 5000])
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["function"]["name"],
                    "content": " ".join(f"w{step}_{i}" for i in range(size // 6)),
                }
            )
    if rng.random() < 0.3:
        msgs.append({"role": "assistant", "content": "Here is where I am."})
        msgs.append({"role": "user", "content": prompt or "What next?"})
    return msgs
