"""Drop the indexes of the delivery path that nothing reads.

Each of them was written with every message, delivery and attempt:
- the foreign-key indexes that an index of the same table already leads with (the message's room, the
  delivery's message and subscription, the attempt's delivery, the idempotency key's room, the push
  claim's subscription);
- the delivery's lease token (a lease is always looked up with its delivery's id, and most rows hold "");
- the LIKE indexes of the correlation ids (they are only ever compared whole). Each correlation id keeps
  its plain index, under a name of the model's Meta.

On PostgreSQL it only drops indexes (CONCURRENTLY) and renames the two plain ones: no write waits for
it and nothing is built, however large the tables are. Django's own operations would drop and re-add
each foreign key, checking every row again under a lock; they run on the other databases (SQLite, the
embedded demo), whose tables are small.
"""

import django.db.models.deletion
from django.db import migrations, models

from delivery.migrations._postgresql import StateWithSqlOnPostgreSQL


# (table, index dropped); the two plain correlation-id indexes are renamed instead.
DROPPED = [
    ("delivery_delivery", "delivery_delivery_lease_token_c4a5599d"),
    ("delivery_delivery", "delivery_delivery_lease_token_c4a5599d_like"),
    ("delivery_delivery", "delivery_delivery_message_id_8b851251"),
    ("delivery_delivery", "delivery_delivery_subscription_id_d175ba11"),
    ("delivery_attempts", "delivery_attempts_correlation_id_448d866c_like"),
    ("delivery_attempts", "delivery_attempts_delivery_id_d251ec49"),
    ("delivery_idempotencykey", "delivery_idempotencykey_room_id_cbc2b279"),
    ("delivery_message", "delivery_message_correlation_id_ead38d01_like"),
    ("delivery_message", "delivery_message_room_id_82b08093"),
    ("delivery_pushclaim", "delivery_pushclaim_subscription_id_4015945d"),
]
RENAMED = [
    ("delivery_attempts_correlation_id_448d866c", "attempt_correlation"),
    ("delivery_message_correlation_id_ead38d01", "message_correlation"),
]
# How each dropped index is built again when the migration is reversed.
REBUILT = {
    "delivery_delivery_lease_token_c4a5599d": '("lease_token")',
    "delivery_delivery_lease_token_c4a5599d_like": '("lease_token" varchar_pattern_ops)',
    "delivery_delivery_message_id_8b851251": '("message_id")',
    "delivery_delivery_subscription_id_d175ba11": '("subscription_id")',
    "delivery_attempts_correlation_id_448d866c_like": '("correlation_id" varchar_pattern_ops)',
    "delivery_attempts_delivery_id_d251ec49": '("delivery_id")',
    "delivery_idempotencykey_room_id_cbc2b279": '("room_id")',
    "delivery_message_correlation_id_ead38d01_like": '("correlation_id" varchar_pattern_ops)',
    "delivery_message_room_id_82b08093": '("room_id")',
    "delivery_pushclaim_subscription_id_4015945d": '("subscription_id")',
}

ON_POSTGRESQL = migrations.RunSQL(
    sql=(*(f'DROP INDEX CONCURRENTLY IF EXISTS "{index}"' for _, index in DROPPED),
         *(f'ALTER INDEX IF EXISTS "{old}" RENAME TO "{new}"' for old, new in RENAMED)),
    reverse_sql=(*(f'ALTER INDEX IF EXISTS "{new}" RENAME TO "{old}"' for old, new in RENAMED),
                 *(f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{index}" ON "{table}" {REBUILT[index]}'
                   for table, index in DROPPED)),
)


class Migration(migrations.Migration):
    atomic = False  # DROP INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ('delivery', '0008_push_claims_one_per_worker'),
        ('rooms', '0005_room_retention'),
        ('subscriptions', '0010_session_claims_move_to_push_claims'),
    ]

    operations = [
        StateWithSqlOnPostgreSQL([
            migrations.AlterField(
                model_name='delivery',
                name='lease_token',
                field=models.CharField(blank=True, default='', max_length=64),
            ),
            migrations.AlterField(
                model_name='delivery',
                name='message',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='delivery.message'),
            ),
            migrations.AlterField(
                model_name='delivery',
                name='subscription',
                field=models.ForeignKey(db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='deliveries', to='subscriptions.subscription'),
            ),
            migrations.AlterField(
                model_name='deliveryattempt',
                name='correlation_id',
                field=models.CharField(max_length=200),
            ),
            migrations.AlterField(
                model_name='deliveryattempt',
                name='delivery',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='attempt_log', to='delivery.delivery'),
            ),
            migrations.AlterField(
                model_name='idempotencykey',
                name='room',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='rooms.room'),
            ),
            migrations.AlterField(
                model_name='message',
                name='correlation_id',
                field=models.CharField(max_length=200),
            ),
            migrations.AlterField(
                model_name='message',
                name='room',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='rooms.room'),
            ),
            migrations.AlterField(
                model_name='pushclaim',
                name='subscription',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='push_claims', to='subscriptions.subscription'),
            ),
            migrations.AddIndex(
                model_name='deliveryattempt',
                index=models.Index(fields=['correlation_id'], name='attempt_correlation'),
            ),
            migrations.AddIndex(
                model_name='message',
                index=models.Index(fields=['correlation_id'], name='message_correlation'),
            ),
        ], ON_POSTGRESQL),
    ]
