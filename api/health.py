"""`/healthz/`: the state of the database, the message broker and the Celery broker.

Anyone may ask whether Dovecote is up (200, or 503 naming the services that are down); only staff
users and admin API keys see each check's timing and error text, which can name internal hosts.
Each web process checks at most once every HEALTH_CACHE_SECONDS, whoever asks and however often,
and asks the broker through its one shared connection rather than opening a new one per call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from kombu import Connection

from delivery.broker.base import BrokerUnavailable
from delivery.broker.shared import shared_broker
from dovecote.throttling import API_KEY_FAILURES
from rooms.models import ApiKey

CHECK_TIMEOUT_S = 3.0
HEALTH_CACHE_SECONDS = 2.0


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_broker() -> None:
    broker = shared_broker()  # connects on first use; reconnects by itself after that
    if not broker.is_connected():
        raise BrokerUnavailable(f"the connection to the broker at {broker.url.rpartition('@')[2]} is down")


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
        return {"ok": False, "error": f"{type(error).__name__}: {error}"[:500], "ms": _ms_since(started)}
    return {"ok": True, "ms": _ms_since(started)}


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


class RecentChecks:
    """The last results of the checks in this process, run again once they are HEALTH_CACHE_SECONDS old."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, dict[str, object]] = {}
        self._taken_at = -float("inf")
        self._for: tuple[str, ...] = ()

    def results(self) -> dict[str, dict[str, object]]:
        with self._lock:  # callers arriving during a check wait for its result rather than check again
            services = (settings.STOMP_URL, settings.CELERY_BROKER_URL, connection.settings_dict["NAME"])
            if services != self._for or time.monotonic() - self._taken_at >= HEALTH_CACHE_SECONDS:
                self._results = {name: run_check(check) for name, check in CHECKS.items()}
                self._taken_at, self._for = time.monotonic(), services
            return self._results

    def forget(self) -> None:
        with self._lock:
            self._taken_at = -float("inf")


RECENT = RecentChecks()


def may_see_details(request: HttpRequest) -> bool:
    """Say whether the caller is a staff user or brings an admin API key (False while the database is down)."""
    try:
        if request.user.is_authenticated and request.user.is_staff:
            return True
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip() or API_KEY_FAILURES.seconds_blocked(request):
            return False
        key = ApiKey.authenticate(token.strip())
    except DatabaseError:
        return False
    if key is None:
        API_KEY_FAILURES.record_failure(request)
    return key is not None and key.is_admin


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer 200 when every dependency is up, else 503 naming the ones that are down."""
    results = RECENT.results()
    down = [name for name, result in results.items() if not result["ok"]]
    body: dict[str, object] = {"status": "ok" if not down else "unavailable", "down": down}
    if may_see_details(request):
        body["checks"] = results
    response = JsonResponse(body, status=503 if down else 200)
    response["Cache-Control"] = "no-store"
    return response
