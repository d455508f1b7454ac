"""The Spark driver's class-data archive (analytics/jobs/session.py): made once, mapped after, never half-made.

Each run below is a child Python process with its own driver JVM, as `manage.py run_reports` is: the
first session writes the archive as its JVM exits, the next one must map it (the file shows in its
JVM's /proc/PID/maps): a new JVM, as a new process's would be. A truncated archive (a JVM killed while
writing one) must never get the name a JVM maps: mapping one crashes the JVM.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analytics.test_analytics_reports import require_spark

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

# One run of the report jobs' session: a small job, then the JVM's pid and whether it mapped an archive.
RUN = """
import sys
from pyspark import SparkContext
from analytics.jobs.config import Database, JobConfig
from analytics.jobs.session import LazySession, class_archive

config = JobConfig(database=Database.from_url("postgres://nobody@127.0.0.1/none"), class_archives=sys.argv[1])
for _ in range(int(sys.argv[2])):
    spark = LazySession(config)
    assert spark().range(1000).selectExpr("id % 7 AS k").groupBy("k").count().count() == 7
    archive = class_archive(config)
    maps = open(f"/proc/{SparkContext._gateway.proc.pid}/maps").read()
    print("mapped" if archive is not None and str(archive) in maps else "not mapped")
    spark.stop()
"""


def run_sessions(folder: Path, sessions: int) -> list[str]:
    """Start and stop `sessions` sessions one after the other in a new process; say of each if it mapped the archive."""
    done = subprocess.run([sys.executable, "-c", RUN, str(folder), str(sessions)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, f"the run failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout.strip().splitlines()[-sessions:]


def test_the_first_run_writes_the_archive_the_next_maps_it_and_a_truncated_one_is_never_used(tmp_path: Path) -> None:
    require_spark()
    from analytics.jobs.session import promote_class_archive, remove_abandoned_dumps

    folder = tmp_path / "classes"
    abandoned = folder / f"driver-0123456789abcdef.{2**22 + 12345}.dump"  # a pid above Linux's pid_max
    folder.mkdir()
    abandoned.write_bytes(b"half")
    ours = folder / f"driver-0123456789abcdef.{os.getpid()}.dump"
    ours.write_bytes(b"being written")
    remove_abandoned_dumps(folder)
    assert not abandoned.exists() and ours.exists()
    ours.unlink()

    # The first session writes it as its JVM ends; a second in the same process starts a new JVM, which maps it.
    assert run_sessions(folder, 2) == ["not mapped", "mapped"]
    written = sorted(path.name for path in folder.iterdir())
    assert len(written) == 1 and written[0].endswith(".jsa"), f"the folder holds {written}"

    # A whole dump is promoted, and a dump abandoned beside it (a run killed while it wrote one) removed.
    whole = folder / written[0]
    other = tmp_path / "other"
    other.mkdir()
    (other / abandoned.name).write_bytes(b"half")
    dumped = other / "driver-0123456789abcdef.1.dump"
    shutil.copyfile(whole, dumped)
    assert promote_class_archive(dumped, other / "driver-0123456789abcdef.jsa") is True
    assert sorted(path.name for path in other.iterdir()) == ["driver-0123456789abcdef.jsa"]

    # A JVM killed while writing leaves a truncated dump: it is removed, never given the archive's name.
    truncated = tmp_path / "driver-0123456789abcdef.1.dump"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 3])
    target = tmp_path / "driver-0123456789abcdef.jsa"
    assert promote_class_archive(truncated, target) is False
    assert not truncated.exists() and not target.exists()
