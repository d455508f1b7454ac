"""OpenTelemetry tracing, off unless the standard OTEL_* variables ask for it (docs/operations.md#tracing).

On when OTEL_TRACES_EXPORTER names an exporter (`otlp`, `console`) or an OTLP endpoint is set
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_SDK_DISABLED=true.
The SDK reads the rest itself (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER,
the exporter's headers and timeouts). Off, nothing is recorded and `enabled()` is False, so the
delivery path skips its spans; a publisher's W3C `traceparent` still travels to the receivers.

A message's trace: the publish request's span (continuing the publisher's `traceparent`), a
send span per destination, then per push attempt a client span and its settlement. The
`traceparent` of the publish is kept on the message and sent in each broker frame's headers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

TRACEPARENT = "traceparent"
# version-traceid-spanid-flags (W3C Trace Context), lower-case hex, ids not all zeros.
TRACEPARENT_FORMAT = re.compile(r"^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$")
ATTRIBUTE_PREFIX = "dovecote."

_provider: TracerProvider | None = None


class TracingConfigError(Exception):
    """An OTEL_* variable asks for something Dovecote cannot export to."""


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Say whether the OTEL_* variables ask for tracing."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def exporter_for(name: str) -> SpanExporter:
    if name in ("", "otlp"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: PLC0415 - only when on

        return OTLPSpanExporter()
    if name == "console":
        return ConsoleSpanExporter()
    raise TracingConfigError(f"OTEL_TRACES_EXPORTER={name!r}: Dovecote exports traces with otlp (HTTP) or console")


def configure(environ: Mapping[str, str] = os.environ) -> None:
    """Start tracing in this process if the environment asks for it (once; later calls do nothing)."""
    if _provider is not None or not wanted(environ):
        return
    exporter = exporter_for(environ.get("OTEL_TRACES_EXPORTER", "").strip().lower())
    provider = TracerProvider(resource=Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME",
                                                                                     "dovecote")}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    use_provider(provider)


def use_provider(provider: TracerProvider | None) -> None:
    """Record spans with `provider` (None: stop recording); tests give one with an in-memory exporter."""
    global _provider
    _provider = provider


def enabled() -> bool:
    return _provider is not None


def tracer() -> trace.Tracer:
    """Dovecote's tracer: the configured provider's, or a no-op one while tracing is off."""
    return _provider.get_tracer("dovecote") if _provider is not None else trace.NoOpTracer()


def valid_traceparent(value: str | None) -> str:
    """The value if it is a well-formed W3C traceparent of version 00, else ""."""
    value = (value or "").strip().lower()
    return value if TRACEPARENT_FORMAT.match(value) else ""


def context_of(traceparent: str) -> Context | None:
    """The trace context a traceparent names (None when there is none, to start a new trace)."""
    return propagate.extract({TRACEPARENT: traceparent}) if traceparent else None


def current_traceparent() -> str:
    """The traceparent of the current span (what to send onward), or "" outside a recorded span."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return valid_traceparent(carrier.get(TRACEPARENT))


def traceparent_of(span: trace.Span) -> str:
    """The traceparent naming `span`, for a receiver or a frame to continue from."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    return valid_traceparent(carrier.get(TRACEPARENT))
