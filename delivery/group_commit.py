"""Group commit: the publishes a process is serving at the same moment share one transaction and one fsync.

A publish hands its write to the process's committer thread and waits for the commit before it
answers, so a 202 still means the message and its deliveries are in PostgreSQL. The committer takes
every write waiting when it starts a transaction (up to `MAX_GROUP`): a lone publish is committed
at once, alone, and under load a transaction carries as many publishes as arrived while the last
one was being committed. If a group's transaction fails, each of its writes is tried again in a
transaction of its own, so one publish's error (a bad row, a lost race) is that publish's alone.

A publish made inside a transaction (a test's, or a caller that wants its own writes committed with
the event) is written in that transaction, by the caller's thread: the group is then just itself.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import InterfaceError, OperationalError, connection, transaction

log = logging.getLogger("delivery.group_commit")

MAX_GROUP = 200  # writes per transaction: bounds a transaction's time and the size of its statements

@dataclass(eq=False)
class _Waiting[Write, Result]:
    write: Write
    done: threading.Event = field(default_factory=threading.Event)
    result: Result | None = None
    error: BaseException | None = None


class GroupCommit[Write, Result]:
    """A thread that runs `apply(writes)` for waiting writes, a group at a time, each group in one transaction.

    `apply` returns one result per write, in order; it runs inside `transaction.atomic()` and may
    register `transaction.on_commit` callbacks (they run after the group commits).
    """

    def __init__(self, name: str, apply: Callable[[Sequence[Write]], list[Result]]) -> None:
        self.name = name
        self._apply = apply
        self._queue: queue.SimpleQueue[_Waiting[Write, Result]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._reconnect = False

    def commit(self, write: Write) -> Result:
        """Write `write` in a group's transaction and return its result once that transaction committed."""
        if connection.in_atomic_block:  # the caller's transaction: it commits this write with its own
            return self._apply([write])[0]
        waiting: _Waiting[Write, Result] = _Waiting(write)
        self._start()
        self._queue.put(waiting)
        waiting.done.wait()
        if waiting.error is not None:
            raise waiting.error
        return waiting.result  # type: ignore[return-value]

    def reconnect(self) -> None:
        """Have the committer thread open a new database connection for its next group (the settings changed)."""
        self._reconnect = True

    def _start(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        while True:
            group = [self._queue.get()]
            while len(group) < MAX_GROUP:
                try:
                    group.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._commit_group(group)

    def _commit_group(self, group: list[_Waiting[Write, Result]]) -> None:
        try:
            self._commit(group)
        except BaseException as error:  # noqa: BLE001 - handed to the waiting callers, never lost
            if len(group) == 1:
                group[0].error = error
            else:
                log.info("%s: a group of %d failed (%s); committing each alone", self.name, len(group), error)
                for waiting in group:
                    self._commit_group([waiting])
                return
        for waiting in group:
            waiting.done.set()

    def _commit(self, group: list[_Waiting[Write, Result]]) -> None:
        if self._reconnect:
            self._reconnect = False
            connection.close()
        for tries_left in (1, 0):
            try:
                with transaction.atomic():
                    results = self._apply([waiting.write for waiting in group])
                break
            except (OperationalError, InterfaceError):
                # A connection PostgreSQL dropped while this thread was idle fails the group's first statement:
                # open a new one and try once more (a commit that did happen fails the retry on the messages'
                # ids, so nothing is written twice). A database that stays down fails the group.
                if not tries_left:
                    raise
                if connection.connection is None or not connection.is_usable():
                    connection.close()
        for waiting, result in zip(group, results, strict=True):
            waiting.result = result
