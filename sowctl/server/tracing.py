"""OpenTelemetry traces of requests, when the standard ``OTEL_*`` variables ask for them.

One server span per request, named ``METHOD /route/{template}``, a child of the incoming
``traceparent`` when there is one (W3C trace context, or whatever ``OTEL_PROPAGATORS`` names).
The OpenTelemetry SDK does everything else (exporters, sampling, batching), configured as it
documents: ``OTEL_TRACES_EXPORTER`` (``otlp`` by default, ``console``, ``none``),
``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER``...

The SDK is an optional extra (``otel``: ``opentelemetry-sdk`` and
``opentelemetry-exporter-otlp-proto-http``): without it, and with those variables set,
``serve`` prints one warning line and serves without traces.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

# Any of these set asks for traces (unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none).
ASKING = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
EXTRA_HINT = "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")

_tracer: Any = None  # this process's tracer; None: no traces


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if _exporters(environ) == ["none"]:
        return False
    return any(environ.get(name, "").strip() for name in ASKING)


def missing_sdk(environ: Mapping[str, str] = os.environ) -> str | None:
    """The one warning line when traces are asked for but the SDK is not installed, else None."""
    if not wanted(environ):
        return None
    try:
        import opentelemetry.sdk.trace
    except ImportError:
        asked = ", ".join(name for name in ASKING if environ.get(name, "").strip())
        return f"warning: {asked} set, but the OpenTelemetry SDK is not installed ({EXTRA_HINT}): no traces"
    if "otlp" in _exporters(environ):
        try:
            import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        except ImportError:
            return f"warning: the OTLP exporter is not installed ({EXTRA_HINT}): no traces"
    return None


def start_from_environment() -> Any:
    """In a worker, after the fork: trace requests as the ``OTEL_*`` variables say, and return
    the SDK's ``TracerProvider``; None when they do not ask, or the SDK is missing (``serve``
    already warned)."""
    if not wanted() or missing_sdk() is not None:
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "sowctl"}))
    provider = TracerProvider(resource=resource)  # the sampler: OTEL_TRACES_SAMPLER
    for exporter in _exporters(os.environ) or ["otlp"]:
        made = _exporter(exporter)
        if made is not None:
            provider.add_span_processor(BatchSpanProcessor(made))  # OTEL_BSP_*
    install(provider)
    return provider


def install(provider: Any) -> None:
    """Trace requests with ``provider``'s tracer (an SDK ``TracerProvider``); None: stop tracing."""
    global _tracer
    _tracer = provider.get_tracer("sowctl.server") if provider is not None else None


def _exporters(environ: Mapping[str, str]) -> list[str]:
    text = environ.get("OTEL_TRACES_EXPORTER", "")
    return [part.strip().lower() for part in text.split(",") if part.strip()]


def _exporter(name: str) -> Any:
    if name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    return None


def traceparent(environ: Mapping[str, Any]) -> str | None:
    """The request's ``traceparent`` header when it is well formed (W3C), else None."""
    value = str(environ.get("HTTP_TRACEPARENT", "")).strip().lower()
    return value if _TRACEPARENT.match(value) and not value.startswith("ff") else None


def start_span(environ: Mapping[str, Any]) -> Any:
    """The request's server span (not yet named by its route), or None when not tracing."""
    tracer = _tracer
    if tracer is None:
        return None
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    carrier = {
        name: str(environ[key])
        for name, key in (("traceparent", "HTTP_TRACEPARENT"), ("tracestate", "HTTP_TRACESTATE"))
        if key in environ
    }
    method = str(environ.get("REQUEST_METHOD", "GET"))
    return tracer.start_span(
        method,
        context=propagate.extract(carrier),
        kind=SpanKind.SERVER,
        attributes={"http.request.method": method, "url.scheme": str(environ.get("wsgi.url_scheme", "http"))},
    )


def end_span(span: Any, route: str, status: str, request_id: str | None) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.update_name(f"{span.attributes.get('http.request.method', '')} {route}".strip())
    span.set_attribute("http.route", route)
    if status.isdigit():
        span.set_attribute("http.response.status_code", int(status))
        if int(status) >= 500:
            span.set_status(Status(StatusCode.ERROR))
    if request_id:
        span.set_attribute("sowctl.request_id", request_id)
    span.end()
