"""`field__any_of=[…]`: membership in a long list, bound as ONE array parameter on PostgreSQL.

`field__in=[…]` binds a parameter per item: for the push engine's renewal, which names every
subscription a worker holds each second, Django's compiling of a thousand placeholders and
psycopg's splitting and dumping of them cost more of the worker's CPU than PostgreSQL took to run
the statement. `= ANY(%s::type[])` binds the list as one parameter in PostgreSQL's text form of an
array (dovecote.pg_arrays.array, as the push statements bind theirs): psycopg adapting a list of
1,600 ids element by element was half the renewal's CPU at 1,600 sessions. Values go as the column
stores them (ids, texts, UUIDs, aware datetimes; anything else is prepared by its field first), best
as a set: Django's query building walks a list or a tuple item by item (`resolve_lookup_value`) before
the lookup sees it, a tenth of the renewal's CPU. On another database it is `IN`.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Field, ForeignObject, Lookup
from django.db.models.lookups import In

from dovecote.pg_arrays import array

AS_STORED = frozenset({int, str})  # values the column takes as they are: no field's preparing


class AnyOf(Lookup):
    lookup_name = "any_of"
    prepare_rhs = False

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        output = self.lhs.output_field
        values = [value if type(value) in AS_STORED else output.get_db_prep_value(value, connection, prepared=False)
                  for value in self.rhs]
        return f"{lhs} = ANY(%s::{output.db_type(connection)}[])", [*lhs_params, array(values)]

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        return In(self.lhs, list(self.rhs)).as_sql(compiler, connection)


Field.register_lookup(AnyOf)
ForeignObject.register_lookup(AnyOf)  # a foreign key's lookups are its own, not Field's
