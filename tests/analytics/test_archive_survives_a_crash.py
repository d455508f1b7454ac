"""The archive job moves settled messages past their retention to Parquet and out of PostgreSQL; killed
between the Parquet write and the delete, a rerun loses nothing and writes nothing twice; dead letters
and unsettled messages stay; an archived message answers as archived in the API and the console."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from analytics.models import ArchiveBatch, ArchivedMessage, ArchiveRun
from delivery.models import Delivery, DeliveryAttempt, Message, SendRecord
from rooms.models import ApiKey
from tests import workers
from tests.analytics.test_analytics_reports import require_spark
from tests.callers import call_api
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
Status = Delivery.Status
COMMAND_TIMEOUT_S = 600


@pytest.fixture
def spark(django_db_setup) -> Iterator[Any]:
    require_spark()
    from analytics import runner
    from analytics.jobs.session import build_session

    session = build_session(runner.job_config())
    yield session
    session.stop()


def archive_command(archive_url: Path, *options: str) -> subprocess.CompletedProcess:
    """Run `manage.py archive` on the test database in a process of its own."""
    env = {**os.environ, "DATABASE_URL": workers.test_database_url(), "DOVECOTE_ARCHIVE_URL": str(archive_url),
           "DOVECOTE_ARCHIVE_BATCH": "3"}
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), "archive", *options], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)


def settled_history() -> dict[str, list[Message]]:
    """Messages of a room keeping 1 hour: old settled ones (two days, two batches for one), and ones that stay."""
    room = make_room(name="orders", retention_ms=3600 * 1000)
    first, second = make_subscription(room), make_subscription(room)
    now = timezone.now()

    def message(age: timedelta, *statuses: str) -> Message:
        made = make_message(room, created_at=now - age)
        for subscription, status in zip((first, second), statuses, strict=False):
            delivery = make_delivery(made, subscription, status=status)
            SendRecord.objects.create(delivery=delivery, kind="publish", destination=delivery.destination,
                                            attempt=1, correlation_id=made.correlation_id, sent_at=made.created_at)
            DeliveryAttempt.objects.create(delivery=delivery, correlation_id=made.correlation_id, attempt=1,
                                           started_at=made.created_at + timedelta(seconds=1), outcome="success",
                                           duration_ms=40, status_code=200)
        return made

    days_ago = [timedelta(days=3, minutes=i) for i in range(4)] + [timedelta(days=2, minutes=i) for i in range(2)]
    return {
        "settled": [message(age, Status.DELIVERED, Status.ACKED) for age in days_ago],
        "kept": [message(timedelta(days=3), Status.DELIVERED, Status.DEAD_LETTERED),
                 message(timedelta(days=3), Status.RETRYING),
                 message(timedelta(days=3), Status.LEASED, Status.DELIVERED),
                 message(timedelta(minutes=10), Status.DELIVERED)],
    }


def archived_ids(spark: Any, archive_url: Path, dataset: str, column: str) -> list[Any]:
    frame = spark.read.option("basePath", str(archive_url / dataset)).parquet(str(archive_url / dataset))
    return sorted(row[0] for row in frame.select(column).collect())


def test_a_crash_between_the_archive_and_the_delete_loses_and_duplicates_nothing(spark: Any, tmp_path: Path) -> None:
    history = settled_history()
    settled = {str(m.pk) for m in history["settled"]}
    deliveries = sorted(Delivery.objects.filter(message__in=history["settled"]).values_list("pk", flat=True))
    archive_url = tmp_path / "archive"

    crashed = archive_command(archive_url, "--kill-after-write")
    assert crashed.returncode == -9, f"expected a SIGKILL:\n{crashed.stdout}\n{crashed.stderr}"
    batch = ArchiveBatch.objects.get()
    assert batch.status == ArchiveBatch.Status.CLAIMED
    assert Message.objects.filter(pk__in=settled).count() == 6, "nothing is deleted before the commit"
    assert list(Path(batch.path("messages")).glob("*.parquet")), "the first batch was written before the kill"

    rerun = archive_command(archive_url)
    assert rerun.returncode == 0, f"{rerun.stdout}\n{rerun.stderr}"

    assert not Message.objects.filter(pk__in=settled).exists()
    assert not Delivery.objects.filter(message_id__in=settled).exists()
    assert set(Message.objects.values_list("pk", flat=True)) == {m.pk for m in history["kept"]}
    assert Delivery.objects.filter(status=Status.DEAD_LETTERED).count() == 1
    assert sorted(str(pk) for pk in ArchivedMessage.objects.values_list("message_id", flat=True)) == sorted(settled)
    assert set(ArchiveBatch.objects.values_list("status", flat=True)) == {ArchiveBatch.Status.DONE}
    # Exactly once each in the archive: the crashed batch was redone over its own files, not added to them.
    assert archived_ids(spark, archive_url, "messages", "id") == sorted(settled)
    assert archived_ids(spark, archive_url, "deliveries", "id") == deliveries
    assert len(archived_ids(spark, archive_url, "attempts", "id")) == len(deliveries)
    assert len(archived_ids(spark, archive_url, "sends", "id")) == len(deliveries)
    assert sorted(p.name for p in (archive_url / "messages").iterdir()) == sorted(
        {f"date={m.created_at.astimezone(UTC).date().isoformat()}" for m in history["settled"]})
    runs = list(ArchiveRun.objects.order_by("pk").values_list("status", "messages"))
    assert runs == [(ArchiveRun.Status.FAILED, 0), (ArchiveRun.Status.SUCCEEDED, 6)], runs

    again = archive_command(archive_url)
    assert again.returncode == 0 and "0 message(s)" in again.stdout, again.stdout + again.stderr


def test_a_dry_run_says_what_would_move_and_moves_nothing(tmp_path: Path) -> None:
    history = settled_history()
    done = archive_command(tmp_path / "archive", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would archive 6 message(s) in 3 new batch(es)" in done.stdout, done.stdout
    assert Message.objects.count() == len(history["settled"]) + len(history["kept"])
    assert not ArchiveBatch.objects.exists() and not (tmp_path / "archive").exists()


def test_an_archived_message_answers_as_archived_in_the_api_and_the_console_lists_the_run(
        tmp_path: Path, client: Client, staff_client: Client) -> None:
    room = make_room(name="orders", retention_ms=3600 * 1000)
    message = make_message(room, created_at=timezone.now() - timedelta(days=2))
    make_delivery(message, make_subscription(room), status=Status.DELIVERED)
    settings.DOVECOTE_ARCHIVE_URL = str(tmp_path / "archive")
    from analytics import archive

    run = archive.run_archive(lambda batch: {})  # the Parquet side is the test above's; here only the answer
    assert run.messages == 1
    key = ApiKey.issue("orders", rooms=[room])[1]
    other = ApiKey.issue("other", rooms=[make_room(name="other")])[1]

    reply = call_api(client, "get", f"/api/v1/messages/{message.pk}/", None, key)
    assert reply.status_code == 410, reply.content
    body = reply.json()
    assert (body["message_id"], body["room"], body["status"]) == (str(message.pk), room.pk, "archived")
    batch = ArchivedMessage.objects.get().batch
    assert body["archive_location"]["messages"] == f"{tmp_path / 'archive'}/messages/date={batch.date}/batch={batch.pk}"
    assert body["archived_at"]
    assert call_api(client, "get", f"/api/v1/messages/{message.pk}/", None, other).status_code == 403
    assert call_api(client, "get", f"/api/v1/messages/{Message().pk}/", None, key).status_code == 404

    page = staff_client.get(f"/messages/{message.pk}/")
    assert page.status_code == 410
    text = page.content.decode()
    assert "Archived" in text and f"batch={batch.pk}" in text and "orders" in text, text
    runs = staff_client.get("/reports/").content.decode()
    assert f'data-archive-run="{run.pk}"' in runs and str(tmp_path / "archive") in runs
