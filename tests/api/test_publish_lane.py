"""The publish lane (api/publish_lane.py) answers plain publishes itself, exactly as the view would, and hands
everything else to Django, whose answer is then the view's own."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import RequestFactory, override_settings

from api.auth import KNOWN
from api.publish_lane import PublishLane
from api.wsgi import application
from delivery.models import Delivery, Message
from dovecote.throttling import ApiKeyRateThrottle
from dovecote.wsgi import application as django_application
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

EVENT = {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 1}}


class Answer:
    def __init__(self, app: Any, room_id: int, body: object, key: str, path: str = "", **headers: str) -> None:
        raw = body if isinstance(body, str) else json.dumps(body)
        environ = RequestFactory().post(f"/api/v1/rooms/{room_id}/messages/{path}", raw,
                                        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
                                        **headers).environ
        self.status = ""
        self.headers: dict[str, str] = {}

        def start_response(status: str, headers: Iterable[tuple[str, str]], *rest: Any) -> None:
            self.status, self.headers = status, dict(headers)

        # As Django's test client does: the test's transaction must outlive the request.
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            chunks = app(environ, start_response)
            self.body = b"".join(chunks)
            if hasattr(chunks, "close"):
                chunks.close()
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture
def room():
    room = make_room()
    make_event_type(room)
    make_subscription(room, type="pull")
    return room


@pytest.fixture
def warm(room, admin_key: str) -> str:
    """The lane knows the key and the room, and the view's 202 headers: the view answered one publish."""
    assert Answer(application, room.pk, EVENT, admin_key).status.startswith("202")
    assert KNOWN.room_for(KNOWN.key(admin_key), admin_key, room.pk) is not None  # type: ignore[arg-type]
    return admin_key


def test_a_known_key_and_room_publish_through_the_lane_with_the_views_headers(room, warm: str) -> None:
    by_view = Answer(application, room.pk, EVENT, warm)  # already warm: this one came through the lane too
    published = Answer(application, room.pk, {**EVENT, "correlation_id": "c-1", "ordering_key": "k"}, warm)
    assert published.status == "202 Accepted", published.body
    reply = published.json()
    message = Message.objects.get(pk=reply["message_id"])
    assert (message.correlation_id, message.ordering_key, message.payload) == ("c-1", "k", {"order_id": 1})
    assert [d["destination"] for d in reply["destinations"]] == list(
        Delivery.objects.filter(message=message).values_list("destination", flat=True))
    expected = {k: v for k, v in by_view.headers.items() if k != "Content-Length"}
    assert {k: v for k, v in published.headers.items() if k != "Content-Length"} == expected
    assert published.headers["Content-Length"] == str(len(published.body))


@pytest.mark.parametrize("body", [
    {**EVENT, "colour": "red"},  # an unknown field
    {**EVENT, "event_type": ""},  # blank
    {**EVENT, "event_type": 1},  # DRF takes a number as text: the view judges
    {**EVENT, "payload": None},
    {"event_type": "order.created", "event_version": "1"},  # no payload
    {**EVENT, "correlation_id": None},
    {**EVENT, "correlation_id": "x" * 201},
    {**EVENT, "event_type": "no.such.type"},
    {**EVENT, "idempotency_key": "\ud800"},  # a lone surrogate
    [EVENT],
    "{not json",
])
def test_whatever_the_lane_does_not_take_is_answered_as_the_view_answers_it(room, warm: str, body: object) -> None:
    through_lane = Answer(application, room.pk, body, warm)
    by_view = Answer(django_application, room.pk, body, warm)
    assert (through_lane.status, through_lane.json()) == (by_view.status, by_view.json())
    assert not through_lane.status.startswith("202"), through_lane.body


