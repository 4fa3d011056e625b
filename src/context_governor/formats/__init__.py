"""Wire formats: one thin, lossless edge per API, in front of the one pipeline.

``govern_request(body, api=...)`` governs a whole request body in its own format
and returns a body of the same format; ``validate_request`` lists the rules it
breaks. The Anthropic Messages edge lives in ``anthropic.py`` (decode/encode) and
``anthropic_rules.py`` (the rules only a native body shows); the OpenAI Responses
edge in ``responses.py``, ``responses_rules.py`` and ``responses_request.py``; Chat
Completions bodies go through unchanged in shape.
"""

from .request import APIS, RequestResult, govern_request, validate_request

__all__ = ["APIS", "RequestResult", "govern_request", "validate_request"]
