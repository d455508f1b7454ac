"""The report jobs on a real Spark standalone cluster (a master and a worker on loopback), not only local[*].

The cluster is started from the installed PySpark distribution (`bin/spark-class`), as an operator
would start one (docs/analytics.md): the driver is `manage.py run_reports --master spark://…` in a
child process, its executors run on the worker, and the JDBC driver reaches them through `spark.jars`.
The figures it writes must equal what SQL computes over the same history.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

from tests.analytics.test_analytics_reports import assert_every_figure_matches_sql, history, latest_run, require_spark

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
__all__ = ["history"]  # the module's generated history, shared with the local-session tests

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spark_env(work: Path) -> dict[str, str]:
    from pyspark.find_spark_home import _find_spark_home

    bin_dir = os.path.dirname(sys.executable)
    return {**os.environ, "SPARK_HOME": _find_spark_home(), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
            "SPARK_WORKER_DIR": str(work / "worker"), "SPARK_LOG_DIR": str(work / "logs"),
            "SPARK_NO_DAEMONIZE": "1"}


class Cluster:
    """A standalone master and one worker, each a child process writing its log to a file."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.port, self.ui_port, self.worker_ui_port = free_port(), free_port(), free_port()
        self.env = spark_env(work)
        self.processes: list[tuple[subprocess.Popen, Path]] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self, name: str, *args: str) -> None:
        log = self.work / f"{name}.log"
        spark_class = str(Path(self.env["SPARK_HOME"]) / "bin" / "spark-class")
        process = subprocess.Popen([spark_class, *args], env=self.env, stdout=log.open("w"),
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append((process, log))

    def logs(self) -> str:
        return "\n".join(f"--- {log.name}:\n{log.read_text()[-3000:]}" for _, log in self.processes)

    def wait_for_worker(self, timeout: float = 120) -> None:
        """Wait until the master's status page lists one alive worker."""
        deadline, seen = time.monotonic() + timeout, "nothing"
        while time.monotonic() < deadline:
            try:
                status = httpx.get(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5).json()
                seen = f"status {status.get('status')}, alive workers {status.get('aliveworkers')}"
                if status.get("status") == "ALIVE" and status.get("aliveworkers", 0) >= 1:
                    return
            except httpx.HTTPError as error:
                seen = repr(error)
            for process, _ in self.processes:
                assert process.poll() is None, f"a Spark daemon exited with {process.returncode}\n{self.logs()}"
            time.sleep(0.5)
        pytest.fail(f"the standalone cluster had no worker after {timeout} s ({seen})\n{self.logs()}")

    def stop(self) -> None:
        for process, _ in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process, _ in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_spark()
    spark = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        spark.start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(spark.port), "--webui-port", str(spark.ui_port))
        spark.start("worker", "org.apache.spark.deploy.worker.Worker", spark.url, "--host", "127.0.0.1",
                    "--cores", "2", "--memory", "1g", "--webui-port", str(spark.worker_ui_port))
        spark.wait_for_worker()
        yield spark
    finally:
        spark.stop()


def database_url() -> str:
    """The URL of the database this test runs on (the suite's own test database)."""
    db = settings.DATABASES["default"]
    return (f"postgres://{db['USER']}:{db['PASSWORD']}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
            f"/{connection.settings_dict['NAME']}")


def test_the_report_jobs_run_on_a_standalone_cluster_and_match_sql(cluster: Cluster, history) -> None:
    env = {**cluster.env, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "dovecote.settings",
           "DOVECOTE_HTTPS": "false", "DOVECOTE_SPARK_MASTER": "local[1]"}  # --master below must win
    done = subprocess.run([sys.executable, "manage.py", "run_reports", "--full", "--master", cluster.url],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"run_reports failed:\n{done.stdout}\n{done.stderr[-5000:]}\n{cluster.logs()}"

    assert_every_figure_matches_sql()
    run_row = latest_run()
    assert run_row["status"] == "succeeded" and run_row["mode"] == "full", run_row
    applications = httpx.get(f"http://127.0.0.1:{cluster.ui_port}/json/", timeout=5).json()["completedapps"]
    assert any(app["name"].startswith("dovecote") for app in applications), applications  # it ran on the cluster
