"""One OpenTelemetry span per proxied request (the ``otel`` extra), imported lazily.

The span follows OpenTelemetry's GenAI semantic conventions, so any GenAI-aware
backend reads it as a model call: ``gen_ai.operation.name`` ("chat", or
"generate_content" for Gemini), ``gen_ai.provider.name`` ("anthropic", "openai",
"gcp.gemini"), ``gen_ai.request.model``, ``gen_ai.conversation.id``, and the
upstream's own ``gen_ai.usage.input_tokens`` (cached included, as the conventions
ask), ``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens`` and
``gen_ai.usage.cache_creation.input_tokens``. Ours, under ``context_governor.*``: the
tokens before and after governance, the budget, actions and tokens saved by stage,
whether the request was compacted (also ``gen_ai.conversation.compacted``), the
outcome and a cache bust's lost tokens.

Without the extra nothing is imported and no span is made: the proxy works the same.
A span is exported over OTLP/HTTP when an endpoint is configured (``--otlp-endpoint``,
or the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``);
tests hand in their own tracer provider (an in-memory exporter).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ..formats import WIRE_FORMATS

__all__ = ["ENDPOINT_ENVS", "OPERATIONS", "PROVIDERS", "Tracer", "otlp_provider"]

log = logging.getLogger("context_governor.proxy")

#: GenAI's operation and provider names of each API (its wire format's trace names).
OPERATIONS: dict[str, str] = {api: w.trace_operation for api, w in WIRE_FORMATS.items()}
PROVIDERS: dict[str, str] = {api: w.trace_provider for api, w in WIRE_FORMATS.items()}
ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def otlp_provider(endpoint: str | None) -> Any | None:
    """A tracer provider exporting over OTLP/HTTP to ``endpoint`` (or the standard
    environment's); None when none is configured or the ``otel`` extra is missing
    (said once in the log)."""
    if endpoint is None and not any(os.environ.get(name) for name in ENDPOINT_ENVS):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        log.warning(
            "traces are configured but not exported: %s (pip install 'context-governor[otel]')",
            exc,
        )
        return None
    if endpoint is not None and not endpoint.rstrip("/").endswith("/v1/traces"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    provider = TracerProvider(resource=Resource.create({"service.name": "context-governor"}))
    exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


class Tracer:
    """Starts and ends the request spans; inert without a provider."""

    def __init__(self, provider: Any | None, owned: bool = False) -> None:
        self._provider = provider
        #: made here (from the config): ours to shut down; a caller's provider is theirs
        self._owned = owned
        self._tracer = provider.get_tracer("context_governor.proxy") if provider else None

    @property
    def on(self) -> bool:
        return self._tracer is not None

    def start(self, api: str, model: str | None, start_ns: int) -> Any | None:
        """A span for a request of ``api`` that started at ``start_ns`` (time.time_ns)."""
        if self._tracer is None:
            return None
        from opentelemetry.trace import SpanKind

        operation = OPERATIONS.get(api, "chat")
        name = f"{operation} {model}" if model else operation
        attributes = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": PROVIDERS.get(api, api),
            "context_governor.api": api,
        }
        if model:
            attributes["gen_ai.request.model"] = model
        return self._tracer.start_span(
            name, kind=SpanKind.CLIENT, start_time=start_ns, attributes=attributes
        )

    def end(self, span: Any | None, attributes: dict[str, Any], error: str | None) -> None:
        """Set the request's figures on ``span`` and end it (``error``: the error type)."""
        if span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        span.set_attributes({k: v for k, v in attributes.items() if v is not None})
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()

    def shutdown(self) -> None:
        if self._owned and self._provider is not None:
            try:
                self._provider.shutdown()
            except Exception:  # an exporter that cannot flush never stops the proxy
                log.exception("shutting the trace exporter down failed")
