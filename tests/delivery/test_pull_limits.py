"""Limits around pull and dead letters: long polls per process and key, reply bytes, subscriptions per room,
and replaying every dead letter in chunks; on the real broker and database."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.test import Client, override_settings

from api import long_polls
from delivery import dead_letters
from delivery.models import Delivery
from rooms.models import ApiKey
from tests.delivery.push.test_push_delivery import publish
from tests.delivery.test_pull_and_dead_letters import call
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("live_services")]


@pytest.fixture
def pull_room():
    room = make_room()
    make_event_type(room)
    return room, make_subscription(room, type="pull", push_url="")


def start_long_poll(base_url: str, key: str, subscription_id: int, replies: list) -> threading.Thread:
    def run() -> None:
        replies.append(httpx.post(f"{base_url}/api/v1/subscriptions/{subscription_id}/pull/",
                                  json={"wait_ms": 4000}, headers={"Authorization": f"Bearer {key}"}, timeout=30))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_for_held(count: int) -> None:
    deadline = time.monotonic() + 10
    while sum(long_polls._held.values()) < count:
        assert time.monotonic() < deadline, f"{count} long polls never started"
        time.sleep(0.01)


def test_long_polls_over_the_limits_are_429_at_once_and_short_pulls_still_answer(live_server, pull_room) -> None:
    room, subscription = pull_room
    first, second, third = (ApiKey.issue(name, rooms=[room])[1] for name in ("first", "second", "third"))
    replies: list[httpx.Response] = []
    threads = [start_long_poll(live_server.url, first, subscription.pk, replies)]
    wait_for_held(1)
    url = f"{live_server.url}/api/v1/subscriptions/{subscription.pk}/pull/"

    started = time.monotonic()
    same_key = httpx.post(url, json={"wait_ms": 4000}, headers={"Authorization": f"Bearer {first}"}, timeout=30)
    assert same_key.status_code == 429 and same_key.headers["Retry-After"] == "1"
    assert "DOVECOTE_LONG_POLLS_PER_KEY" in same_key.json()["detail"]
    threads.append(start_long_poll(live_server.url, second, subscription.pk, replies))
    wait_for_held(2)
    full = httpx.post(url, json={"wait_ms": 4000}, headers={"Authorization": f"Bearer {third}"}, timeout=30)
    assert full.status_code == 429 and "DOVECOTE_LONG_POLLS" in full.json()["detail"]
    short = httpx.post(url, json={"wait_ms": 0}, headers={"Authorization": f"Bearer {first}"}, timeout=30)
    assert short.status_code == 200 and short.json() == {"messages": []}
    assert httpx.get(f"{live_server.url}/healthz/", timeout=30).status_code in (200, 503)
    assert time.monotonic() - started < 3.5  # none of them waited for the long polls to end

    for thread in threads:
        thread.join(timeout=30)
    assert [reply.status_code for reply in replies] == [200, 200]
    assert sum(long_polls._held.values()) == 0


def hold_key_slot_in_another_process(key_id: int, lease_s: float, release_after_s: float | None) -> subprocess.Popen:
    """Start a process that takes one of the key's long-poll slots on the shared Redis, as another web server would.

    It prints "held" once it holds the slot; with `release_after_s` None it exits without releasing it
    (a web process that died holding it).
    """
    code = f"""
import os, sys, time, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()
from dovecote.throttling import release_shared_slot, take_shared_slot
token = take_shared_slot("long-polls:key-{key_id}", 1, {lease_s})
print("held" if token else "full", flush=True)
if token and {release_after_s!r} is not None:
    time.sleep({release_after_s!r})
    release_shared_slot("long-polls:key-{key_id}", token)
