"""One event loop per worker process runs every push session the process was given.

The Celery task `deliver_push_sessions` hands subscriptions to its process's engine and returns at
once: a session costs an asyncio task and a broker consumer, not a worker thread, so a
worker runs as many sessions as there are subscriptions with work, and a slow receiver holds
only its own session's POSTs: each POST holds a slot of the engine's socket budget (budget.py),
which no room and no subscription may take all of. Every second the engine renews the claims
of all its sessions and rereads their subscriptions in one round trip (claims.py), tells
idle sessions whether a retry is due soon, and joins the hot subscriptions of other workers
(a session here too, each holding a share of the subscription's max_in_flight: claims.py).
`stop` (the worker's shutdown) lets every session finish its POSTs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from concurrent.futures import Future

import uvloop
from django.conf import settings

from delivery.broker.shared import shared_broker
from delivery.push import claims
from delivery.push.bookkeeper import Bookkeeper
from delivery.push.budget import SocketBudget
from delivery.push.rate import RateLimiter
from delivery.push.session import PushSession
from delivery.push.steps import Steps
from delivery.transports import PushTransport

log = logging.getLogger("delivery.push")

REFRESH_S = 1.0  # how often claims are renewed and subscriptions reread
STOP_GRACE_S = 5.0  # beyond the longest timeout_ms, for sessions to finish when the worker stops


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop (faster sockets than asyncio's)."""
    return uvloop.new_event_loop()


class PushEngine:
    """This process's event loop thread and the push sessions on it."""

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex  # the claim of every session this engine runs
        self.broker = shared_broker()
        self.bookkeeper = Bookkeeper(self.broker)
        self.steps = Steps.for_this_database(self.bookkeeper)  # the ledger on PostgreSQL, the ORM elsewhere
        self.budget = SocketBudget.from_settings()  # sockets and POSTs in flight, shared fairly (budget.py)
        self.transport = PushTransport(max_sockets=self.budget.total)
        self.rate = RateLimiter()
        self.session_budget_s = float(settings.DOVECOTE_PUSH_SESSION_SECONDS)
        self.session_idle_s = float(settings.DOVECOTE_PUSH_SESSION_IDLE_SECONDS)
        self.sessions: dict[int, PushSession] = {}
        self.stopping = False
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self._run, name="push-engine", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.create_task(self._refresh_forever())
        self.loop.run_forever()

    # -- from other threads ----------------------------------------------------------------------

    def start_session(self, subscription_id: int, token: str) -> None:
        """Run a session for the subscription claimed with `token` (returns at once)."""
        self.loop.call_soon_threadsafe(self._start, subscription_id, token)

    def stop(self, timeout: float | None = None) -> None:
        """Stop taking frames, let the POSTs under way finish, end every session; wait for it."""
        future: Future[None] = asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
        try:
            future.result(timeout)
        except TimeoutError:
            log.warning("push engine: sessions still running after %s s; their frames come back", timeout)
        self.bookkeeper.close()

    def running(self) -> list[int]:
        """The subscriptions this engine has a session for (a snapshot)."""
        return list(self.sessions)

    def run_session(self, subscription_id: int, token: str, timeout: float) -> int:
        """Run a session for the subscription claimed with `token` and wait until it ends; return the frames it settled.

        For commands and tests: workers start sessions with `start_session` and never wait.
        """
        async def run() -> int:
            session = PushSession(self, subscription_id, token)
            self.sessions[subscription_id] = session
            try:
                await session.run()
            finally:
                self.sessions.pop(subscription_id, None)
            return session.settled

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    # -- on the event loop ------------------------------------------------------------------------

    async def adopt(self, subscription_id: int, token: str) -> claims.Held | None:
        """Take over a starting session's claim, batched with the others starting; its subscription, None if lost."""
        return (await self.bookkeeper.batch(claims.adopt_batched, [(subscription_id, token, self.token)]))[0]

    def _start(self, subscription_id: int, token: str) -> None:
        if self.stopping:
            return
        if (running := self.sessions.get(subscription_id)) is not None and running.accepting:
            # This engine already runs it (a claim that lapsed while the loop was busy): keep that session.
            self.loop.create_task(self.adopt(subscription_id, token))
            return
        session = PushSession(self, subscription_id, token)
        self.sessions[subscription_id] = session
        task = self.loop.create_task(session.run())
        task.add_done_callback(lambda done: self._ended(subscription_id, session, done))

    def _ended(self, subscription_id: int, session: PushSession, task: asyncio.Task[None]) -> None:
        if self.sessions.get(subscription_id) is session:
            del self.sessions[subscription_id]
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("push session for subscription %s failed", subscription_id, exc_info=error)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            try:
                await self._refresh()
            except Exception:
                log.exception("push engine: could not renew its claims")

    async def _refresh(self) -> None:
        # The adopted sessions (from then on their claims are the engine's), and what each reports.
        reporting = {pk: session for pk, session in self.sessions.items() if session.subscription is not None}
        reports = {pk: session.report() for pk, session in reporting.items()}
        # Before the work waiting: a renewal later than CLAIM_TTL would lose every claim, and every session.
        owned = await self.bookkeeper.call(claims.renew, self.token, reports, urgent=True)
        for subscription_id, session in reporting.items():
            # Only the sessions it renewed: one adopted while it ran (on another bookkeeper thread) holds a
            # claim the renewal's statement may not have seen, and "not owned" would have stopped it.
            if self.sessions.get(subscription_id) is session:
                session.refreshed(owned.get(subscription_id))
        if not self.stopping:  # a session here for each hot subscription this engine has none for
            for subscription_id in await self.bookkeeper.call(claims.join_hot, self.token):
                self._start(subscription_id, self.token)
        idle = [s.subscription_id for s in self.sessions.values() if s.accepting and s.is_idle()]
        if idle:
            due = await self.bookkeeper.call(claims.retries_due_soon, idle)
            for subscription_id in idle:
                if (idle_session := self.sessions.get(subscription_id)) is not None:
                    idle_session.retry_due_soon = subscription_id in due
                    idle_session.wake()  # to end now, or to stay for the retry

    async def _stop(self) -> None:
        self.stopping = True
        sessions = list(self.sessions.values())
        for session in sessions:
            session.stop()
        longest = max((s.subscription.timeout_ms for s in sessions if s.subscription), default=0) / 1000
        deadline = time.monotonic() + longest + STOP_GRACE_S
        while self.sessions and time.monotonic() < deadline:  # noqa: ASYNC110 - sessions end on their own tasks
            await asyncio.sleep(0.05)
        await self.transport.close()
        await self.rate.close()
        await self.steps.close()


_engine: PushEngine | None = None
_engine_lock = threading.Lock()


def engine() -> PushEngine:
    """This process's engine, started on first use."""
    global _engine
    with _engine_lock:
        if _engine is None or _engine.stopping:
            _engine = PushEngine()
        return _engine


def stop_engine(timeout: float | None = None) -> None:
    """Stop this process's engine, if it runs (the worker is shutting down)."""
    global _engine
    with _engine_lock:
        running, _engine = _engine, None
    if running is not None:
        running.stop(timeout)
