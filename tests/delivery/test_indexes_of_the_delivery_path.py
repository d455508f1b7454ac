"""The delivery path's tables carry no index that another already serves, and the migrations say what the models say.

Every message, delivery and attempt writes one entry into each index of its table, and a push
attempt rewrites its delivery's entries twice (its claim, its outcome): an index nothing reads is
paid for on every publish and every POST (delivery/migrations/0009_lean_indexes.py).
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection

from delivery.models import Delivery, DeliveryAttempt, IdempotencyKey, Message, PushClaim, SendRecord

pytestmark = pytest.mark.django_db

TABLES = [model._meta.db_table for model in (Message, Delivery, DeliveryAttempt, SendRecord, IdempotencyKey, PushClaim)]


def indexes(table: str) -> list[tuple[str, list[str], bool, bool, str]]:
    """Each index of `table`: its name, its key columns in order, unique, partial, and its definition."""
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT i.relname, array_agg(a.attname ORDER BY k.ord), x.indisunique, x.indpred IS NOT NULL,
                   pg_get_indexdef(x.indexrelid)
              FROM pg_index x
              JOIN pg_class t ON t.oid = x.indrelid
              JOIN pg_class i ON i.oid = x.indexrelid
              CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord)
              JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
             WHERE t.relname = %s AND k.ord <= x.indnkeyatts
             GROUP BY i.relname, x.indisunique, x.indpred, x.indexrelid""", [table])
        return [(name, list(columns), unique, partial, definition)
                for name, columns, unique, partial, definition in cursor.fetchall()]


def test_the_models_need_no_migration_that_is_not_written() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit:
        pytest.fail(f"the models differ from the migrations (makemigrations --check exited {exit.code}):\n"
                    f"{out.getvalue()}")


@pytest.mark.parametrize("table", TABLES)
def test_no_index_is_served_by_another(table: str) -> None:
    found = indexes(table)
    assert found, f"no index found on {table}"
    redundant = [
        f"{name} {columns} (served by {other} {other_columns})"
        for name, columns, unique, partial, _ in found
        for other, other_columns, _, other_partial, _ in found
        if other != name and not unique and not partial and not other_partial
        and other_columns[:len(columns)] == columns
    ]
    assert not redundant, f"{table}: indexes whose columns another index leads with: {redundant}"


@pytest.mark.parametrize("table", TABLES)
def test_no_like_index_is_kept_for_ids_compared_whole(table: str) -> None:
    like = [definition for _, _, _, _, definition in indexes(table) if "pattern_ops" in definition]
    assert not like, f"{table}: LIKE indexes (Django's db_index=True on a text field) nothing reads: {like}"


def test_a_correlation_id_is_still_found_by_its_index() -> None:
    names = {table: {name: columns for name, columns, *_ in indexes(table)}
             for table in (Message._meta.db_table, DeliveryAttempt._meta.db_table)}
    assert names[Message._meta.db_table].get("message_correlation") == ["correlation_id"], names
    assert names[DeliveryAttempt._meta.db_table].get("attempt_correlation") == ["correlation_id"], names
