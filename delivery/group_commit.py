"""Group commit: the publishes a process is serving at the same moment share one transaction and one fsync.

A publish waits for its group's commit before it answers, so a 202 still means the message and its
deliveries are in PostgreSQL. There is no committer thread: the first publish to arrive when no group
is being committed leads, committing on its own thread (and its own database connection) every write
waiting at that moment (up to `MAX_GROUP`). Publishes that arrive meanwhile wait; when the leader's
group has committed it hands the lead to the first of them, which commits all that arrived. So a lone
publish is committed at once by its own thread, with no hand-off to another thread; under load a
transaction carries as many publishes as arrived while the last one was being committed. If a group's
transaction fails, each of its writes is tried again in a transaction of its own, so one publish's
error (a bad row, a lost race) is that publish's alone.

A publish made inside a transaction (a test's, or a caller that wants its own writes committed with
the event) is written in that transaction, by the caller's thread: the group is then just itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger("delivery.group_commit")

MAX_GROUP = 200  # writes per transaction: bounds a transaction's time and the size of its statements


@dataclass(eq=False)
class _Waiting[Write, Result]:
    write: Write
    woken: threading.Event = field(default_factory=threading.Event)  # committed, or handed the lead
    finished: bool = False  # committed, or failed with `error`
    result: Result | None = None
    error: BaseException | None = None


class GroupCommit[Write, Result]:
    """Run `apply(writes)` for concurrent callers' writes, a group at a time, each group in one transaction.

    `apply` writes and commits the group (in one transaction, or one statement) on the leading caller's
    thread, outside any transaction, and returns one result per write, in order.
    """

    def __init__(self, name: str, apply: Callable[[Sequence[Write]], list[Result]]) -> None:
        self.name = name
        self._apply = apply
        self._lock = threading.Lock()
        self._waiting: list[_Waiting[Write, Result]] = []  # in arrival order; the lead goes to the first
        self._leading = False  # a caller is committing a group (or has been handed the lead)
        self._generation = 0  # bumped by reconnect()
        self._seen = threading.local()  # the generation this thread's connection was opened in

    def commit(self, write: Write) -> Result:
        """Write `write` in a group's transaction and return its result once that transaction committed."""
        if connection.in_atomic_block:  # the caller's transaction: it commits this write with its own
            return self._apply([write])[0]
        waiting: _Waiting[Write, Result] = _Waiting(write)
        with self._lock:
            self._waiting.append(waiting)
            leads = not self._leading
            self._leading = True
        if not leads:
            waiting.woken.wait()
        if not waiting.finished:  # led from the start, or handed the lead by the last leader
            self._lead()
        if waiting.error is not None:
            raise waiting.error
        return waiting.result  # type: ignore[return-value]

    def waiting(self) -> int:
        """How many writes wait for a group (not counting the one being committed)."""
        with self._lock:
            return len(self._waiting)

    def reconnect(self) -> None:
        """Have every thread open a new database connection for the next group it leads (the settings changed)."""
        self._generation += 1

    def _lead(self) -> None:
        with self._lock:
            group, self._waiting = self._waiting[:MAX_GROUP], self._waiting[MAX_GROUP:]
        try:
            self._commit_group(group)
        finally:
            with self._lock:
                if self._waiting:
                    self._waiting[0].woken.set()  # the lead passes to the first that arrived meanwhile
                else:
                    self._leading = False

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
            waiting.finished = True
            waiting.woken.set()

    def _commit(self, group: list[_Waiting[Write, Result]]) -> None:
        if getattr(self._seen, "generation", 0) != self._generation:
            self._seen.generation = self._generation
            connection.close()
        for tries_left in (1, 0):
            try:
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
