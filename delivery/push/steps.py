"""The two database steps of every push attempt, one function each: start attempts, record outcomes.

A session calls `Steps.start_attempts` with the frames it took and `Steps.record_outcomes` with
each finished POST (and, off the common path, `hold_frames` while its breaker is open and
`withdraw` for an attempt a 410 or 429 stopped before its POST). Each of the two steps has a
common case that one statement serves, and the engine picks once, when it starts, the executor
that runs it:

- on PostgreSQL the ledger (ledger.py): a burst's fresh attempts claimed, and successes recorded,
  on the event loop itself, coalesced across sessions — no thread hand-off, no ORM;
- elsewhere (SQLite: the embedded demo) `OrmExecutor`: no statement claims a burst at once, so
  every frame goes to the frame rules, and successes are recorded by the bookkeeper's threads.

What the common case leaves is done the same way on every database, by the bookkeeper's threads
in batches (bookkeeper.py): frames the one-statement claim did not take are judged one by one
(delivery/attempts.py: stale copies, crashes, waits, expiry), and outcomes other than an unordered
success are settled by outcomes.py: failures retried, dead-lettered or expired, and an ordered
delivery's success recorded with the release of its key's next event in the same transaction
(delivery/sequencing.py) — the one place that rule is applied for push.
"""

from __future__ import annotations

from typing import Protocol

from delivery import attempts
from delivery.attempts import Arrival, Attempt, fresh_claims, judge_frames, parse_frames
from delivery.push import outcomes
from delivery.push.bookkeeper import Bookkeeper
from delivery.push.ledger import Claimed, Ledger
from delivery.statements import FreshClaim
from delivery.transports import PushResult

Finished = tuple[Attempt, PushResult]


class Executor(Protocol):
    """Runs the one-statement case of each step: ledger.py's Ledger on PostgreSQL, OrmExecutor elsewhere."""

    async def claim_fresh(self, claims: list[FreshClaim]) -> list[Claimed | None]:
        """Claim each fresh attempt the frame rules would let start, in one statement; None where it did not."""
        ...

    async def record_delivered(self, finished: list[Finished]) -> None:
        """Record successful POSTs of unordered deliveries `delivered`, then ack their frames."""
        ...

    async def close(self) -> None: ...


class OrmExecutor:
    """The executor where no ledger runs: nothing claimed in one statement, successes recorded by the bookkeeper."""

    def __init__(self, bookkeeper: Bookkeeper) -> None:
        self.bookkeeper = bookkeeper

    async def claim_fresh(self, claims: list[FreshClaim]) -> list[Claimed | None]:
        """Claim nothing: without PostgreSQL's one statement, every frame is judged by the frame rules."""
        return [None] * len(claims)

    async def record_delivered(self, finished: list[Finished]) -> None:
        """Record successes as any outcome is recorded, in the bookkeeper's batch (one INSERT, one UPDATE per code)."""
        await self.bookkeeper.batch(outcomes.record_outcomes, finished)

    async def close(self) -> None:
        """Nothing to close: the bookkeeper's threads use Django's connections."""


class Steps:
    """Start attempts and record outcomes for every session of an engine, through the executor chosen once."""

    def __init__(self, bookkeeper: Bookkeeper, executor: Executor) -> None:
        self.bookkeeper = bookkeeper
        self.executor = executor

    @classmethod
    def for_this_database(cls, bookkeeper: Bookkeeper) -> Steps:
        """The steps with the ledger on PostgreSQL, the ORM executor on any other database."""
        return cls(bookkeeper, Ledger.for_this_database(bookkeeper.broker) or OrmExecutor(bookkeeper))

    async def start_attempts(self, arrivals: list[Arrival]) -> list[Attempt | None]:
        """Judge frames that arrived together; return, for each, the attempt to make now or None (settled now).

        Fresh attempts are claimed by the executor's one statement; the frames it did not claim go
        to the frame rules, one by one against their rows, on the bookkeeper's threads.
        """
        results: list[Attempt | None] = [None] * len(arrivals)
        parsed = parse_frames(arrivals)
        if fresh := fresh_claims(arrivals, parsed):
            claimed = await self.executor.claim_fresh([claim for _, claim in fresh])
            for (index, claim), made in zip(fresh, claimed, strict=True):
                if made is not None:
                    results[index] = Attempt(made.state, arrivals[index], claim.attempt, made.at)
        if rest := [index for index, _ in parsed if results[index] is None]:
            judged = await self.bookkeeper.batch(judge_frames, [arrivals[index] for index in rest])
            for index, attempt in zip(rest, judged, strict=True):
                results[index] = attempt
        return results

    async def record_outcomes(self, finished: list[Finished]) -> None:
        """Record finished POSTs, each frame acked once its outcome is recorded (left unacked if it was not).

        An unordered delivery's success is the executor's one statement; an ordered one's releases
        the next event of its key in the same transaction, so it is settled with the failures.
        """
        delivered = [(attempt, result) for attempt, result in finished if is_plain_success(attempt, result)]
        rest = [(attempt, result) for attempt, result in finished if not is_plain_success(attempt, result)]
        if delivered:
            await self.executor.record_delivered(delivered)
        if rest:
            await self.bookkeeper.batch(outcomes.record_outcomes, rest)

    async def hold_frames(self, arrivals: list[Arrival], delay_ms: int) -> None:
        """Put frames back until `delay_ms` from now without starting their attempts (an open breaker)."""
        await self.bookkeeper.call(attempts.hold_frames, self.bookkeeper.broker, arrivals, delay_ms)

    async def withdraw(self, attempt: Attempt) -> bool:
        """Give back a started attempt that may not be POSTed now (its frame is judged again when taken)."""
        return await self.bookkeeper.call(attempts.withdraw, attempt)

    async def close(self) -> None:
        await self.executor.close()


def is_plain_success(attempt: Attempt, result: PushResult) -> bool:
    """Say whether an outcome is a success with no ordering key to move on (one statement records it)."""
    return result.ok and not attempt.delivery.ordering_key
