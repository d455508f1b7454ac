"""The OpenAPI schema says what the API does (issue 19's findings), and the suite's check of replies bites.

Every API reply the suite receives is validated against the schema by tests/schema_validation.py;
these tests pin the schema's shape where generators went wrong before, and show the check catches lies.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.http import JsonResponse
from django.test import Client, RequestFactory
from django.urls import resolve
from openapi_spec_validator import validate

from tests.schema_validation import check_reply, served_schema


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return served_schema()


def operation(schema: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    return schema["paths"][f"/api/v1/{path}"][method]


def component(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return schema["components"]["schemas"][name]


def test_the_schema_is_valid_openapi_3_0(schema: dict[str, Any]) -> None:
    assert schema["openapi"] == "3.0.3"
    validate(schema)


def test_the_served_schema_is_the_one_the_suite_checks_replies_against(client: Client) -> None:
    served = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert served.status_code == 200 and served.json() == served_schema()


@pytest.mark.parametrize("path", ["rooms/{room_id}/messages/", "rooms/{room_id}/messages/batch/"])
def test_publish_declares_the_x_correlation_id_and_traceparent_headers(schema: dict[str, Any], path: str) -> None:
    headers = [p for p in operation(schema, path, "post")["parameters"] if p["in"] == "header"]
    assert [(h["name"], h.get("required", False), h["schema"]["type"]) for h in headers] == [
        ("X-Correlation-ID", False, "string"), ("traceparent", False, "string")]


@pytest.mark.parametrize(("path", "method", "body"), [
    ("rooms/", "post", "RoomRequest"),
    ("rooms/{room_id}/", "patch", "PatchedRoomRequest"),
    ("rooms/{room_id}/event-types/", "post", "EventTypeRequest"),
    ("rooms/{room_id}/subscriptions/", "post", "SubscriptionRequest"),
    ("subscriptions/{subscription_id}/", "patch", "PatchedSubscriptionRequest"),
])
def test_request_bodies_have_their_own_components_without_read_only_fields(
    schema: dict[str, Any], path: str, method: str, body: str,
) -> None:
    ref = operation(schema, path, method)["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == f"#/components/schemas/{body}"
    fields = component(schema, body)["properties"]
    assert not {"id", "address", "created_at", "updated_at", "status", "signing_secret", "destination"} & set(fields)
    assert not any(field.get("readOnly") for field in fields.values())


def test_push_url_is_nullable_in_a_way_openapi_3_0_honours(schema: dict[str, Any]) -> None:
    for name in ("Subscription", "SubscriptionRequest", "PatchedSubscriptionRequest"):
        push_url = component(schema, name)["properties"]["push_url"]
        assert push_url["type"] == "string" and push_url["nullable"] is True and "oneOf" not in push_url


def test_purge_is_a_post_and_the_delete_form_is_deprecated(schema: dict[str, Any]) -> None:
    purge = operation(schema, "subscriptions/{subscription_id}/dead-letters/purge/", "post")
    assert purge["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("DeadLetterSelectionRequest")
    assert not purge.get("deprecated")
    old = operation(schema, "subscriptions/{subscription_id}/dead-letters/", "delete")
    assert old["deprecated"] is True and "2027-06-01" in old["description"]
    assert set(old["responses"]["200"]["headers"]) == {"Deprecation", "Sunset", "Link"}


def test_every_429_names_retry_after_and_every_body_taking_operation_its_415(schema: dict[str, Any]) -> None:
    for path, methods in schema["paths"].items():
        for method, spec in methods.items():
            assert "Retry-After" in spec["responses"]["429"]["headers"], (method, path)
            assert ("415" in spec["responses"]) == ("requestBody" in spec), (method, path)


def a_reply(path: str, body: dict[str, Any], status: int = 200) -> str | None:
    request = RequestFactory().get(path)
    request.resolver_match = resolve(path)
    return check_reply(request, JsonResponse(body, status=status))


@pytest.mark.parametrize(("body", "status", "finding"), [
    ({"name": "k", "admin": True, "rooms": None, "secret": "x"}, 200, "'secret' was unexpected"),
    ({"name": "k", "admin": "yes", "rooms": None}, 200, "is not of type 'boolean'"),
    ({"name": "k", "admin": True}, 200, "'rooms' is a required property"),
    ({"detail": "teapot"}, 418, "418"),
])
def test_the_reply_check_catches_what_the_schema_does_not_say(body: dict[str, Any], status: int, finding: str) -> None:
    assert a_reply("/api/v1/whoami/", {"name": "k", "admin": True, "rooms": None}) is None
    violation = a_reply("/api/v1/whoami/", body, status)
    assert violation is not None and finding in violation


def test_the_reply_check_leaves_what_is_no_operation_alone() -> None:
    assert a_reply("/api/v1/schema/", {"anything": 1}) is None
    request = RequestFactory().get("/healthz/")
    assert check_reply(request, JsonResponse({"anything": 1})) is None
