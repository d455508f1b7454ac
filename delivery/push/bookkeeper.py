"""The database and broker work of every push session of a process, done in batches on its own threads.

Django's ORM is synchronous and a push session lives on an event loop, so sessions hand their
database work to the bookkeeper and await the result. Work is a function over a list of items
(`batch`): whatever sessions hand to the same function while a batch runs is done together in the
next one, so under load one SELECT judges the frames of many sessions and one transaction records
the outcomes of many POSTs (steps.py says which functions), whatever the number of subscriptions.
Broker sends made on the way (retry copies, rechecks) and the acks that follow happen on these
threads too. The bookkeeper knows no step of its own: it runs what it is given.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import close_old_connections, connection
from django.db.utils import DatabaseError, InterfaceError, OperationalError

from delivery.broker import Broker

log = logging.getLogger("delivery.push")
T = TypeVar("T")
Item = TypeVar("Item")
Result = TypeVar("Result")
# A function of a batch: the broker and the items of every job waiting for it, one result per item, in order.
Batched = Callable[[Broker, list[Item]], list[Result]]

BATCH_LIMIT = 500  # frames or outcomes in one batch
CONNECTION_CHECK_S = 5.0  # how often a thread checks its database connection (CONN_MAX_AGE, health)


@dataclass
class _Job:
    """Items for a batched function (jobs of one function waiting together run as one batch), or one call."""

    batched: Batched[Any, Any] | None  # None: `call` runs alone
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

    async def batch(self, batched: Batched[Item, Result], items: list[Item]) -> list[Result]:
        """Run `batched` over these items together with the items other sessions hand it meanwhile; their results."""
        return await self._submit(batched, items)

    async def call(self, function: Callable[..., T], *args: Any, urgent: bool = False, **kwargs: Any) -> T:
        """Run one database call on a bookkeeper thread; an `urgent` one before the work already waiting."""
        return await self._submit(None, [], lambda: function(*args, **kwargs), urgent=urgent)

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def _submit(self, batched: Batched[Any, Any] | None, items: list[Any],
                call: Callable[[], Any] | None = None, *, urgent: bool = False) -> asyncio.Future[Any]:
        future = asyncio.get_running_loop().create_future()
        with self._ready:
            job = _Job(batched, items, future, call)
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
                log.exception("push bookkeeping: a batch of %d jobs for %s failed", len(batch), _name(batch[0]))
                if isinstance(error, (OperationalError, InterfaceError, DatabaseError)):
                    connection.close()  # the next batch connects afresh
                for job in batch:
                    _resolve(job.future, error=error)
                continue
            for job, result in zip(batch, results, strict=True):
                _resolve(job.future, result=result)

    def _take(self) -> list[_Job]:
        """Take the first job and every other waiting job for its function (a call runs alone)."""
        first = self._jobs.popleft()
        batch = [first]
        if first.batched is None:
            return batch
        size = len(first.items)
        for job in list(self._jobs):
            if job.batched is first.batched and size + len(job.items) <= BATCH_LIMIT:
                self._jobs.remove(job)
                batch.append(job)
                size += len(job.items)
        return batch

    def _run(self, batch: list[_Job]) -> list[Any]:
        """Each job's result: a call's value, or a batch's results cut back into each job's part."""
        first = batch[0]
        if first.batched is None:
            assert first.call is not None
            return [first.call()]
        results = first.batched(self.broker, [item for job in batch for item in job.items])
        split, offset = [], 0
        for job in batch:
            split.append(results[offset:offset + len(job.items)])
            offset += len(job.items)
        return split


def _name(job: _Job) -> str:
    """What a job runs, for the log."""
    return getattr(job.batched or job.call, "__qualname__", "a call")


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
