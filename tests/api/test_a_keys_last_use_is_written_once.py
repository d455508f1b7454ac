"""A key's last use is written at most once a minute, by one request, also when many requests share the key."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import DatabaseError, OperationalError, connection, connections, transaction
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext

from api.auth import KNOWN
from api.publish_lane import PublishLane
from delivery.models import Message
from rooms.models import ApiKey
from tests.api.test_publish_lane import EVENT, Answer, CountingDjango, new_room

pytestmark = pytest.mark.django_db(transaction=True)

START = datetime(2026, 1, 1, tzinfo=UTC)


def backend_waiting_on_a_lock(pid: int, timeout: float = 30) -> None:
    deadline, seen = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        with connection.cursor() as probe:
            probe.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
            row = probe.fetchone()
        seen = row[0] if row else None
        if seen == "Lock":
            return
        time.sleep(0.02)
    raise AssertionError(f"backend {pid} never waited on a lock (last seen waiting on {seen!r})")


def test_a_request_meanwhile_finds_the_mark_taken_and_writes_nothing() -> None:
    key, _ = ApiKey.issue("busy", is_admin=True)
    key.mark_used(START)
    release, locked, writer_pid, failed = threading.Event(), threading.Event(), [], []

    def hold_the_row() -> None:
        try:
            with transaction.atomic():
                list(ApiKey.objects.select_for_update().filter(pk=key.pk))
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    def mark() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                writer_pid.append(cursor.fetchone()[0])
            key.mark_used(START + timedelta(seconds=61))  # waits for the holder's row lock
        except Exception as error:  # noqa: BLE001 - reported by the test's thread
            failed.append(error)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    assert locked.wait(30)
    writer = threading.Thread(target=mark)
    writer.start()
    try:
        while not writer_pid and writer.is_alive():
            time.sleep(0.01)
        backend_waiting_on_a_lock(writer_pid[0])
        with CaptureQueriesContext(connection) as queries:
            key.mark_used(START + timedelta(seconds=62))
        assert [q["sql"] for q in queries] == []
    finally:
        release.set()
        holder.join(30)
        writer.join(30)
    assert not failed, failed
    key.refresh_from_db()
    assert key.last_used_at == START + timedelta(seconds=61)


def test_a_mark_that_could_not_be_written_is_tried_again_by_the_next_request(monkeypatch: pytest.MonkeyPatch) -> None:
    key, _ = ApiKey.issue("busy", is_admin=True)
    key.mark_used(START)

    def down(self: QuerySet, **fields: object) -> int:
        raise OperationalError("the database is down")

    with monkeypatch.context() as patch:
        patch.setattr(QuerySet, "update", down)
        with pytest.raises(DatabaseError):
            key.mark_used(START + timedelta(seconds=61))
    assert key.last_used_at == START
    key.mark_used(START + timedelta(seconds=62))
    key.refresh_from_db()
    assert key.last_used_at == START + timedelta(seconds=62)


def test_a_key_due_its_mark_publishes_through_the_lane_which_writes_it() -> None:
    room = new_room()
    _, plaintext = ApiKey.issue("room key", rooms=[room])
    django = CountingDjango()
    lane = PublishLane(django)
    assert Answer(lane, room.pk, EVENT, plaintext).status.startswith("202")  # the view: the key, its 202 headers
    cached = KNOWN.key(plaintext)
    assert cached is not None
    an_hour_ago = cached.last_used_at - timedelta(hours=1)  # type: ignore[operator]
    ApiKey.objects.filter(pk=cached.pk).update(last_used_at=an_hour_ago)
    cached.last_used_at = an_hour_ago
    answer = Answer(lane, room.pk, EVENT, plaintext)
    assert answer.status == "202 Accepted", answer.body
    assert len(django.calls) == 1  # the first publish only
    assert ApiKey.objects.get(pk=cached.pk).last_used_at == cached.last_used_at > an_hour_ago
    assert Message.objects.filter(room=room).count() == 2
