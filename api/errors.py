"""DRF exception handling: a body over the limit is a 413, a taken name a 409, a database or broker down a 503."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import is_valid_path
from django.views.defaults import page_not_found
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from delivery.broker.base import BrokerError

log = logging.getLogger("dovecote.api")


@contextmanager
def unique_or_conflict(field: str, message: str) -> Iterator[None]:
    """Turn a unique-constraint violation in the block (a concurrent create) into a 409 naming `field`."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError:
        raise Conflict({field: [message]}) from None


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()


_ERRORS = {
    400: OpenApiResponse(OpenApiTypes.OBJECT, description="Invalid input: each bad field with its messages."),
    401: OpenApiResponse(ErrorSerializer, description="Missing, unknown or revoked API key."),
    403: OpenApiResponse(ErrorSerializer, description="The API key has no rights on this room or action."),
    404: OpenApiResponse(ErrorSerializer, description="No such id (or, on a list, an invalid cursor)."),
    409: OpenApiResponse(OpenApiTypes.OBJECT, description="The name is taken: the field with the reason."),
    413: OpenApiResponse(ErrorSerializer, description="The body is over the size limit."),
    429: OpenApiResponse(ErrorSerializer, description="Too many requests for this key; see `Retry-After`."),
    503: OpenApiResponse(ErrorSerializer, description="The database or the broker is unreachable; see `Retry-After`."),
}


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    """Return the schema of the errors `codes` plus those every endpoint may answer (401, 429)."""
    return {code: _ERRORS[code] for code in sorted({401, 429, *codes})}


# What a client is told to wait when a service Dovecote needs is unreachable (503).
UNAVAILABLE_RETRY_AFTER_S = 5


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DOVECOTE_MAX_BODY_BYTES
        return Response({"detail": f"request body is over the limit of {limit} bytes"}, status=413)
    if (service := unavailable_service(exc)) is not None:
        log.warning("answered 503: %s unreachable (%s)", service, type(exc).__name__)
        set_rollback()
        return Response({"detail": f"{service} is unreachable; retry in a few seconds"}, status=503,
                        headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)})
    return drf_exception_handler(exc, context)


def unavailable_service(exc: Exception) -> str | None:
    """Name the service whose outage `exc` reports (the database or the broker), or None for any other error."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        return "the database"
    if isinstance(exc, BrokerError):
        return "the message broker"
    return None


class Conflict(APIException):
    """The request clashes with the current state (a taken name, a paused subscription)."""

    status_code = 409
    default_detail = "conflict with the current state"
    default_code = "conflict"


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Answer a path no route matches: JSON under /api/ (naming the path meant, when only its slash is missing)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": no_endpoint(request)}, status=404)
    return page_not_found(request, exception)


def no_endpoint(request: HttpRequest) -> str:
    """Say that no API endpoint answers at the request's path, and which one does when a slash is missing."""
    with_slash = f"{request.path_info}/"
    if not request.path_info.endswith("/") and is_valid_path(with_slash, getattr(request, "urlconf", None)):
        meant = f"{request.path}/"
        return (f"no API endpoint at {request.path}; did you mean {meant}? Every API path ends with a slash "
                f"(nothing was done: send the request again to {meant})")
    return f"no API endpoint at {request.path}"


FIELD_ERRORS = {
    "type": "object",
    "additionalProperties": {},
    "description": "Each bad field (or `detail`, or `non_field_errors`) with its messages; a batch names its "
                   "items by index under `messages`. A field the endpoint does not know is refused, never "
                   "ignored: `Unknown field. Did you mean \"…\"?` names the field meant when the name is a "
                   "near miss.",
    "example": {"event_type": ["This field is required."],
                "delivery_attemps": ['Unknown field. Did you mean "delivery_attempts"?']},
}


def document_common_replies(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    """Declare what every operation may answer beyond its own replies (a drf-spectacular postprocessing hook).

    A 429 carries `Retry-After`; an operation that takes a body answers 415 to one that is not JSON;
    any request whose body is over the size limit gets 413 before it reaches the operation.
    The free-form bodies of 400 and 409 (each bad field with its messages) become one component,
    `FieldErrors`, where they were an inline object per operation (a model per operation in clients).
    Request bodies take no field they do not list (dovecote/inputs.py): their objects say so.
    """
    result.setdefault("components", {}).setdefault("schemas", {})["FieldErrors"] = FIELD_ERRORS
    close_request_bodies(result)
    field_errors = {"$ref": "#/components/schemas/FieldErrors"}
    retry_after = {"schema": {"type": "integer", "minimum": 1}, "required": True,
                   "description": "Seconds until this key's next window opens."}
    not_json = {"description": "The body is not `application/json`.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    too_large = {"description": "The request body is over the size limit (DOVECOTE_MAX_BODY_BYTES).",
                 "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            if too_many := responses.get("429"):
                too_many.setdefault("headers", {})["Retry-After"] = retry_after
            for code in ("400", "409"):
                body = responses.get(code, {}).get("content", {}).get("application/json", {})
                if body.get("schema") == {"type": "object", "additionalProperties": {}}:
                    body["schema"] = field_errors
            if "requestBody" in operation:
                responses.setdefault("415", not_json)
            responses.setdefault("413", too_large)
            operation["responses"] = dict(sorted(responses.items()))
    return result


def close_request_bodies(result: dict[str, Any]) -> None:
    """Write `additionalProperties: false` on every object schema a request body uses, nested ones too."""
    components = result.get("components", {}).get("schemas", {})
    pending = [content.get("schema", {}) for operations in result.get("paths", {}).values()
               for operation in operations.values()
               for content in operation.get("requestBody", {}).get("content", {}).values()]
    seen: set[str] = set()
    while pending:
        schema = pending.pop()
        if (ref := schema.get("$ref", "")).startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[1]
            if name not in seen:
                seen.add(name)
                pending.append(components[name])
            continue
        if "properties" in schema:
            schema.setdefault("additionalProperties", False)
            pending.extend(schema["properties"].values())
        pending.extend(part for key in ("allOf", "oneOf", "anyOf") for part in schema.get(key, []))
        if isinstance(schema.get("items"), dict):
            pending.append(schema["items"])
