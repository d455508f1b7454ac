"""Archive batches record their layout: the batches already done hold their tables only (layout 1).

A report run writes their report inputs from those tables the first time it reads them
(analytics/jobs/archive.py add_report_inputs). A batch still claimed is redone whole by the next
archive run, report inputs included, so it takes the new layout (2) with every batch made from now on.
"""

from django.db import migrations, models


def done_batches_hold_tables_only(apps, schema_editor):
    apps.get_model("analytics", "ArchiveBatch").objects.filter(status="done").update(layout=1)


class Migration(migrations.Migration):

    dependencies = [
        ("analytics", "0003_archive_runs_batches_and_tombstones"),
    ]

    operations = [
        migrations.AddField(
            model_name="archivebatch",
            name="layout",
            field=models.PositiveSmallIntegerField(default=2),
        ),
        migrations.RunPython(done_batches_hold_tables_only, migrations.RunPython.noop),
    ]