"""
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])


def test_a_keys_long_polls_are_counted_across_web_processes(live_server, pull_room) -> None:
    room, subscription = pull_room
    api_key, key = ApiKey.issue("shared", rooms=[room])
    url = f"{live_server.url}/api/v1/subscriptions/{subscription.pk}/pull/"
    other = hold_key_slot_in_another_process(api_key.pk, lease_s=60, release_after_s=None)
    assert other.stdout.readline().strip() == "held"
    other.wait(timeout=30)  # it exited holding the slot: only its lease frees it
    refused = httpx.post(url, json={"wait_ms": 2000}, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert refused.status_code == 429, refused.content
    assert "across the web servers (DOVECOTE_LONG_POLLS_PER_KEY)" in refused.json()["detail"]
    assert sum(long_polls._held.values()) == 0  # this process held none of them


def test_a_slot_left_by_a_dead_web_process_lapses_with_its_lease(live_server, pull_room) -> None:
    room, subscription = pull_room
    api_key, key = ApiKey.issue("lapsing", rooms=[room])
    url = f"{live_server.url}/api/v1/subscriptions/{subscription.pk}/pull/"
    other = hold_key_slot_in_another_process(api_key.pk, lease_s=2, release_after_s=None)
    assert other.stdout.readline().strip() == "held"
    other.wait(timeout=30)
    codes = []
    deadline = time.monotonic() + 30
    while not codes or codes[-1] != 200:
        assert time.monotonic() < deadline, f"the dead holder's slot never lapsed: {codes}"
        reply = httpx.post(url, json={"wait_ms": 100}, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        codes.append(reply.status_code)
        if reply.status_code != 200:
            time.sleep(0.2)
    assert set(codes) <= {429, 200}, codes


@override_settings(DOVECOTE_PULL_REPLY_MAX_BYTES=250_000)
def test_a_pull_reply_stops_at_its_byte_cap_and_the_rest_stays_queued(client: Client, pull_room) -> None:
    room, subscription = pull_room
    key = ApiKey.issue("consumer", rooms=[room])[1]
    for n in range(4):
        publish(client, key, room.pk, payload={"n": n, "blob": "x" * 100_000})
    deadline = time.monotonic() + 15
    while Delivery.objects.filter(subscription=subscription, status=Delivery.Status.QUEUED).count() < 4:
        assert time.monotonic() < deadline, "the relay did not send the messages"
        time.sleep(0.05)  # the relay sends after commit; all four wait on the queue before the first pull

    path = f"/api/v1/subscriptions/{subscription.pk}/pull/"
    replies: list[list[dict]] = []
    deadline = time.monotonic() + 15
    while sum(map(len, replies)) < 4 and time.monotonic() < deadline:
        replies.append(call(client, key, path, {"max_messages": 10, "wait_ms": 2000})["messages"])
    # Each body is about 100 KB: a third would take a reply past 250,000 bytes, so none holds more than two.
    assert len(replies[0]) == 2 and max(map(len, replies)) <= 2, [len(reply) for reply in replies]
    assert sorted(m["payload"]["n"] for reply in replies for m in reply) == [0, 1, 2, 3]


@override_settings(DOVECOTE_MAX_SUBSCRIPTIONS_PER_ROOM=2)
def test_a_room_holds_at_most_its_quota_of_subscriptions(client: Client, member) -> None:
    room = make_room()
    key = ApiKey.issue("owner", rooms=[room])[1]
    path = f"/api/v1/rooms/{room.pk}/subscriptions/"
    body = {"type": "pull"}
    replies = [client.post(path, json.dumps({**body, "name": f"s{n}"}), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {key}") for n in range(3)]
    assert [reply.status_code for reply in replies] == [201, 201, 409]
    assert "DOVECOTE_MAX_SUBSCRIPTIONS_PER_ROOM" in replies[2].json()["room"][0]
    client.force_login(member)
    page = client.post(f"/rooms/{room.pk}/subscriptions/new/", {"name": "ui", "type": "pull", "max_in_flight": 10,
                                                                "timeout_ms": 10_000})
    assert page.status_code == 200 and "the most a room may have" in page.content.decode()
    assert room.subscriptions.count() == 2


@override_settings(DOVECOTE_REPLAY_CHUNK=2)
def test_replaying_every_dead_letter_goes_in_chunks_of_short_transactions(pull_room,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    room, subscription = pull_room
    for _ in range(5):
        make_delivery(make_message(room), subscription, status=Delivery.Status.DEAD_LETTERED, attempts=3)
    chunks: list[int] = []
    real_chunk = dead_letters.replay_chunk
    monkeypatch.setattr(dead_letters, "replay_chunk",
                        lambda chosen, size: chunks.append(size) or real_chunk(chosen, size))

    replayed = dead_letters.replay(subscription, None)

    assert len(replayed) == 5 and len(chunks) == 4  # 2 + 2 + 1, then an empty one that ends it
    assert not Delivery.objects.filter(subscription=subscription, status=Delivery.Status.DEAD_LETTERED).exists()
    assert set(Delivery.objects.filter(pk__in=replayed).values_list("replays", flat=True)) == {1}
    # The relay sends them after commit: let it finish, or its writes race the database flush after the test.
    deadline = time.monotonic() + 10
    while Delivery.objects.filter(pk__in=replayed, status=Delivery.Status.PENDING).exists():
        assert time.monotonic() < deadline, "the relay did not send the replayed messages"
        time.sleep(0.05)
