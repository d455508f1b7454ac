"""The report jobs read the Parquet archive for the rows retention moved there and PostgreSQL for the rest:
the reports over archive + hot tail equal the reports over the same rows kept in PostgreSQL, whether the
archive's batches were written with their report inputs or (archived before those) get them later."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from analytics import archive, runner, synthetic_history
from analytics.jobs.main import run_reports
from analytics.models import ArchiveBatch
from delivery.models import Delivery, Message
from rooms.models import Room
from tests.analytics.test_analytics_reports import REPORT_TABLES, require_spark

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HISTORY_END = datetime.now(UTC).replace(minute=30, second=0, microsecond=0) - timedelta(hours=3)


@pytest.fixture
def spark(django_db_setup) -> Iterator[Any]:
    require_spark()
    from analytics.jobs.session import build_session

    session = build_session(runner.job_config())
    yield session
    session.stop()


def report_rows() -> dict[str, list[tuple]]:
    with connection.cursor() as cursor:
        tables = {}
        for table in REPORT_TABLES:
            cursor.execute(f"SELECT * FROM {table} ORDER BY key")
            tables[table] = cursor.fetchall()
        return tables


def differences(before: dict[str, list[tuple]], after: dict[str, list[tuple]]) -> list[str]:
    """Describe the rows that differ, a few per table."""
    found = []
    for table in REPORT_TABLES:
        old, new = set(before[table]), set(after[table])
        found += [f"{table} only in PostgreSQL alone: {row}" for row in sorted(old - new, key=str)[:3]]
        found += [f"{table} only with the archive: {row}" for row in sorted(new - old, key=str)[:3]]
    return found


def test_reports_over_the_archive_and_the_hot_tail_equal_reports_over_postgresql(spark: Any, tmp_path: Path,
                                                                                  settings) -> None:
    synthetic_history.generate(1_500, 2, seed=11, end=HISTORY_END)
    config = runner.job_config()
    run_reports(lambda: spark, config, full=True)
    kept_in_postgresql = report_rows()
    assert sum(len(rows) for rows in kept_in_postgresql.values()) > 100

    Room.objects.update(retention_ms=24 * 3600 * 1000)  # the older of the two days goes, where settled
    settings.DOVECOTE_ARCHIVE_URL = str(tmp_path / "archive")
    settings.DOVECOTE_ARCHIVE_BATCH = 400
    run = archive.run_archive(archive.spark_writer(lambda: spark, config))
    hot = Message.objects.count()
    assert run.messages > 300 and hot > 300, f"archived {run.messages}, still in PostgreSQL {hot}"
    assert ArchiveBatch.objects.filter(status=ArchiveBatch.Status.DONE).count() >= 2
    assert Delivery.objects.filter(status=Delivery.Status.DEAD_LETTERED, purged_at=None).exists(), \
        "dead letters stay in PostgreSQL, so the reports read both sides"

    run_reports(lambda: spark, config, full=True)
    from_archive_and_tail = report_rows()
    assert not differences(kept_in_postgresql, from_archive_and_tail), "\n".join(
        differences(kept_in_postgresql, from_archive_and_tail))

    # A run over some hours reads only the batches whose rows meet them: across the retention's edge,
    # archived and hot rows in the same hours, the figures are still those of PostgreSQL alone.
    edge = HISTORY_END - timedelta(days=1)
    run_reports(lambda: spark, config, since=edge - timedelta(hours=5), until=edge + timedelta(hours=5))
    assert not differences(kept_in_postgresql, report_rows()), "\n".join(
        differences(kept_in_postgresql, report_rows()))

    # Batches archived before the archive held report inputs (layout 1: their tables only) get them from
    # their own tables' Parquet when a report run first reads them; the figures are the same again.
    done = list(ArchiveBatch.objects.filter(status=ArchiveBatch.Status.DONE))
    for batch in done:
        for name in ("report_attempts", "report_sends", "report_expiries"):
            shutil.rmtree(batch.path(name))
    ArchiveBatch.objects.filter(pk__in=[batch.pk for batch in done]).update(layout=1)
    run_reports(lambda: spark, config, full=True)
    assert not differences(kept_in_postgresql, report_rows()), "\n".join(
        differences(kept_in_postgresql, report_rows()))
    assert set(ArchiveBatch.objects.filter(status=ArchiveBatch.Status.DONE).values_list("layout", flat=True)) == {2}
    assert all(Path(batch.path("report_attempts")).is_dir() for batch in done)
