"""An HTTP proxy that governs every Chat Completions, Anthropic Messages, OpenAI
Responses and Gemini generateContent request in its own format (docs/proxy.md lists
each path).

Needs the ``proxy`` extra (starlette, uvicorn): ``pip install 'context-governor[proxy]'``.
Run it with ``context-governor proxy --upstream URL`` or serve ``create_app(config)``
with any ASGI server.
"""

from .app import create_app
from .config import ProxyConfig

__all__ = ["ProxyConfig", "create_app"]
