"""Archive runs hold an advisory lock: a second run while one runs is refused and changes nothing; a run
left `running` by a process that died is recorded failed by the next one, which redoes its batch."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.utils import timezone

from analytics import archive
from analytics.models import ArchiveBatch, ArchiveRun
from delivery.models import Delivery, Message
from tests import workers
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db(transaction=True)


def settled_message() -> Message:
    room = make_room(retention_ms=3600 * 1000)
    message = make_message(room, created_at=timezone.now() - timedelta(days=2))
    make_delivery(message, make_subscription(room), status=Delivery.Status.DELIVERED)
    return message


def test_a_second_run_is_refused_while_one_holds_the_lock(settings, tmp_path) -> None:
    settings.DOVECOTE_ARCHIVE_URL = str(tmp_path)
    message = settled_message()
    with psycopg.connect(workers.test_database_url(), autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [archive.ARCHIVE_LOCK])  # another process's run
        with pytest.raises(archive.ArchiveInProgress):
            archive.run_archive(lambda batch: {})
    assert Message.objects.filter(pk=message.pk).exists()
    assert not ArchiveRun.objects.exists() and not ArchiveBatch.objects.exists()


def test_a_run_whose_process_died_is_recorded_failed_and_its_batch_redone(settings, tmp_path) -> None:
    settings.DOVECOTE_ARCHIVE_URL = str(tmp_path)
    message = settled_message()
    dead = ArchiveRun.objects.create(url=str(tmp_path), started_at=timezone.now())
    batch = archive.claim(dead, message.room, [(message.pk, message.created_at)], timezone.now())
    written = []

    run = archive.run_archive(lambda batch: written.append(batch.pk) or {})

    dead.refresh_from_db()
    assert (dead.status, dead.error) == (ArchiveRun.Status.FAILED, archive.ABANDONED)
    assert written == [batch.pk], "the unfinished batch is written again, and no other"
    assert (run.status, run.batches, run.messages) == (ArchiveRun.Status.SUCCEEDED, 1, 1)
    assert not Message.objects.filter(pk=message.pk).exists()
