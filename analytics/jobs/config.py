"""What a report run needs to know: the database, and how to run Spark."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

DEFAULT_JARS = "/usr/share/java/postgresql.jar"  # Debian's libpostgresql-jdbc-java


@dataclass(frozen=True)
class Database:
    """The PostgreSQL database holding the log tables and the report tables."""

    host: str
    port: int
    name: str
    user: str
    password: str = ""

    @classmethod
    def from_url(cls, url: str) -> Database:
        """Read a postgres://user:password@host:port/name URL (the form DATABASE_URL takes)."""
        parts = urlsplit(url)
        if parts.scheme not in {"postgres", "postgresql"} or not parts.path.strip("/"):
            raise ValueError(f"not a postgres://user:password@host:port/name URL: {parts.scheme}://…")
        return cls(host=parts.hostname or "127.0.0.1", port=parts.port or 5432, name=unquote(parts.path[1:]),
                   user=unquote(parts.username or ""), password=unquote(parts.password or ""))

    @property
    def jdbc_url(self) -> str:
        # Batched INSERTs become multi-row INSERTs: several times faster for the staging writes.
        return f"jdbc:postgresql://{self.host}:{self.port}/{quote(self.name)}?reWriteBatchedInserts=true"

    @property
    def jdbc_properties(self) -> dict[str, str]:
        return {"user": self.user, "password": self.password, "driver": "org.postgresql.Driver"}

    def psycopg_kwargs(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "dbname": self.name, "user": self.user,
                "password": self.password or None}


@dataclass(frozen=True)
class JobConfig:
    """Spark settings (defaults suit a 2-core machine) and the report run's tuning."""

    database: Database
    master: str = "local[*]"
    driver_memory: str = "1g"
    jars: str = DEFAULT_JARS
    partitions: int = 2  # JDBC read partitions, split on id bounds; 2 was fastest on 2 cores
    # ... and more for big reads, so no task holds more than this many rows (a JDBC read's, or the
    # attempts a Python worker sorts for their percentiles: ~100 bytes a row).
    rows_per_partition: int = 500_000
    fetchsize: int = 10_000  # rows per JDBC round trip (the driver's default, 0, buffers the whole result)
    # Two tasks per core; the outputs are small (Spark's default, 200, is mostly empty tasks).
    shuffle_partitions: int = 4
    # A folder for the driver JVM's class-data archive (session.py's class_archive); "": none is made or used.
    class_archives: str = ""
    overlap_s: int = 300  # how far before the last watermark an incremental run looks again
    max_ranges: int = 50  # touched hours are read as at most this many time ranges
    app_name: str = "dovecote-reports"

    @property
    def is_local(self) -> bool:
        return self.master.startswith("local")


@dataclass(frozen=True)
class IdRange:
    """The ids of the rows a read will return, for splitting it into partitions."""

    low: int
    high: int
    rows: int
