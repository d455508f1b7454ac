"""The receiver kit (receivers/python) on its own: signatures, the inbox on SQLite and PostgreSQL,
the replies of its WSGI, ASGI and Django integrations. tests/receivers/test_receiver_push.py pushes from Dovecote.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import sqlite3
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.test import Client
from standardwebhooks.webhooks import Webhook

from dovecote_receiver import (
    ForgedPush,
    Inbox,
    MalformedPush,
    Push,
    SlowDown,
    StalePush,
    Verifier,
    make_asgi_app,
)
from dovecote_receiver.django.models import InboxMessage
from rooms.models import Room
from tests import receiver_urls
from tests.shop import envelope, orders, signed_headers

OLD = "whsec_" + base64.b64encode(b"the old secret, 24 bytes").decode()
NEW = "whsec_" + base64.b64encode(b"the new secret, 24 bytes").decode()
OTHER = "whsec_" + base64.b64encode(b"someone else's secret!!!").decode()


def a_push(data: Any = None, event_type: str = "order.created") -> tuple[str, bytes]:
    message_id = str(uuid.uuid4())
    return message_id, envelope(message_id, {"order_id": 1} if data is None else data, event_type)


def test_signatures_agree_with_the_standardwebhooks_library_both_ways() -> None:
    message_id, body = a_push()
    now = datetime.now(UTC)
    theirs = Webhook(NEW).sign(message_id, now, body.decode())
    headers = {"Webhook-Id": message_id, "Webhook-Timestamp": str(int(now.timestamp())), "Webhook-Signature": theirs}
    assert Verifier([NEW]).verify(headers, body) == message_id
    ours = signed_headers([NEW], message_id, body)
    Webhook(NEW).verify(body, ours)  # raises if it does not verify


def test_a_push_signed_with_the_old_and_the_new_secret_verifies_with_either() -> None:
    message_id, body = a_push()
    both = signed_headers([OLD, NEW], message_id, body)
    assert " " in both["webhook-signature"]
    assert Verifier([OLD]).verify(both, body) == message_id
    assert Verifier([NEW]).verify(both, body) == message_id
    assert Verifier([NEW, OLD]).verify(signed_headers([OLD], message_id, body), body) == message_id
    with pytest.raises(ForgedPush):
        Verifier([OTHER]).verify(both, body)


@pytest.mark.parametrize("forgery", ["tampered body", "wrong secret", "other scheme", "not base64", "other id"])
def test_a_forged_push_is_refused_as_unauthorized(forgery: str) -> None:
    message_id, body = a_push()
    headers = signed_headers([OTHER if forgery == "wrong secret" else NEW], message_id, body)
    if forgery == "tampered body":
        body = body.replace(b'"order_id": 1', b'"order_id": 2')
    elif forgery == "other scheme":
        headers["webhook-signature"] = headers["webhook-signature"].replace("v1,", "v1a,")
    elif forgery == "not base64":
        headers["webhook-signature"] = "v1,%%%not-base64%%%"
    elif forgery == "other id":
        headers["webhook-id"] = str(uuid.uuid4())
    with pytest.raises(ForgedPush) as refused:
        Verifier([NEW]).verify(headers, body)
    assert refused.value.status == 401


@pytest.mark.parametrize(("age_s", "fresh"), [(299, True), (-299, True), (301, False), (-301, False)])
def test_a_push_older_or_newer_than_the_tolerance_is_refused(age_s: int, fresh: bool) -> None:
    message_id, body = a_push()
    headers = signed_headers([NEW], message_id, body, timestamp=1_800_000_000 - age_s)
    verifier = Verifier([NEW], tolerance_s=300, clock=lambda: 1_800_000_000)
    if fresh:
        assert verifier.verify(headers, body) == message_id
    else:
        with pytest.raises(StalePush):
            verifier.verify(headers, body)


def test_a_push_without_its_headers_or_envelope_is_malformed() -> None:
    message_id, body = a_push()
    headers = signed_headers([NEW], message_id, body)
    for missing in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        with pytest.raises(MalformedPush) as refused:
            Verifier([NEW]).verify({k: v for k, v in headers.items() if k != missing}, body)
        assert refused.value.status == 400
    with pytest.raises(MalformedPush):
        Verifier([NEW]).verify({**headers, "webhook-timestamp": "yesterday"}, body)
    not_an_envelope = b'{"hello": "world"}'
    with pytest.raises(MalformedPush):
        Push.parse(message_id, headers, not_an_envelope)


def push_of(message_id: str, body: bytes, attempt: int = 1) -> Push:
    return Push.parse(message_id, {"x-delivery-attempt": str(attempt)}, body)


def test_the_inbox_on_sqlite_handles_a_push_once_and_keeps_nothing_of_a_failed_handler(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "shop.sqlite3")
    inbox = Inbox()
    inbox.create_table(connection)
    connection.execute("CREATE TABLE work (webhook_id TEXT)")
    message_id, body = a_push()

    def fail(push: Push, conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO work VALUES (?)", (push.id,))
        raise RuntimeError("crash before the commit")

    with pytest.raises(RuntimeError):
        inbox.store(connection, push_of(message_id, body), fail)
    assert not inbox.contains(connection, message_id)
    assert connection.execute("SELECT count(*) FROM work").fetchone() == (0,)

    def work(push: Push, conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO work VALUES (?)", (push.id,))

    assert inbox.store(connection, push_of(message_id, body, attempt=2), work) is True
    assert inbox.store(connection, push_of(message_id, body, attempt=3), work) is False
    assert connection.execute("SELECT count(*) FROM work").fetchone() == (1,)
    assert connection.execute("SELECT attempt FROM dovecote_inbox").fetchall() == [(2,)]


@pytest.fixture
def postgres(db) -> Any:
    """Connections to the test database through psycopg (DB-API), and a scratch inbox table."""
    database = settings.DATABASES["default"]
    conninfo = {"host": database["HOST"] or "127.0.0.1", "port": database["PORT"] or 5432,
                "user": database["USER"] or "postgres", "password": database["PASSWORD"] or None,
                "dbname": database["NAME"]}
    table = f"inbox_{uuid.uuid4().hex[:10]}"
    opened: list[psycopg.Connection] = []

    def connect() -> psycopg.Connection:
        opened.append(psycopg.connect(**conninfo))
        return opened[-1]

    Inbox(table).create_table(connect())
    yield connect, Inbox(table)
    with connect() as connection:
        connection.execute(f"DROP TABLE {table}")
    for connection in opened:
        connection.close()


def test_the_inbox_on_postgresql_handles_two_simultaneous_deliveries_of_a_push_once(postgres: Any) -> None:
    connect, inbox = postgres
    message_id, body = a_push()
    handled: list[str] = []
    results: list[bool] = []

    def slow(push: Push, connection: Any) -> None:
        handled.append(push.id)
        time.sleep(0.3)  # the other delivery arrives meanwhile and waits on the unique index

    threads = [threading.Thread(target=lambda: results.append(inbox.store(connect(), push_of(message_id, body), slow)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(results) == [False, True] and handled == [message_id]
    assert inbox.contains(connect(), message_id)


def call_wsgi(app: Any, method: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], dict]:
    environ = {"REQUEST_METHOD": method, "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
               **{f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}}
    started: dict[str, Any] = {}
    content = b"".join(app(environ, lambda status, hdrs: started.update(status=status, headers=dict(hdrs))))
    return int(started["status"].split()[0]), started["headers"], json.loads(content)


def test_the_wsgi_app_answers_with_the_status_that_steers_dovecote(tmp_path: Path) -> None:
    def handler(push: Push, connection: sqlite3.Connection) -> None:
        if push.type == "shop.crash":
            raise RuntimeError("bug")
        if push.type == "shop.down":
            raise SlowDown(7, status=503)
        orders.handle_order(push, connection)

    app = orders.make_app(str(tmp_path / "shop.sqlite3"), [NEW], handler)

    def send(event_type: str = "order.created", data: Any = None, secret: str = NEW) -> tuple[int, dict, dict]:
        message_id, body = a_push({"order_id": 1} if data is None else data, event_type)
        return call_wsgi(app, "POST", signed_headers([secret], message_id, body), body)

    message_id, body = a_push({"order_id": 5})
    headers = signed_headers([NEW], message_id, body)
    assert call_wsgi(app, "POST", headers, body)[::2] == (200, {"id": message_id, "duplicate": False})
    assert call_wsgi(app, "POST", headers, body)[::2] == (200, {"id": message_id, "duplicate": True})
    assert send(secret=OTHER)[0] == 401
    assert send("shop.closed")[0] == 410
    status, reply_headers, _ = send("shop.busy", {"retry_after_s": 12})
    assert (status, reply_headers["Retry-After"]) == (429, "12")
    status, reply_headers, _ = send("shop.down")
    assert (status, reply_headers["Retry-After"]) == (503, "7")
    assert send("shop.crash")[0] == 500
    assert call_wsgi(app, "GET", {}, b"")[0] == 405
    assert call_wsgi(app, "POST", headers, b"x" * (1024 * 1024 + 1))[0] == 413
    assert call_wsgi(app, "POST", {"webhook-id": message_id}, body)[0] == 400


def test_the_asgi_app_handles_a_push_once_and_refuses_a_forgery(tmp_path: Path) -> None:
    database = str(tmp_path / "shop.sqlite3")
    app = orders.make_asgi(database, [OLD, NEW])
    message_id, body = a_push({"order_id": 9})

    async def call(headers: dict[str, str]) -> tuple[int, dict]:
        sent: list[dict] = []
        scope = {"type": "http", "method": "POST", "path": "/",
                 "headers": [(k.encode(), v.encode())
                             for k, v in {**headers, "content-length": str(len(body))}.items()]}
        chunks = iter([{"type": "http.request", "body": body[:10], "more_body": True},
                       {"type": "http.request", "body": body[10:], "more_body": False}])

        async def receive() -> dict:
            return next(chunks)

        async def send(message: dict) -> None:
            sent.append(message)

        await app(scope, receive, send)
        return sent[0]["status"], json.loads(sent[1]["body"])

    assert asyncio.run(call(signed_headers([OLD], message_id, body))) == (200, {"id": message_id, "duplicate": False})
    assert asyncio.run(call(signed_headers([NEW], message_id, body)))[1]["duplicate"] is True
    assert asyncio.run(call(signed_headers([OTHER], message_id, body)))[0] == 401
    assert sqlite3.connect(database).execute("SELECT order_id FROM orders").fetchall() == [(9,)]


def test_an_app_without_a_secret_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="at least one"):
        make_asgi_app(secrets=[], connect=lambda: None, handler=lambda push, conn: None)
    with pytest.raises(ValueError, match="whsec_"):
        Verifier(["whsec_not base64!"])


@pytest.mark.urls("tests.receiver_urls")
def test_the_django_view_stores_and_handles_in_one_transaction(client: Client, settings: Any, db) -> None:
    settings.TEST_PUSH_SECRETS = [OLD, NEW]
    message_id, body = a_push({"order_id": 77})

    def post(headers: dict[str, str]) -> Any:
        return client.post("/hooks/orders/", body, content_type="application/json",
                           **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()})

    receiver_urls.CRASHES[:] = [1]
    try:
        assert post(signed_headers([NEW], message_id, body, attempt=1)).status_code == 500
        assert not InboxMessage.objects.exists() and not Room.objects.filter(name="order-77").exists()
        handled = post(signed_headers([OLD, NEW], message_id, body, attempt=2))
        assert (handled.status_code, handled.json()) == (200, {"id": message_id, "duplicate": False})
        assert post(signed_headers([OLD], message_id, body, attempt=3)).json()["duplicate"] is True
    finally:
        receiver_urls.CRASHES.clear()
    assert Room.objects.filter(name="order-77").count() == 1
    assert InboxMessage.objects.get().attempt == 2
    assert post(signed_headers([OTHER], message_id, body)).status_code == 401
    assert client.get("/hooks/orders/").status_code == 405
