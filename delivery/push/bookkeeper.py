"""The database and broker work of every push session of a process, done in batches on its own threads.

Django's ORM is synchronous and a push session lives on an event loop, so sessions hand their
database work to the bookkeeper and await the result. Whatever sessions hand over while a batch
runs is done together in the next one: under load, one SELECT judges the frames of many
sessions (delivery/attempts.py) and one transaction records the outcomes of many POSTs
(outcomes.py), whatever the number of subscriptions. Broker sends made on the way (retry
copies, rechecks) and the acks that follow a recorded outcome happen on these threads too.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from django.db import close_old_connections, connection
from django.db.utils import DatabaseError, InterfaceError, OperationalError

from delivery.attempts import Arrival, Attempt, start_attempts
from delivery.broker import Broker
from delivery.push.claims import Held, adopt
from delivery.push.outcomes import record_outcomes
from delivery.transports import PushResult

log = logging.getLogger("delivery.push")
T = TypeVar("T")

BATCH_LIMIT = 500  # frames or outcomes in one batch
CONNECTION_CHECK_S = 5.0  # how often a thread checks its database connection (CONN_MAX_AGE, health)


class JobKind(StrEnum):
    """What a bookkeeper job is; jobs of one kind waiting together run as one batch (a call runs alone)."""

    START = "start"  # frames to judge, fresh ones claimed in one statement
    JUDGE = "judge"  # frames to judge one by one (the ledger tried the one-statement claim already)
    SETTLE = "settle"  # finished POSTs to record, their frames to ack
    ADOPT = "adopt"  # starting sessions taking over their claims
    CALL = "call"  # one database call


@dataclass
class _Job:
    kind: JobKind
    items: list[Any]
    future: asyncio.Future[Any]
    call: Callable[[], Any] | None = None


class Bookkeeper:
    """A few threads that take the sessions' database work off the event loop and batch it."""

    def __init__(self, broker: Broker, threads: int = 2) -> None:
        self.broker = broker
        self._jobs: deque[_Job] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"push-bookkeeper-{n}", daemon=True)
                         for n in range(threads)]
        for thread in self._threads:
            thread.start()

    async def start_attempts(self, arrivals: list[Arrival], *, claim_fresh: bool = True) -> list[Attempt | None]:
        """Judge frames (with other sessions' frames waiting too); the attempts to make, in order.

        `claim_fresh=False`: the ledger tried the one-statement claim already; judge them one by one.
        """
        return await self._submit(JobKind.START if claim_fresh else JobKind.JUDGE, arrivals)

    async def record(self, finished: list[tuple[Attempt, PushResult]]) -> None:
        """Record finished POSTs (with other sessions' outcomes waiting too) and ack their frames."""
        await self._submit(JobKind.SETTLE, finished)

    async def adopt(self, subscription_id: int, token: str, engine_token: str) -> Held | None:
        """Take over a starting session's claim (with others starting too); its subscription, or None if lost."""
        results = await self._submit(JobKind.ADOPT, [(subscription_id, token, engine_token)])
        return results[0]

    async def call(self, function: Callable[..., T], *args: Any, urgent: bool = False, **kwargs: Any) -> T:
        """Run one database call on a bookkeeper thread; an `urgent` one before the work already waiting."""
        return await self._submit(JobKind.CALL, [], lambda: function(*args, **kwargs), urgent=urgent)

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def _submit(self, kind: JobKind, items: list[Any], call: Callable[[], Any] | None = None, *,
                urgent: bool = False) -> asyncio.Future[Any]:
        future = asyncio.get_running_loop().create_future()
        with self._ready:
            job = _Job(kind, items, future, call)
            if urgent:
                self._jobs.appendleft(job)
            else:
                self._jobs.append(job)
            self._ready.notify()
        return future

    def _work(self) -> None:
        checked = 0.0
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._jobs or self._closed)
                if not self._jobs:
                    return
                batch = self._take()
            if time.monotonic() - checked > CONNECTION_CHECK_S:  # not per batch: the check is a round trip
                close_old_connections()
                checked = time.monotonic()
            try:
                results = self._run(batch)
            except Exception as error:
                log.exception("push bookkeeping: a %s batch of %d jobs failed", batch[0].kind, len(batch))
                if isinstance(error, (OperationalError, InterfaceError, DatabaseError)):
                    connection.close()  # the next batch connects afresh
                for job in batch:
                    _resolve(job.future, error=error)
                continue
            for job, result in zip(batch, results, strict=True):
                _resolve(job.future, result=result)

    def _take(self) -> list[_Job]:
        """Take the first job and every other waiting job of its kind (a call runs alone)."""
        first = self._jobs.popleft()
        batch = [first]
        if first.kind == JobKind.CALL:
            return batch
        size = len(first.items)
        for job in list(self._jobs):
            if job.kind == first.kind and size + len(job.items) <= BATCH_LIMIT:
                self._jobs.remove(job)
                batch.append(job)
                size += len(job.items)
        return batch

    def _run(self, batch: list[_Job]) -> list[Any]:
        kind = batch[0].kind
        if kind == JobKind.CALL:
            assert batch[0].call is not None
            return [batch[0].call()]
        items = [item for job in batch for item in job.items]
        if kind == JobKind.SETTLE:
            record_outcomes(self.broker, items)
            return [None] * len(batch)
        if kind == JobKind.ADOPT:  # every item is (subscription id, start token, the engine's token)
            results: list[Any] = adopt([(pk, token) for pk, token, _ in items], items[0][2])
        else:
            results = start_attempts(self.broker, items, claim_fresh=kind == JobKind.START)
        split, offset = [], 0
        for job in batch:  # each job its own items' results
            split.append(results[offset:offset + len(job.items)])
            offset += len(job.items)
        return split


def _resolve(future: asyncio.Future[Any], *, result: Any = None, error: BaseException | None = None) -> None:
    """Complete a session's future from this thread, on its event loop."""
    def complete() -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    try:
        future.get_loop().call_soon_threadsafe(complete)
    except RuntimeError:
        log.debug("the event loop closed before a bookkeeping result could be handed back")
