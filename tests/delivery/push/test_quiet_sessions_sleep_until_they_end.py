"""A push session with nothing to do sleeps until it would end: it wakes for a frame, a change, or its idle end.

A worker holds a session per subscription that had work in the last DOVECOTE_PUSH_SESSION_IDLE_SECONDS.
Each used to look at its state every second, and the engine's renewal woke all of them at once each
second too: with a thousand quiet sessions the event loop spent bursts on them, and another
subscription's frames waited behind (`make bench`'s retry timing after the fairness figure).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from delivery.push.engine import PushEngine
from delivery.push.session import PushSession
from rooms.models import ApiKey
from tests.factories import make_event_type, make_push_claim, make_room, make_subscription
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)  # the relay's and the push engine's threads read the rows

SESSIONS = 20
QUIET_S = 3.0


def wait_until(condition: Callable[[], bool], what: Callable[[], str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what()}"
        time.sleep(0.05)


def test_quiet_sessions_do_not_wake_each_second_yet_take_a_frame_at_once_and_end_when_idle(
        client: Client, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    looks: Counter[int] = Counter()  # each pass of a session's loop asks how long it may sleep
    sleep_s = PushSession._sleep_s

    def counted(session: PushSession) -> float:
        looks[session.subscription_id] += 1
        return sleep_s(session)

    monkeypatch.setattr(PushSession, "_sleep_s", counted)
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscriptions = [make_subscription(room, push_url=receiver.url("/hook")) for _ in range(SESSIONS)]
    engine = PushEngine()
    engine.session_budget_s, engine.session_idle_s = 120.0, 2 * QUIET_S
    try:
        for subscription in subscriptions:
            engine.start_session(subscription.pk, make_push_claim(subscription))
        wait_until(lambda: len(looks) == SESSIONS, lambda: f"{len(looks)} of {SESSIONS} sessions started")

        looks.clear()
        time.sleep(QUIET_S)  # what is measured is how often they wake over this time, with nothing to do
        assert sum(looks.values()) <= SESSIONS, (
            f"{SESSIONS} quiet sessions looked at their state {sum(looks.values())} times in {QUIET_S} s: {looks}")

        started = time.monotonic()
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/", json.dumps(
            {"event_type": "order.created", "event_version": "1", "payload": {"n": 1}}),
            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content
        receiver.wait_for("/hook", SESSIONS, timeout=30)
        took = time.monotonic() - started
        assert took < engine.session_idle_s, f"the frames waited for a session's wake-up ({took:.1f} s)"

        wait_until(lambda: not engine.running(),
                   lambda: f"{len(engine.running())} sessions still running after their idle time",
                   timeout=engine.session_idle_s + 30)
    finally:
        engine.stop(timeout=10)


def test_a_quiet_session_sleeps_until_its_idle_end_and_a_busy_one_a_second_at_most() -> None:
    class Engine:
        session_idle_s, session_budget_s = 300.0, 60.0

    session: Any = PushSession(Engine(), 1, "token")  # type: ignore[arg-type]
    assert 59 < session._sleep_s() <= 60.1  # the budget ends first
    session.in_flight = 1
    assert session._sleep_s() == 1.0
