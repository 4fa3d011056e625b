"""An HTTP proxy that governs every Chat Completions, Anthropic Messages, OpenAI
Responses and Gemini generateContent request in its own format (docs/proxy.md lists
each path).

Needs the ``proxy`` extra (starlette, uvicorn): ``pip install 'context-governor[proxy]'``.
Run it with ``context-governor proxy --upstream URL`` or serve ``create_app(config)``
with any ASGI server; ``ProxyConfig`` holds its settings, grouped by concern
(``TimeoutsConfig``, ``LimitsConfig``, ``PageConfig``...).
"""

from ._access import client_keys, open_relay_refusal
from ._apis import ROUTES
from ._app import create_app
from ._config import CONFIG_ENV, ProxyConfig
from ._metrics import MULTIPROC_ENV
from ._protocol import PROTOCOL_PATH, HeaderTimeoutH11
from ._redact import RedactingFilter, Redactor, redact_url
from ._settings import (
    AccessConfig,
    CountingConfig,
    GoverningConfig,
    LimitsConfig,
    PageConfig,
    SummariesConfig,
    TelemetryConfig,
    TimeoutsConfig,
)

__all__ = [
    "CONFIG_ENV",
    "MULTIPROC_ENV",
    "PROTOCOL_PATH",
    "ROUTES",
    "AccessConfig",
    "CountingConfig",
    "GoverningConfig",
    "HeaderTimeoutH11",
    "LimitsConfig",
    "PageConfig",
    "ProxyConfig",
    "RedactingFilter",
    "Redactor",
    "SummariesConfig",
    "TelemetryConfig",
    "TimeoutsConfig",
    "client_keys",
    "create_app",
    "open_relay_refusal",
    "redact_url",
]
