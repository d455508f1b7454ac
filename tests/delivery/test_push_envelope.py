"""The push envelope's bytes (delivery/frames.py `envelope`): the JSON a receiver gets and its signature covers."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from delivery.frames import envelope
from delivery.models import Message
from rooms.models import Room

PUBLISHED = datetime(2026, 12, 6, 17, 0, 0, 123456, tzinfo=UTC)


def message(payload: Any) -> Message:
    return Message(id=uuid.UUID("5f0c6a4e-8f4b-4d1e-9a57-2b6f7b0c9d11"), room=Room(name="shop"),
                   event_type="order.created", event_version="1", correlation_id="order-1", payload=payload,
                   created_at=PUBLISHED)


def json_module(payload: Any) -> bytes:
    """The envelope as the json module writes it, compact and in UTF-8."""
    return json.dumps({"id": "5f0c6a4e-8f4b-4d1e-9a57-2b6f7b0c9d11", "type": "order.created", "version": "1",
                       "room": "shop", "correlation_id": "order-1", "timestamp": "2026-12-06T17:00:00.123456Z",
                       "data": payload}, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize("payload", [
    {"order_id": 1, "total": 19.99, "paid": True, "note": None, "items": [{"sku": "a-1", "qty": 2}], "tags": []},
    {"text": 'é ✓ 漢字 "quoted" back\\slash / tab\t newline\n nul\x00 unit\x1f del\x7f line\u2028sep'},
    {"big": 9223372036854775807, "small": -9223372036854775808, "zero": 0, "negative": -1.5, "e": 1e16},
    {"b": 2, "a": 1, "nested": {"z": {"y": [1, [2, [3]]]}}},
    [1, "two", 3.0],
    "a string",
])
def test_the_envelope_is_the_json_modules_text(payload: Any) -> None:
    assert envelope(message(payload)) == json_module(payload)


def test_a_float_orjson_spells_otherwise_is_the_same_number() -> None:
    payload = {"tiny": 1e-05, "tinier": -3.940985129369714e-09}

    written = envelope(message(payload))  # orjson writes 0.00001 and -3.940985129369714e-9

    assert json.loads(written) == json.loads(json_module(payload))


def test_an_integer_beyond_64_bits_is_written_by_the_json_module() -> None:
    payload = {"huge": 2**70, "negative": -(2**64)}

    assert envelope(message(payload)) == json_module(payload)
