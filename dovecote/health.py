"""`/healthz/`: the state of the database, the message broker and the Celery broker."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from kombu import Connection

from delivery.broker import connect

CHECK_TIMEOUT_S = 3.0


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_broker() -> None:
    with connect(settings.STOMP_URL, connect_timeout=CHECK_TIMEOUT_S):
        pass


def check_celery_broker() -> None:
    if settings.CELERY_BROKER_URL.startswith("memory://"):
        return  # embedded mode: the Celery broker lives in this process
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=CHECK_TIMEOUT_S) as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_S)


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "broker": check_broker,
    "celery_broker": check_celery_broker,
}


def run_check(check: Callable[[], None]) -> dict[str, object]:
    """Run one check and report ok, how long it took, and the error if any."""
    started = time.monotonic()
    try:
        check()
    except Exception as error:  # noqa: BLE001 - any failure means "down", and its text is the report
        return {"ok": False, "error": f"{type(error).__name__}: {error}", "ms": _ms_since(started)}
    return {"ok": True, "ms": _ms_since(started)}


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer 200 when every dependency is up, else 503 naming the ones that are down."""
    results = {name: run_check(check) for name, check in CHECKS.items()}
    down = [name for name, result in results.items() if not result["ok"]]
    body = {"status": "ok" if not down else "unavailable", "down": down, "checks": results}
    return JsonResponse(body, status=503 if down else 200)
