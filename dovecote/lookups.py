"""`field__any_of=[…]`: membership in a long list, bound as ONE array parameter on PostgreSQL.

`field__in=[…]` binds a parameter per item: for the push engine's renewal, which names every
subscription a worker holds each second, Django's compiling of a thousand placeholders and
psycopg's splitting and dumping of them cost more of the worker's CPU than PostgreSQL took to run
the statement. `= ANY(%s)` with the list as one array costs the same whatever its length. On another
database it is `IN`.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Field, ForeignObject, Lookup
from django.db.models.lookups import In


class AnyOf(Lookup):
    lookup_name = "any_of"
    prepare_rhs = False

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        output = self.lhs.output_field
        values = [output.get_db_prep_value(value, connection, prepared=False) for value in self.rhs]
        return f"{lhs} = ANY(%s)", [*lhs_params, values]

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        return In(self.lhs, list(self.rhs)).as_sql(compiler, connection)


Field.register_lookup(AnyOf)
ForeignObject.register_lookup(AnyOf)  # a foreign key's lookups are its own, not Field's
