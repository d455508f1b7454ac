"""Start the Spark session the report jobs run in."""

from __future__ import annotations

import logging
import os
import sys

from py4j.protocol import Py4JError
from pyspark.find_spark_home import _find_spark_home
from pyspark.sql import SparkSession

from analytics.jobs.config import JobConfig

log = logging.getLogger("dovecote.analytics")


def spark_conf(config: JobConfig) -> dict[str, str]:
    """Return the Spark settings of a report run."""
    utc = "-Duser.timezone=UTC"  # the JVM's own zone, so no timestamp is ever read as local time
    return {
        # Read when the driver JVM starts, so it must be set here; under spark-submit pass --driver-memory.
        "spark.driver.memory": config.driver_memory,
        # The JDBC driver as a local jar: nothing is fetched at run time (--packages fails offline).
        "spark.jars": config.jars,
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": utc,
        "spark.executor.extraJavaOptions": utc,
        "spark.sql.shuffle.partitions": str(config.shuffle_partitions),
        # A report run reads each archive batch by its folder: list up to this many in the driver. Over
        # 32 (the default) Spark lists them in a job of its own, 1.5 s per dataset for 188 local folders.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "512",
        "spark.ui.enabled": "false",  # no port to collide with other runs on the same machine
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "WARN",
    }


def build_session(config: JobConfig) -> SparkSession:
    """Start a session on `config.master` (or join the one this process already runs)."""
    prepare_environment(config)
    builder = SparkSession.builder.master(config.master).appName(config.app_name)
    for key, value in spark_conf(config).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def prepare_environment(config: JobConfig) -> None:
    """Set what the local launcher needs before the JVM starts (spark-submit sets its own)."""
    os.environ.setdefault("SPARK_HOME", _find_spark_home())
    bin_dir = os.path.dirname(sys.executable)
    # Spark's launch scripts call `python3`: make it this interpreter, which has pyspark.
    if not os.environ.get("PATH", "").startswith(bin_dir + os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    if config.is_local:
        # Only for local[*]: on a cluster the executors must reach the driver on a real address,
        # and run the cluster's Python, not this path.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


class LazySession:
    """Start the session on first use: a run with nothing to recompute never starts a JVM."""

    def __init__(self, config: JobConfig) -> None:
        self.config = config
        self.session: SparkSession | None = None

    def __call__(self) -> SparkSession:
        if self.session is None:
            self.session = build_session(self.config)
        return self.session

    def stop(self) -> None:
        """Stop the session and its JVM; one already gone is said, not raised.

        The local JVM is a child in this process's group: a SIGTERM to the whole group (honcho
        stopping `make run`, `kill -- -PGID`) ends it at once, before the driver's own stop.
        """
        if self.session is None:
            return
        try:
            self.session.stop()
        except (Py4JError, OSError) as error:
            log.warning("Spark's JVM had stopped before the session (%s: %s)", type(error).__name__, error)
