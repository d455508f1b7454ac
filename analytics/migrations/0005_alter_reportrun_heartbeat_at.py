"""A request's heartbeat: written by the process waiting for it (analytics/runner.py run_by_follower).

Only the field's help text changes; the column is as it was.
"""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analytics', '0004_archive_batch_layout'),
    ]

    operations = [
        migrations.AlterField(
            model_name='reportrun',
            name='heartbeat_at',
            field=models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), help_text="Written by the running run's driver every few seconds (while requested: by the process waiting for it, if one does).", null=True),
        ),
    ]
