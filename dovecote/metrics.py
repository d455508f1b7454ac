"""Prometheus metrics shared by several processes: set up before any metric is made (docs/operations.md#metrics).

With PROMETHEUS_MULTIPROC_DIR set, every process (granian's workers, the Celery worker, beat)
keeps its values in files of its own in that directory and /metrics sums them. The files are
named by host and process id, so processes of several containers can share one volume without
writing each other's file (prometheus_client names them by process id alone, and PID 1 exists in
every container). Without the variable (the embedded demo, the test suite) values live in memory.
"""

from __future__ import annotations

import os
import re
import socket

from prometheus_client import values

HOST = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:64] or "host"


_identity = ""  # this process's identifier, made at first use and forgotten in a forked child


def process_identifier() -> str:
    """This process's name in the metric files' names: host and pid, without underscores (they separate fields).

    prometheus_client asks at every increment, to notice a fork. Reading the pid each time was a system
    call per metric update (1.2 % of the worker's CPU in `PROFILE=1 BENCH_ARGS="--only fairness" make
    bench`, 2026-12-07); a fork makes the child forget the identifier instead (`os.register_at_fork`).
    """
    global _identity
    if not _identity:
        _identity = f"{HOST}-{os.getpid()}"
    return _identity


def _forget_identity() -> None:
    global _identity
    _identity = ""


os.register_at_fork(after_in_child=_forget_identity)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


if multiprocess_dir():
    values.ValueClass = values.MultiProcessValue(process_identifier)
