"""A real worker logs through Dovecote's formatter: a receiver's error text cannot break a line.

Celery no longer takes over the root logger (CELERY_WORKER_HIJACK_ROOT_LOGGER), so a worker's
lines, Celery's own included, come out as escaped key=value records, or as JSON objects.
"""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from delivery.models import Delivery
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply

pytestmark = pytest.mark.django_db(transaction=True)

FORGED = b"upstream said:\nts=2026-01-01 level=INFO msg=forged"


def dead_letter_one(client: Client, receiver: Receiver) -> str:
    room = make_room(delivery_attempts=0)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    make_subscription(room, push_url=receiver.script("/broken", lambda n: Reply(500, body=FORGED)))
    response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                           json.dumps({"event_type": "order.created", "event_version": "1", "payload": {}}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    message_id = response.json()["message_id"]
    deadline = time.monotonic() + 20
    while not Delivery.objects.filter(message_id=message_id, status="dead_lettered").exists():
        assert time.monotonic() < deadline, "the delivery was not dead-lettered"
        time.sleep(0.1)
    return message_id


def wait_for_line(worker, text: str) -> list[str]:
    deadline = time.monotonic() + 10
    while True:
        lines = worker.log_path.read_text(errors="replace").splitlines()
        found = [line for line in lines if text in line]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_a_workers_log_line_with_a_newline_in_a_value_stays_one_line(
        client: Client, receiver: Receiver, start_worker) -> None:
    worker = start_worker("keyvalue")
    message_id = dead_letter_one(client, receiver)
    [line] = wait_for_line(worker, "dead-lettered")
    assert line.startswith("ts=") and "level=WARNING logger=delivery.settle" in line
    # The receiver's newline never reaches the log as one: the stored error is one line of readable text
    # (dovecote/error_text.py), and the log format escapes any newline a value still has.
    assert "upstream said: ts=2026-01-01 level=INFO msg=forged" in line
    assert f"message_id={message_id}" in line
    assert not [other for other in worker.tail(500).splitlines() if other.startswith("ts=2026-01-01")]
    assert wait_for_line(worker, "logger=celery.worker.consumer.connection"), "celery's own lines use the format"


def test_json_logs_are_one_object_per_line_with_the_delivery_fields(
        client: Client, receiver: Receiver, start_worker) -> None:
    worker = start_worker("json", DOVECOTE_LOG_FORMAT="json")
    message_id = dead_letter_one(client, receiver)
    [line] = wait_for_line(worker, "dead-lettered")
    record = json.loads(line)
    assert record["level"] == "WARNING" and record["logger"] == "delivery.settle"
    assert record["message_id"] == message_id and record["attempt"] == 1
    assert isinstance(record["subscription"], int) and record["correlation_id"]
    assert record["msg"].endswith(FORGED.decode().replace("\n", " "))