class CountingDjango:
    """Django's application, counting the requests the lane hands it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        self.calls.append(environ["PATH_INFO"])
        return django_application(environ, start_response)


def new_room():
    room = make_room()
    make_event_type(room)
    make_subscription(room, type="pull")
    return room


@pytest.mark.parametrize("admin", [True, False])
def test_a_room_the_process_has_not_read_yet_is_read_by_the_lane_itself(room, warm: str, admin: bool) -> None:
    """A room made since the process read its key (or any room, after a restart) takes its first publishes
    through the lane: it reads the room once, and no publish waits for the view to fill the cache."""
    later = new_room()
    plaintext = warm if admin else ApiKey.issue("room key", rooms=[room, later])[1]
    django = CountingDjango()
    lane = PublishLane(django)
    assert Answer(lane, room.pk, EVENT, plaintext).status.startswith("202")  # the view: the key, its 202 headers
    assert KNOWN.room_for(KNOWN.key(plaintext), plaintext, later.pk) is None  # type: ignore[arg-type]
    answers = [Answer(lane, later.pk, {**EVENT, "correlation_id": f"c-{n}"}, plaintext) for n in range(3)]
    assert [a.status for a in answers] == ["202 Accepted"] * 3, [a.body for a in answers]
    assert django.calls == [f"/api/v1/rooms/{room.pk}/messages/"]  # the first publish only
    assert sorted(Message.objects.filter(room=later).values_list("correlation_id", flat=True)) == ["c-0", "c-1", "c-2"]


def test_a_room_the_key_does_not_name_or_that_does_not_exist_is_the_views_to_refuse(room) -> None:
    stranger = new_room()
    plaintext = ApiKey.issue("room key", rooms=[room])[1]
    django = CountingDjango()
    lane = PublishLane(django)
    assert Answer(lane, room.pk, EVENT, plaintext).status.startswith("202")
    refused, missing = Answer(lane, stranger.pk, EVENT, plaintext), Answer(lane, stranger.pk + 1000, EVENT, plaintext)
    assert refused.status.startswith("403") and missing.status.startswith("404"), (refused.body, missing.body)
    assert django.calls[1:] == [f"/api/v1/rooms/{stranger.pk}/messages/",
                                f"/api/v1/rooms/{stranger.pk + 1000}/messages/"]
    assert KNOWN.room_for(KNOWN.key(plaintext), plaintext, stranger.pk) is None  # type: ignore[arg-type]


def test_a_room_given_to_the_key_since_the_process_read_it_is_the_views_to_publish(room) -> None:
    later = new_room()
    key, plaintext = ApiKey.issue("room key", rooms=[room])
    assert Answer(application, room.pk, EVENT, plaintext).status.startswith("202")
    key.rooms.add(later)
    answer = Answer(application, later.pk, EVENT, plaintext)
    assert answer.status.startswith("202"), answer.body
    assert KNOWN.room_for(KNOWN.key(plaintext), plaintext, later.pk) is not None  # type: ignore[arg-type]


def test_text_the_view_would_trim_is_left_to_the_view(room, warm: str) -> None:
    answer = Answer(application, room.pk, {**EVENT, "event_type": " order.created "}, warm)
    assert answer.status.startswith("202"), answer.body
    assert Message.objects.get(pk=answer.json()["message_id"]).event_type == "order.created"


def test_a_revoked_key_is_refused_on_its_next_publish(room, warm: str) -> None:
    ApiKey.objects.filter(key_hash=KNOWN.key(warm).key_hash).update(revoked_at="2026-01-01T00:00:00Z")  # type: ignore[union-attr]
    answer = Answer(application, room.pk, EVENT, warm)
    assert answer.status.startswith("401"), answer.body


def test_a_room_key_that_loses_the_room_is_refused_on_its_next_publish(room) -> None:
    key, plaintext = ApiKey.issue("room key", rooms=[room])
    assert Answer(application, room.pk, EVENT, plaintext).status.startswith("202")
    key.rooms.clear()
    answer = Answer(application, room.pk, EVENT, plaintext)
    assert answer.status.startswith("403"), answer.body


def test_a_subscription_made_after_the_lane_read_the_room_gets_the_next_event(room, warm: str) -> None:
    newcomer = make_subscription(room, type="pull")
    reply = Answer(application, room.pk, EVENT, warm).json()
    assert newcomer.pk in {d["subscription_id"] for d in reply["destinations"]}, reply


def test_a_key_over_its_rate_is_refused_by_the_view(room, warm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # One minute no run used, standing still: the three publishes cannot fall into two windows.
    minute = 60 * (int(time.time()) // 60 + 1 + secrets.randbelow(10**9))
    monkeypatch.setattr(ApiKeyRateThrottle, "clock", staticmethod(lambda: minute + 10.0))
    with override_settings(DOVECOTE_API_RATE="1/min"):
        answers = [Answer(application, room.pk, EVENT, warm) for _ in range(3)]
    assert answers[-1].status.startswith("429"), [a.status for a in answers]
    assert "Retry-After" in answers[-1].headers


def test_a_plain_batch_goes_through_the_lane_and_a_bad_item_is_the_views_to_name(room, warm: str) -> None:
    batch = {"messages": [EVENT, {**EVENT, "correlation_id": "c-2"}]}
    by_view = Answer(django_application, room.pk, batch, warm, "batch/")
    through_lane = Answer(application, room.pk, batch, warm, "batch/")
    assert through_lane.status == by_view.status == "202 Accepted", through_lane.body
    assert [m["correlation_id"] for m in through_lane.json()["messages"]][1] == "c-2"
    assert {k: v for k, v in through_lane.headers.items() if k != "Content-Length"} == {
        k: v for k, v in by_view.headers.items() if k != "Content-Length"}
    bad = {"messages": [EVENT, {**EVENT, "event_type": "no.such.type"}, {**EVENT, "colour": "red"}]}
    refused, by_view = Answer(application, room.pk, bad, warm, "batch/"), Answer(django_application, room.pk, bad,
                                                                                 warm, "batch/")
    assert (refused.status, refused.json()) == (by_view.status, by_view.json())
    assert refused.status.startswith("400"), refused.body


def test_the_view_itself_reads_a_changed_key_again_before_it_publishes(client, room, warm: str) -> None:
    """Django's test client reaches PublishView without the lane: the view's own cache is verified at commit."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {warm}"}
    path = f"/api/v1/rooms/{room.pk}/messages/"
    assert client.post(path, EVENT, content_type="application/json", **headers).status_code == 202
    ApiKey.objects.filter(key_hash=KNOWN.key(warm).key_hash).update(revoked_at="2026-01-01T00:00:00Z")  # type: ignore[union-attr]
    refused = client.post(path, EVENT, content_type="application/json", **headers)
    assert refused.status_code == 401, refused.content
    assert Message.objects.filter(room=room).count() == 2  # warm's and the first one here
