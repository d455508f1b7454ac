"""A transactional inbox on any DB-API connection (sqlite3, psycopg, psycopg2, …).

`Inbox.store` inserts the push into the inbox table and runs the handler on the same connection,
then commits once: the push is recorded exactly when the handler's own writes are. A push already
in the table (a retry after a lost reply, a duplicate) is not handled again. If the handler raises
or the process dies before the commit, neither is kept, and Dovecote's next attempt handles it.
Two deliveries of one push at the same moment: the second INSERT waits for the first transaction
(PostgreSQL's unique index; SQLite's write lock) and then finds the row.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dovecote_receiver.push import Push

Connection = Any  # a DB-API 2.0 connection, not in autocommit mode
Handler = Callable[[Push, Connection], object]

PLACEHOLDERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}
COLUMNS = ("webhook_id", "event_type", "event_version", "room", "correlation_id", "attempt", "body", "received_at")


class Inbox:
    """The inbox table `table` (default `dovecote_inbox`, the Django integration's table too)."""

    def __init__(self, table: str = "dovecote_inbox", *, paramstyle: str | None = None) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", table):
            raise ValueError(f"not a plain table name: {table!r}")
        self.table = table
        self.paramstyle = paramstyle

    def create_table(self, connection: Connection) -> None:
        """Create the table if it is missing (SQL that SQLite and PostgreSQL both take), and commit."""
        connection.cursor().execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            " webhook_id VARCHAR(200) PRIMARY KEY, event_type VARCHAR(200) NOT NULL,"
            " event_version VARCHAR(50) NOT NULL, room VARCHAR(200) NOT NULL,"
            " correlation_id VARCHAR(200) NOT NULL, attempt INTEGER NOT NULL, body TEXT NOT NULL,"
            " received_at VARCHAR(40) NOT NULL)"
        )
        connection.commit()

    def store(self, connection: Connection, push: Push, handler: Handler) -> bool:
        """Record `push` and run `handler(push, connection)` in one transaction; False if it was already there."""
        try:
            cursor = connection.cursor()
            cursor.execute(self.insert_sql(connection), (
                push.id, push.type, push.version, push.room, push.correlation_id, push.attempt,
                push.body.decode(errors="replace"), datetime.now(UTC).isoformat(),
            ))
            if cursor.rowcount == 0:  # the row was there: handled before
                connection.rollback()
                return False
            handler(push, connection)
            connection.commit()
            return True
        except BaseException:
            connection.rollback()
            raise

    def contains(self, connection: Connection, webhook_id: str) -> bool:
        cursor = connection.cursor()
        cursor.execute(f"SELECT 1 FROM {self.table} WHERE webhook_id = {self.placeholder(connection)}",
                       (webhook_id,))
        found = cursor.fetchone() is not None
        connection.rollback()
        return found

    def insert_sql(self, connection: Connection) -> str:
        mark = self.placeholder(connection)
        return (f"INSERT INTO {self.table} ({', '.join(COLUMNS)}) VALUES ({', '.join([mark] * len(COLUMNS))})"
                " ON CONFLICT (webhook_id) DO NOTHING")  # SQLite 3.24+, PostgreSQL 9.5+

    def placeholder(self, connection: Connection) -> str:
        style = self.paramstyle or driver_paramstyle(connection)
        if style not in PLACEHOLDERS:
            raise ValueError(f"paramstyle {style!r} is not supported: give qmark, format or pyformat")
        return PLACEHOLDERS[style]


def driver_paramstyle(connection: Connection) -> str:
    """Return the `paramstyle` of the DB-API module the connection comes from."""
    module = sys.modules.get(type(connection).__module__.split(".")[0])
    return getattr(module, "paramstyle", "qmark")


def store_with(connect: Callable[[], Connection], inbox: Inbox, handler: Handler) -> Callable[[Push], bool]:
    """Return a Store (dovecote_receiver.core) that opens a connection per push and closes it after."""
    def store(push: Push) -> bool:
        connection = connect()
        try:
            return inbox.store(connection, push, handler)
        finally:
            connection.close()
    return store


def open_inbox(connect: Callable[[], Connection], inbox: Inbox) -> None:
    """Create the inbox table if it is missing, on a connection of its own."""
    connection = connect()
    try:
        inbox.create_table(connection)
    finally:
        connection.close()
