"""The lease expiry index holds leased deliveries only.

`delivery_lease_expiry` (status, lease_expires_at) had an entry for every delivery, written again at every
status change: the publish, the relay's receipt, each push attempt's claim and outcome. Only leased rows are
ever looked up in it, by the lease sweep (`claim_expired_leases`: leased rows whose lease ran out) and the count
of leases in /metrics, so `delivery_leased_expiry`
(lease_expires_at) WHERE status = 'leased' takes its place: a push delivery never writes an entry, and the
relay's receipt statement writes a tenth fewer WAL records (docs/benchmarks.md, "The rows' JSON by orjson, the lease index").

On PostgreSQL the new index is built CONCURRENTLY before the old one is dropped CONCURRENTLY, so no write
waits for either, however large the table; elsewhere (SQLite, the embedded demo) Django's own operations run.
"""

from django.db import migrations, models

from delivery.migrations._postgresql import StateWithSqlOnPostgreSQL

OLD = "delivery_lease_expiry"
NEW = "delivery_leased_expiry"

CREATE_NEW = (f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{NEW}" ON "delivery_delivery" ("lease_expires_at") '
              f"WHERE \"status\" = 'leased'")
CREATE_OLD = f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{OLD}" ON "delivery_delivery" ("status", "lease_expires_at")'

ON_POSTGRESQL = migrations.RunSQL(
    sql=(CREATE_NEW, f'DROP INDEX CONCURRENTLY IF EXISTS "{OLD}"'),
    reverse_sql=(CREATE_OLD, f'DROP INDEX CONCURRENTLY IF EXISTS "{NEW}"'),
)

OPERATIONS = [
    migrations.AddIndex(
        model_name="delivery",
        index=models.Index(condition=models.Q(status="leased"), fields=["lease_expires_at"], name=NEW),
    ),
    migrations.RemoveIndex(model_name="delivery", name=OLD),
]


class Migration(migrations.Migration):
    atomic = False  # CREATE and DROP INDEX CONCURRENTLY run outside a transaction

    dependencies = [
        ("delivery", "0009_lean_indexes"),
    ]

    operations = [StateWithSqlOnPostgreSQL(OPERATIONS, ON_POSTGRESQL)]
