"""PostgreSQL's text form of a one-dimensional array, for a parameter cast to its type (`%s::bigint[]`).

The push statements (delivery/statements.py), the push engine's renewal (delivery/push/claims.py), the
publish path's writes (delivery/rows.py) and the `any_of` lookup (dovecote/lookups.py) bind their lists
this way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any


def array(values: Iterable[bool | int | str | uuid.UUID | datetime | None]) -> str:
    """PostgreSQL's text form of a one-dimensional array of `values`, for a parameter cast to its type (`%s::int[]`).

    psycopg adapts a list in Python, element by element, with a dumper it looks for on each list: the
    parameters of a 17-row claim and record took 130 and 263 µs that way, and 34 and 66 µs as text (a scratch
    script; docs/benchmarks.md "The push statements' arrays as text"). The statement, its parameters' types
    and so its plan stay the same: PostgreSQL reads the text with the cast's array input function. Texts are
    quoted (any character may be in one); None is NULL.
    """
    try:
        return "{" + ",".join([_ELEMENT[type(value)](value) for value in values]) + "}"
    except KeyError as error:
        raise TypeError(f"no array element form for a {error.args[0].__name__}") from None


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _instant(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError(f"a naive datetime ({moment}) names no single instant")
    return moment.isoformat()


_ELEMENT: dict[type, Callable[[Any], str]] = {
    bool: lambda flag: "t" if flag else "f", int: str, uuid.UUID: str, str: _quoted, datetime: _instant,
    type(None): lambda _: "NULL"}
