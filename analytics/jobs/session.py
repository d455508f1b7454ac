"""Start the Spark session the report jobs run in.

Starting the driver's JVM and running its first job cost a report run ~11 s on two cores, most of it
loading and verifying Spark's classes. A JVM class-data archive (Java's AppCDS) of those classes,
mapped at start, saves ~5 s of it: the first run on a machine (or after Java, Spark or the jars
changed, which changes the archive's name) writes one at its JVM's exit, and every later run maps
it. The archive is promoted to its name only after its JVM exited cleanly and a JVM started with it
(a truncated archive would crash the JVM that maps it).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
from py4j.protocol import Py4JError
from pyspark import SparkContext
from pyspark.find_spark_home import _find_spark_home
from pyspark.sql import SparkSession

from analytics.jobs.config import JobConfig

log = logging.getLogger("dovecote.analytics")


# The JVM's own zone, so no timestamp is ever read as local time.
UTC_OPTION = "-Duser.timezone=UTC"
# The JVM says nothing of its class-data archive: not the classes it cannot archive (thousands of lines
# at the dump), not an archive it cannot use (it runs without, as it would with none).
QUIET_CDS = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def spark_conf(config: JobConfig, driver_options: str = "") -> dict[str, str]:
    """Return the Spark settings of a report run (`driver_options`: more options for the driver's JVM)."""
    return {
        # Read when the driver JVM starts, so it must be set here; under spark-submit pass --driver-memory.
        "spark.driver.memory": config.driver_memory,
        # The JDBC driver as a local jar: nothing is fetched at run time (--packages fails offline).
        "spark.jars": config.jars,
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": f"{UTC_OPTION} {driver_options}".strip(),
        "spark.executor.extraJavaOptions": UTC_OPTION,
        "spark.sql.shuffle.partitions": str(config.shuffle_partitions),
        # A report run reads each archive batch by its folder, listed on the driver up to this many folders.
        # Over it (Spark's default: 32) Spark lists them in a job of its own: 2.5-5 s per dataset for 650
        # local folders, 0.3-1.3 s listed here.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        "spark.ui.enabled": "false",  # no port to collide with other runs on the same machine
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "WARN",
    }


def build_session(config: JobConfig, *, dump_classes_to: Path | None = None) -> SparkSession:
    """Start a session on `config.master` (or join the one this process already runs).

    A JVM started here maps the class-data archive when there is one; with `dump_classes_to` it
    writes one there at its exit instead (LazySession.stop promotes it).
    """
    prepare_environment(config)
    builder = SparkSession.builder.master(config.master).appName(config.app_name)
    for key, value in spark_conf(config, class_data_options(config, dump_classes_to)).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def class_data_options(config: JobConfig, dump_classes_to: Path | None) -> str:
    """Return the driver JVM's options for its class-data archive: write one to `dump_classes_to` at its exit,
    else map the archive if there is one."""
    if dump_classes_to is not None:
        return f"-XX:ArchiveClassesAtExit={dump_classes_to} {QUIET_CDS}"
    archive = class_archive(config)
    return f"-XX:SharedArchiveFile={archive} {QUIET_CDS}" if archive is not None and archive.exists() else ""


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


def java_command() -> str | None:
    """The java the launcher runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java", path=os.path.join(home, "bin")) if home else shutil.which("java")


def class_archive(config: JobConfig) -> Path | None:
    """Return where this Java, Spark and jars' class-data archive is kept (None: none is kept, or no java)."""
    java = java_command()
    if not config.class_archives or java is None:
        return None
    binary = os.path.realpath(java)
    stat = os.stat(binary)
    made_by = f"{pyspark.__version__}|{binary}|{stat.st_size}|{stat.st_mtime_ns}|{config.jars}"
    return Path(config.class_archives) / f"driver-{hashlib.sha256(made_by.encode()).hexdigest()[:16]}.jsa"


def promote_class_archive(dumped: Path, archive: Path) -> bool:
    """Give a dumped archive its name if a JVM starts with it (a truncated one crashes it); remove it otherwise."""
    java = java_command()
    # A crash writes no hs_err_pid file: the crash is the answer.
    check = subprocess.run([java, f"-XX:SharedArchiveFile={dumped}", *QUIET_CDS.split(), "-XX:ErrorFile=/dev/null",
                            "-XX:-CreateCoredumpOnCrash", "-version"],
                           capture_output=True, check=False, timeout=60) if java else None
    if check is None or check.returncode != 0:
        dumped.unlink(missing_ok=True)
        return False
    dumped.replace(archive)
    for other in archive.parent.glob("driver-*.jsa"):
        if other != archive:  # another Java's or Spark's: never mapped again
            other.unlink(missing_ok=True)
    remove_abandoned_dumps(archive.parent)  # a run killed while it dumped beside this one
    return True


def remove_abandoned_dumps(folder: Path) -> None:
    """Remove the archives being dumped for processes that are gone (killed before `stop` promoted theirs)."""
    for dump in folder.glob("driver-*.dump"):
        try:
            os.kill(int(dump.name.split(".")[-2]), 0)
        except ProcessLookupError:
            dump.unlink(missing_ok=True)  # a JVM still writing it goes on writing to the unlinked file
        except (ValueError, PermissionError):
            continue


class LazySession:
    """Start the session on first use: a run with nothing to recompute never starts a JVM.

    When this process starts the JVM and there is no class-data archive yet, the JVM writes one at
    its exit, which `stop` then brings about (and waits for).
    """

    def __init__(self, config: JobConfig) -> None:
        self.config = config
        self.session: SparkSession | None = None
        self._dumping: tuple[Path, Path] | None = None

    def __call__(self) -> SparkSession:
        if self.session is None:
            archive = class_archive(self.config)
            dump = None
            if archive is not None and not archive.exists() and SparkContext._gateway is None:
                try:
                    archive.parent.mkdir(parents=True, exist_ok=True)
                    remove_abandoned_dumps(archive.parent)
                except OSError as error:  # a folder it may not write: run without an archive
                    log.warning("no class-data archive for the Spark driver in %s: %s", archive.parent, error)
                else:
                    dump = archive.with_name(f"{archive.stem}.{os.getpid()}.dump")
                    self._dumping = (dump, archive)
            self.session = build_session(self.config, dump_classes_to=dump)
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
        if self._dumping is not None:
            self._write_class_archive(*self._dumping)

    def _write_class_archive(self, dump: Path, archive: Path) -> None:
        """End this process's JVM, which writes its class-data archive as it exits, and promote the archive."""
        self._dumping = None
        gateway = SparkContext._gateway  # PySpark keeps its one JVM here
        process = getattr(gateway, "proc", None)
        if gateway is None or process is None:
            return
        SparkContext._gateway = SparkContext._jvm = None  # a later session starts a new JVM
        gateway.shutdown()
        if process.stdin is not None:
            process.stdin.close()  # the JVM exits when its stdin ends (PySpark's launcher)
        try:
            exited = process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            exited = None
        if exited == 0 and dump.exists() and promote_class_archive(dump, archive):
            log.info("wrote the Spark driver's class-data archive %s", archive)
        else:
            dump.unlink(missing_ok=True)
            log.warning("the Spark driver's class-data archive was not written (its JVM exited with %s)", exited)
