"""The push steps' executor on PostgreSQL: their two one-statement paths, run on the engine's event loop.

Claiming a fresh attempt (the statement of `Delivery.objects.claim_fresh`) and recording a
success (that of `Delivery.objects.record_delivered`, delivery/statements.py) are nearly all of a
push session's database work. Handing them to the bookkeeper's threads cost a thread hand-off and
the ORM's time per call; here they run on the event loop itself, over psycopg's async connections
(one per statement, prepared once), coalesced across sessions: whatever sessions ask while a
statement runs goes into the next one. steps.py decides what comes here and hands the rest — the
frame rules' other verdicts, failures and retries, ordered successes — to the bookkeeper.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from django.db import connection
from django.utils import timezone

from delivery.attempts import Attempt
from delivery.broker import Broker
from delivery.models import Delivery, DeliveryState, claim_fresh_sql, record_delivered_sql, states_from_rows
from delivery.push.outcomes import ack_recorded
from delivery.statements import FreshClaim, claim_params, delivered_params
from delivery.transports import PushResult

log = logging.getLogger("delivery.push")

BATCH_LIMIT = 1000


class _Coalescer[Item, Result]:
    """Run `execute` over everything asked for while the previous run was under way, one run at a time."""

    def __init__(self, execute: Callable[[list[Item]], Awaitable[list[Result]]]) -> None:
        self._execute = execute
        self._waiting: list[tuple[list[Item], asyncio.Future[list[Result]]]] = []
        self._running = False

    async def submit(self, items: list[Item]) -> list[Result]:
        future: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        self._waiting.append((items, future))
        if not self._running:
            self._running = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch: list[tuple[list[Item], asyncio.Future[list[Result]]]] = []
                size = 0
                while self._waiting and (not batch or size + len(self._waiting[0][0]) <= BATCH_LIMIT):
                    items, future = self._waiting.pop(0)
                    batch.append((items, future))
                    size += len(items)
                try:
                    results = await self._execute([item for items, _ in batch for item in items])
                except Exception as error:  # noqa: BLE001 - handed to every waiting session
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                    continue
                offset = 0
                for items, future in batch:
                    if not future.done():
                        future.set_result(results[offset:offset + len(items)])
                    offset += len(items)
        finally:
            self._running = False


@dataclass(frozen=True)
class Claimed:
    """A fresh claim made: the delivery's state as claimed, and when."""

    state: DeliveryState
    at: datetime


class Ledger:
    """Claims and successes of every session of an engine, on its event loop (the steps' executor on PostgreSQL)."""

    def __init__(self, conninfo: str, broker: Broker) -> None:
        self._conninfo = conninfo
        self._broker = broker  # the engine's, whose consumers' frames the successes ack
        self._connections: dict[str, psycopg.AsyncConnection[Any]] = {}
        self._claims: _Coalescer[FreshClaim, Claimed | None] = _Coalescer(self._claim)
        self._successes: _Coalescer[tuple[Attempt, PushResult], None] = _Coalescer(self._record)
        self._claim_sql = claim_fresh_sql()
        self._record_sql = record_delivered_sql()

    @classmethod
    def for_this_database(cls, broker: Broker) -> Ledger | None:
        """A ledger on the default database's PostgreSQL, or None for another database."""
        if connection.vendor != "postgresql":
            return None
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        params.pop("server_side_binding", None)
        params.pop("prepare_threshold", None)  # psycopg's, not a libpq keyword: its default (5) applies here
        return cls(psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if v not in (None, "")}), broker)

    async def claim_fresh(self, claims: list[FreshClaim]) -> list[Claimed | None]:
        """Claim each fresh attempt the frame rules would let start (see Delivery.objects.claim_fresh); None: not."""
        return await self._claims.submit(claims)

    async def record_delivered(self, finished: list[tuple[Attempt, PushResult]]) -> None:
        """Record successful POSTs and their deliveries `delivered`, then ack their frames."""
        await self._successes.submit(finished)

    async def close(self) -> None:
        for conn in self._connections.values():
            await conn.close()
        self._connections.clear()

    async def _connection(self, purpose: str) -> psycopg.AsyncConnection[Any]:
        conn = self._connections.get(purpose)
        if conn is None or conn.closed or conn.broken:
            conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
            self._connections[purpose] = conn
        return conn

    async def _run(self, purpose: str, sql: str, params: dict[str, Any], fetch: bool) -> list[tuple[Any, ...]]:
        conn = await self._connection(purpose)
        try:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall() if fetch else []
        except psycopg.OperationalError:
            await conn.close()  # the next statement connects afresh
            raise

    async def _claim(self, claims: list[FreshClaim]) -> list[Claimed | None]:
        now = timezone.now()
        unique, seen = [], set()
        for claim in claims:
            if claim.delivery_id not in seen:  # a second frame of a delivery is the frame rules' to judge
                seen.add(claim.delivery_id)
                unique.append(claim)
        rows = await self._run("claim", self._claim_sql, claim_params(unique, now, Delivery.UNSETTLED), fetch=True)
        states = states_from_rows(rows)
        taken: set[int] = set()
        results: list[Claimed | None] = []
        for claim in claims:
            state = states.get(claim.delivery_id)
            if state is not None and claim.delivery_id not in taken:
                taken.add(claim.delivery_id)
                results.append(Claimed(state, now))
            else:
                results.append(None)
        return results

    async def _record(self, finished: list[tuple[Attempt, PushResult]]) -> list[None]:
        rows = [(a.delivery, a.attempt, a.started_at, r.duration_ms, r.status_code) for a, r in finished]
        params = delivered_params(rows, timezone.now(), Delivery.UNSETTLED)
        await self._run("record", self._record_sql, params, fetch=False)
        ack_recorded(self._broker, [attempt for attempt, _ in finished])
        return [None] * len(finished)
