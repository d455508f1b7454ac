"""Start the real processes (granian, Celery worker and beat) against a benchmark database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.profile import Profiler

ROOT = Path(__file__).resolve().parent.parent
PROFILE_DIR: Path | None = None  # make bench PROFILE=1: where each web and worker process's samples go


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_kib(pid: int) -> int:
    """Return the resident memory of a process and all its descendants, in KiB."""
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """CPU time (user + system) used so far by each of these processes that is still running, in seconds."""
    used = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used


def service_pids(database: str) -> dict[str, list[int]]:
    """The processes of the shared services that serve the stack: PostgreSQL's backends of `database` and its WAL
    writer, the Artemis JVM, and Redis (found by their command lines)."""
    found: dict[str, list[int]] = {"postgres": [], "artemis": [], "redis": []}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        pid = int(cmdline.parent.name)
        if words.startswith("postgres:") and (f" {database} " in words or "walwriter" in words):
            found["postgres"].append(pid)
        elif words.startswith("/") and "/java " in words and "artemis" in words:
            found["artemis"].append(pid)
        elif words.split(" ")[0].endswith("redis-server"):
            found["redis"].append(pid)
    return found


def part(name: str) -> str:
    """The part of the stack a process is counted in: its Procfile entry (worker.1 and worker.2 are `worker`)."""
    return name.partition(".")[0]


class CpuMeter:
    """CPU seconds used between `start` and `stop` by the stack's processes and the services that serve it, and by
    any other processes named in `others` (name: pid; the bench's receiver). The processes of one Procfile entry
    count as one part (`part`): the workers add up."""

    def __init__(self, processes: dict[str, Process], database: str, others: dict[str, int] | None = None) -> None:
        self.processes = processes
        self.others = others or {}
        self.database = database
        self.used: dict[str, float] = {}

    def _read(self) -> dict[str, dict[int, float]]:
        pids = {**{name: process.popen.pid for name, process in self.processes.items()}, **self.others}
        now: dict[str, dict[int, float]] = {}
        for name, pid in pids.items():
            now.setdefault(part(name), {}).update(cpu_by_pid([pid, *descendants(pid)]))
        for service, pids in service_pids(self.database).items():
            now[service] = cpu_by_pid(pids)
        return now

    def start(self) -> None:
        self._started = self._read()

    def stop(self) -> dict[str, float]:
        """Return the CPU seconds each part used since `start`, process by process.

        A process that started meanwhile counts whole; one that ended meanwhile (a database backend
        closed by its client) is missed. Summing each part's processes at both ends instead, a backend
        that ended took its whole life's CPU out of the difference (a PostgreSQL row of 0.0 ms).
        """
        ended = self._read()
        self.used = {name: sum(max(0.0, seconds - self._started.get(name, {}).get(pid, 0.0))
                               for pid, seconds in pids.items())
                     for name, pids in ended.items()}
        return self.used


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            pass
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class Process:
    def __init__(self, name: str, command: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.peak_rss_kib = 0
        self._sampling = True
        self.profiler: Profiler | None = None
        threading.Thread(target=self._sample, daemon=True).start()

    def start_profiling(self) -> None:
        """With PROFILE_DIR set (make bench PROFILE=1): sample this process and its children until `stop`."""
        if PROFILE_DIR is not None:
            self.profiler = Profiler(self.popen.pid, PROFILE_DIR / f"{self.name}.txt")

    def _sample(self) -> None:
        while self._sampling and self.popen.poll() is None:
            self.peak_rss_kib = max(self.peak_rss_kib, rss_kib(self.popen.pid))
            time.sleep(0.2)

    def reset_peak(self) -> None:
        self.peak_rss_kib = rss_kib(self.popen.pid)

    def stop(self) -> None:
        self._sampling = False
        if self.profiler is not None:
            self.profiler.stop()
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._log.close()

    def wait_for_log(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text.encode() in self.log_path.read_bytes():
                return
            if self.popen.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not log {text!r}:\n{self.log_path.read_text()[-3000:]}")


def database_url(env: dict[str, str], name: str) -> str:
    """The URL of the database `name` on the server of env's DATABASE_URL."""
    return urlunsplit(urlsplit(env["DATABASE_URL"])._replace(path=f"/{name}"))


def recreate_database(env: dict[str, str], name: str) -> dict[str, str]:
    """Drop and create the database `name`, migrate it, and return `env` pointing at it."""
    import psycopg

    env = {**env, "DATABASE_URL": database_url(env, name)}
    with psycopg.connect(database_url(env, "postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return env


SCRATCH_SUFFIXES = ("", "_reports", "_archive")  # the run's database, the report figures', the archive's


def scratch_databases(name: str) -> list[str]:
    """The scratch databases a run named `name` makes (bench/run.py): its own, the reports' and the archive's."""
    return [f"{name}{suffix}" for suffix in SCRATCH_SUFFIXES]


def drop_databases(env: dict[str, str], names: list[str]) -> list[str]:
    """Drop those of these databases that exist; return their names."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(database_url(env, "postgres"), autocommit=True) as conn:
        found = [row[0] for row in conn.execute(
            "SELECT datname FROM pg_database WHERE datname = ANY(%s) ORDER BY datname", (names,))]
        for name in found:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return found


def procfile() -> dict[str, str]:
    """The process types of the Procfile and their commands: the stack `make run` starts."""
    entries = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, sep, command = line.partition(":")
        if sep and name.strip() and not name.startswith("#"):
            entries[name.strip()] = command.strip()
    return entries


def start(name: str, env: dict[str, str], log_dir: Path, label: str | None = None) -> Process:
    """Start a Procfile process type as `make run` does (its command under bash, in the repository)."""
    return Process(label or name, ["bash", "-c", procfile()[name]], env, log_dir)


def start_web(env: dict[str, str], log_dir: Path) -> tuple[Process, str]:
    port = free_port()
    web = start("web", {**env, "HOST": "127.0.0.1", "PORT": str(port)}, log_dir)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/healthz/", timeout=2)
            web.start_profiling()
            return web, base
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"web did not start:\n{web.log_path.read_text()[-3000:]}")


def worker_processes(env: dict[str, str]) -> int:
    """How many worker processes the stack runs: WORKER_PROCESSES, 2 by default, as `make run` starts."""
    return max(1, int(env.get("WORKER_PROCESSES") or 2))


def start_workers(env: dict[str, str], log_dir: Path, count: int, generation: int = 0) -> dict[str, Process]:
    """Start `count` worker processes as `make run` does (honcho's `-c worker=N`: worker.1, worker.2, …, each its
    Celery node name) and wait until each takes tasks. A restart's `generation` (1, 2, …) keeps its logs apart."""
    started = {}
    for i in range(1, count + 1):
        name = f"worker.{i}"
        started[name] = start("worker", {**env, "HONCHO_PROCESS_NAME": name}, log_dir,
                              label=f"{name}-{generation}" if generation else name)
    for worker in started.values():
        worker.wait_for_log("ready.")
        worker.start_profiling()
    return started


def start_beat(env: dict[str, str], log_dir: Path) -> Process:
    return start("beat", env, log_dir)


def reconnects(*processes: Process) -> int:
    """How many times these processes lost their STOMP connection (their logs say so)."""
    return sum(process.log_path.read_text(errors="replace").count("lost the connection to the STOMP broker")
               for process in processes)
