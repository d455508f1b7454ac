"""A message that stops being removable between its batch's Parquet write and the delete (a re-publish routed
an unroutable one) discards the batch: nothing deleted, no tombstone, its files never read by the reports."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analytics import archive
from analytics.models import ArchiveBatch, ArchiveClaim, ArchivedMessage
from delivery.models import Delivery, Message
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


def test_a_batch_whose_message_was_routed_meanwhile_is_discarded_and_nothing_is_deleted(settings, tmp_path) -> None:
    settings.DOVECOTE_ARCHIVE_URL = str(tmp_path)
    room = make_room(retention_ms=3600 * 1000)
    subscription = make_subscription(room)
    old = timezone.now() - timedelta(days=2)
    unroutable = make_message(room, created_at=old)
    Delivery.objects.create(message=unroutable, destination="", status=Delivery.Status.UNROUTABLE)
    delivered = make_message(room, created_at=old + timedelta(minutes=1))
    make_delivery(delivered, subscription, status=Delivery.Status.DELIVERED)

    def write_while_it_is_republished(batch: ArchiveBatch) -> dict[str, int]:
        # What delivery/publish.py's republish does: the unroutable row gives way to a pending delivery.
        Delivery.objects.filter(message=unroutable).delete()
        make_delivery(unroutable, subscription, status=Delivery.Status.PENDING)
        return {}

    run = archive.run_archive(write_while_it_is_republished)

    assert (run.batches, run.discarded, run.messages) == (0, 1, 0)
    assert ArchiveBatch.objects.get().status == ArchiveBatch.Status.DISCARDED
    assert Message.objects.filter(pk__in=[unroutable.pk, delivered.pk]).count() == 2
    assert not ArchivedMessage.objects.exists() and not ArchiveClaim.objects.exists()

    # The next run archives the message that is still settled, and keeps the one now on its way.
    again = archive.run_archive(lambda batch: {})
    assert (again.batches, again.discarded, again.messages) == (1, 0, 1)
    assert list(Message.objects.values_list("pk", flat=True)) == [unroutable.pk]
    assert list(ArchivedMessage.objects.values_list("message_id", flat=True)) == [delivered.pk]
