"""Schemathesis generates requests from /api/v1/schema/: no 5xx, and no response that contradicts the schema."""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.wsgi import application

# The live schema, served by the WSGI app (the schema view is public and reads no table).
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)


@pytest.fixture(autouse=True)
def keep_the_test_connection(db):
    """As Django's test client does: a request must not close the connection of the test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def seeded(db) -> str:
    """A room with an event type and subscriptions, so generated ids sometimes hit real rows."""
    from rooms.models import ApiKey
    from tests.factories import make_event_type, make_room, make_subscription

    room = make_room()
    make_event_type(room)
    make_subscription(room)
    make_subscription(room, type="pull", push_url="")
    return ApiKey.issue("fuzz", is_admin=True)[1]


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_the_api_answers_every_generated_request_within_its_schema(case, seeded: str) -> None:
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {seeded}"}
    case.call_and_validate(
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
