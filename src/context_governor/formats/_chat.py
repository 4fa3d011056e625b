"""The Chat Completions edge: a body's ``messages`` are the pipeline's own format, so
decoding reads the request's settings (messages, tools, model, output reserve) and
checks them, and encoding puts the governed messages back in the body.

What the rules of this wire are is the providers' business (providers/: each
provider's Chat Completions rules and repairs); there is no rules module here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError, brief
from ..messages import Message
from ..messages.inputs import check_messages
from ..messages.legacy import tools_of
from ._fields import type_name

#: The output reserve's fields, the current name first (newer clients send both with
#: the same value, or only it): the first one set is the reserve.
RESERVE = ("max_completion_tokens", "max_tokens")


@dataclass(frozen=True, slots=True)
class Decoded:
    """A Chat Completions body and the settings governance reads from it."""

    body: dict[str, Any]
    messages: list[Message]
    #: ``tools``, or the deprecated ``functions`` in tools form (legacy.tools_of)
    tools: Any
    model: str | None
    #: the first of RESERVE that is set (not null); None if none is
    max_output: int | None

    @property
    def prefill(self) -> bool:
        """A body that ends with an assistant message asks to continue it (a prefill)."""
        return bool(self.messages) and self.messages[-1].get("role") == "assistant"


def reserve_of(body: dict[str, Any]) -> tuple[str | None, Any]:
    """The output reserve's field and value: the first of RESERVE that is set."""
    for name in RESERVE:
        if body.get(name) is not None:
            return name, body[name]
    return None, None


def decode(body: Any) -> Decoded:
    """The settings of ``body``; InputError naming the field when one cannot be read."""
    if not isinstance(body, dict):
        raise InputError("body", f"expected a request object, got {type(body).__name__}")
    messages = check_messages(body.get("messages"), legacy=True)
    field, output = reserve_of(body)
    bad = isinstance(output, bool) or not isinstance(output, int) or output < 0
    if field is not None and bad:
        problem = f"must be a non-negative integer, got {brief(output)}"
        raise InputError(field, problem, message=f"{field} {problem}")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise InputError("model", f"expected a string, got {type_name(model)}")
    return Decoded(body, messages, tools_of(body), model, output)


def encode(messages: list[Message], decoded: Decoded) -> dict[str, Any]:
    """The body to send: the input body itself when its messages came back unchanged."""
    if messages is decoded.messages:
        return decoded.body
    return {**decoded.body, "messages": messages}
