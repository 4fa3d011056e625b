"""Wire formats: one thin, lossless edge per API, in front of the one pipeline.

``govern_request(body, api=...)`` governs a whole request body in its own format
and returns a body of the same format; ``validate_request`` lists the rules it
breaks. ``registry.py`` is the table from an API's name (``APIS``: "openai" for Chat
Completions, "anthropic", "responses", "gemini") to its ``WireFormat`` (wire.py:
everything that differs between the APIs, for the library, the proxy and the page);
each API has one edge (decode/encode), one rules module, one request module and one
wire module:

- Chat Completions: ``chat.py``, the providers' own rules (providers/),
  ``chat_request.py``, ``chat_wire.py``;
- Anthropic Messages: ``anthropic.py``, ``anthropic_rules.py``, ``anthropic_request.py``,
  ``anthropic_wire.py``;
- OpenAI Responses: ``responses.py``, ``responses_rules.py``, ``responses_request.py``,
  ``responses_wire.py``;
- Gemini ``generateContent``: ``gemini.py``, ``gemini_rules.py``, ``gemini_request.py``,
  ``gemini_wire.py``.

``base.py`` is what they share (the API names, the result type, the options), a leaf
the request modules import.
"""

from . import _anthropic as anthropic
from . import _responses as responses
from ._anthropic_count import CountFn, calibrate, count_body, scaled_estimate
from ._anthropic_wire import WIRE as ANTHROPIC_WIRE
from ._anthropic_wire import anthropic_error
from ._base import APIS, DEFAULT_PROFILES, Api, Compacted, check_compacted
from ._chat_wire import openai_error
from ._gemini_wire import WIRE as GEMINI_WIRE
from ._gemini_wire import google_error
from ._registry import FALLBACK, WIRE_FORMATS, wire_or_fallback
from ._request import RequestResult, govern_request, validate_request
from ._wire import Usage, WireFormat, count

__all__ = [
    "ANTHROPIC_WIRE",
    "APIS",
    "DEFAULT_PROFILES",
    "FALLBACK",
    "GEMINI_WIRE",
    "WIRE_FORMATS",
    "Api",
    "Compacted",
    "CountFn",
    "RequestResult",
    "Usage",
    "WireFormat",
    "anthropic",
    "anthropic_error",
    "calibrate",
    "check_compacted",
    "count",
    "count_body",
    "google_error",
    "govern_request",
    "openai_error",
    "responses",
    "scaled_estimate",
    "validate_request",
    "wire_or_fallback",
]
