"""The wire formats, one registration each: the one table every caller looks an API up
in (``WIRE_FORMATS``, ``wire_format``) instead of branching on its name.

A new wire format is its modules (edge, rules, request module, and its
``<api>_wire.py`` with the :class:`~.wire.WireFormat`), its name in ``base.py``'s
``Api``/``APIS``/``DEFAULT_PROFILES``, and one line here (docs/architecture.md, "A new
wire format"). The order is the proxy's: its routes are listed in it.
"""

from __future__ import annotations

from ._anthropic_wire import WIRE as ANTHROPIC
from ._base import Api, check_api
from ._chat_wire import WIRE as CHAT
from ._gemini_wire import WIRE as GEMINI
from ._responses_wire import WIRE as RESPONSES
from ._wire import WireFormat

__all__ = ["FALLBACK", "WIRE_FORMATS", "wire_format", "wire_or_fallback"]

#: Every wire format by its name (base.APIS).
WIRE_FORMATS: dict[Api, WireFormat] = {
    wire.api: wire for wire in (CHAT, ANTHROPIC, RESPONSES, GEMINI)
}
#: The shape of what names no known API (a passed-through path, an unknown name):
#: Chat Completions', the one most servers speak.
FALLBACK = CHAT
_BY_NAME: dict[str, WireFormat] = {api: wire for api, wire in WIRE_FORMATS.items()}


def wire_format(api: str) -> WireFormat:
    """The wire format named ``api`` (one of base.APIS); ConfigError naming them else."""
    return WIRE_FORMATS[check_api(api, "wire_format")]


def wire_or_fallback(api: str) -> WireFormat:
    """The wire format named ``api``, or FALLBACK's for a name no format has."""
    return _BY_NAME.get(api, FALLBACK)
