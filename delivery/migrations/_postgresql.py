"""An operation for the migrations that change the delivery path's indexes on large tables (not a migration).

Django's own operations describe the state, and run on the other databases (SQLite, the embedded demo), whose
tables are small; on PostgreSQL the migration's own SQL runs instead (CREATE and DROP INDEX CONCURRENTLY, so no
write waits, however large the table). The migration loader skips this module: its name starts with `_`.
"""

from collections.abc import Sequence

from django.db import migrations
from django.db.migrations.operations.base import Operation


class StateWithSqlOnPostgreSQL(migrations.SeparateDatabaseAndState):
    """Django's operations for the state; on PostgreSQL, `on_postgresql` for the database, elsewhere the operations."""

    def __init__(self, operations: Sequence[Operation], on_postgresql: migrations.RunSQL) -> None:
        super().__init__(state_operations=list(operations), database_operations=list(operations))
        self.on_postgresql = on_postgresql

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor == "postgresql":
            self.on_postgresql.database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor == "postgresql":
            self.on_postgresql.database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            super().database_backwards(app_label, schema_editor, from_state, to_state)
