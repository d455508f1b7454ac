"""A connection to the test database of its own, beside Django's: its own transaction, its own row locks."""

from __future__ import annotations

import psycopg
from django.db import connection


def other_connection(*, autocommit: bool = False) -> psycopg.Connection:
    """Connect to the database Django's connection uses (the test database), as a second client would."""
    settings = connection.settings_dict
    return psycopg.connect(dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"],
                           host=settings["HOST"], port=settings["PORT"] or 5432, autocommit=autocommit)
