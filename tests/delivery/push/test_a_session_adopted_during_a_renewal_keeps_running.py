"""A session adopted while the engine's renewal runs is not stopped by that renewal's answer.

The renewal (every second) and session starts run on different bookkeeper threads. A claim adopted
after the renewal's statement read the claims is not in its answer, and the engine took "not
owned" for "lost" and stopped that session right after it started. Only the sessions the renewal
was asked about are refreshed from its answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from delivery.push import claims
from delivery.push.engine import PushEngine

NEVER = "never refreshed"


class FakeSession:
    def __init__(self, adopted: bool) -> None:
        self.subscription = object() if adopted else None
        self.accepting = True
        self.refreshed_with: object = NEVER

    def report(self) -> claims.Report:
        return claims.Report(sized_for=1, hot=False)

    def refreshed(self, held: claims.Held | None) -> None:
        self.refreshed_with = held

    def is_idle(self) -> bool:
        return False


class FakeBookkeeper:
    """Answers the renewal after `meanwhile` has run, as a session's adoption finishing during it."""

    def __init__(self, answer: dict[int, claims.Held], meanwhile: Callable[[], None]) -> None:
        self.answer, self.meanwhile = answer, meanwhile
        self.asked: list[dict[int, claims.Report]] = []

    async def call(self, function: Callable[..., Any], token: str, reports: dict[int, claims.Report],
                   urgent: bool = False) -> dict[int, claims.Held]:
        assert function is claims.renew and urgent
        self.asked.append(reports)
        await asyncio.sleep(0)
        self.meanwhile()
        return self.answer


class FakeEngine:
    token = "engine"
    stopping = True  # no hot subscriptions to join here

    def __init__(self) -> None:
        self.sessions: dict[int, FakeSession] = {}
        self.bookkeeper: FakeBookkeeper | None = None


def test_a_session_adopted_while_the_renewal_ran_is_left_as_its_adoption_made_it() -> None:
    engine = FakeEngine()
    running, starting, restarted = FakeSession(adopted=True), FakeSession(adopted=False), FakeSession(adopted=True)
    engine.sessions = {1: running, 2: starting, 3: FakeSession(adopted=True)}
    held = claims.Held(None, "v", 1, 8)

    def meanwhile() -> None:
        starting.subscription = object()  # its adoption came back while the renewal ran
        engine.sessions[3] = restarted  # subscription 3's session ended and a new one was adopted

    engine.bookkeeper = FakeBookkeeper({1: held}, meanwhile)
    asyncio.run(PushEngine._refresh(engine))  # type: ignore[arg-type]

    assert list(engine.bookkeeper.asked[0]) == [1, 3], engine.bookkeeper.asked
    assert running.refreshed_with is held
    assert starting.refreshed_with is NEVER, f"adopted meanwhile, yet refreshed with {starting.refreshed_with}"
    assert restarted.refreshed_with is NEVER, f"the new session was refreshed with {restarted.refreshed_with}"
