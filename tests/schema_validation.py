"""Every API reply the suite receives is checked against the OpenAPI schema, strictly.

`CheckApiReplies` (a middleware that tests/settings.py puts outermost) validates each response to a
documented operation under /api/v1/ with openapi-core, whichever way the request came: the Django
test client, the live server the client and receiver tests call over HTTP, or schemathesis. A reply
whose status the operation does not declare, whose content type differs, whose body breaks its
schema, or whose objects carry a property the schema does not name, is recorded; the autouse
fixture `api_replies_match_the_schema` (tests/conftest.py) fails the test that made it.
Requests are not checked: the suite sends invalid ones on purpose, and their 400s are checked.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponse
from openapi_core import OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest, DjangoOpenAPIResponse
from openapi_core.templating.paths.exceptions import OperationNotFound, PathNotFound

API_PREFIX = "/api/v1/"
NOT_OPERATIONS = ("/api/v1/schema/", "/api/v1/docs/")

_lock = threading.Lock()
_violations: list[str] = []


@cache
def served_schema() -> dict[str, Any]:
    """Return the schema exactly as /api/v1/schema/ serves it, as plain JSON data."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(schema))


def closed(schema: Any) -> Any:
    """Return `schema` with `additionalProperties: false` on every object that lists its properties.

    drf-spectacular leaves objects open, so an undocumented field in a reply would pass unseen.
    """
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: closed(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    return schema


@cache
def strict_spec() -> OpenAPI:
    spec = copy.deepcopy(served_schema())
    spec["components"]["schemas"] = closed(spec["components"]["schemas"])
    spec["paths"] = closed(spec["paths"])
    return OpenAPI.from_dict(spec)


class RepliedRequest(DjangoOpenAPIRequest):
    """The request as openapi-core needs it to find the operation; its body is never read.

    Reading `request.body` after DRF consumed the stream raises, and before the view runs it would
    turn the size limit's 413 into an exception here.
    """

    @property
    def body(self) -> bytes | None:
        return None


def check_reply(request: HttpRequest, response: HttpResponse) -> str | None:
    """Return why `response` breaks the schema, or None when it matches (or is no documented operation)."""
    if not request.path.startswith(API_PREFIX) or request.path.startswith(NOT_OPERATIONS):
        return None
    try:
        strict_spec().validate_response(RepliedRequest(request), DjangoOpenAPIResponse(response))
    except (PathNotFound, OperationNotFound):
        return None  # an unknown path or method: no operation to hold it to
    except Exception as error:  # noqa: BLE001 - every openapi-core finding is a violation
        causes = [str(error), *(str(e) for e in getattr(error, "schema_errors", []) or [])]
        body = response.content[:500].decode(errors="replace") if not response.streaming else "(stream)"
        return f"{request.method} {request.path} -> {response.status_code}: {'; '.join(causes)}\n  body: {body}"
    return None


class CheckApiReplies:
    """Middleware: record every API reply that contradicts the schema (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if violation := check_reply(request, response):
            with _lock:
                _violations.append(violation)
        return response


def take_violations() -> list[str]:
    """Return the violations recorded since the last call, and forget them."""
    with _lock:
        taken = list(_violations)
        _violations.clear()
    return taken
