"""`make bench PROFILE=1`: sample the stack's processes with py-spy while the figures run, and say where the time went.

Each web, worker and beat process of the run is sampled from its start to its stop (py-spy attached
to the process and its children: granian's workers, the worker's threads), into collapsed stacks,
one file per process under the run's log directory. `summarize` reads them back into what bounds a
figure: the share of samples spent in each area of the code (Dovecote's modules by folder, the
libraries by package), the functions with the most samples of their own and, for the web and the
worker, the share of each step of a publish or a delivery (`STEPS`). Run one group at a time
(`BENCH_ARGS='--only single'`) so a profile covers one figure.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

RATE = 100  # samples per second and thread (bench/run.py --profile-rate sets it)

# The frames of these packages (or Dovecote folders) are reported as one area each.
OURS = ("delivery/push/", "delivery/broker/", "delivery/", "rooms/", "subscriptions/", "api/", "console/",
        "analytics/", "dovecote/")


def py_spy() -> str:
    found = Path(sys.executable).parent / "py-spy"  # the virtualenv's (requirements-dev.txt)
    if not found.exists():
        raise RuntimeError("PROFILE=1 needs py-spy (requirements-dev.txt: make venv installs it)")
    return str(found)


class Profiler:
    """py-spy recording one process tree into `output` (collapsed stacks) until `stop`."""

    def __init__(self, pid: int, output: Path) -> None:
        self.output = output
        output.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(output.with_suffix(".log"), "wb")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            [py_spy(), "record", "--pid", str(pid), "--subprocesses", "--gil", "--nonblocking",
             "--rate", str(RATE), "--format", "raw", "--output", str(output)],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        """Stop sampling (py-spy writes its file on SIGINT)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()


# Leaf frames that mean waiting (py-spy's idle detection lets some through): left out of the busy time.
WAITING = ("select", "poll", "_epoll.poll", "wait", "Condition.wait", "_worker", "accept", "recv_into", "readinto",
           "sleep", "_wait_for_tstate_lock", "acquire")


# The steps of a request or a delivery that a figure's time goes to, by process: each is named by part of a frame
# (`function (path)`, as `function` writes it), and a sample counts under the first step a frame of its stack
# matches, so a step listed first keeps the work of the steps it calls; what matches none is "elsewhere".
# docs/benchmarks.md ("What bounds each figure now") reads these.
STEPS: dict[str, tuple[tuple[str, str], ...]] = {
    "web": (
        ("a publish: the group commit (its statement, the rows' JSON)",
         "GroupCommit.commit (delivery/group_commit.py)"),
        ("a publish: the lane's other work (parsing, validation, the rows, routing, the reply)",
         "take (api/publish_lane.py)"),
        ("the relay: sending frames", "OutboxRelay._send (delivery/outbox.py)"),
        ("the relay: recording receipts", "OutboxRelay._record (delivery/outbox.py)"),
        ("stomp.py's reader thread (the receipts)", "(stomp/transport.py)"),
        ("other requests, through Django and DRF", "PublishLane.__call__ (api/publish_lane.py)"),
        ("the access log", "AccessLog.__call__ (dovecote/web.py)"),
        ("the log writer", "(logging/__init__.py)"),
        ("granian's WSGI call", "_callback_wrapper.<locals>._runner ("),
    ),
    "worker": (
        ("event loop: the POSTs (signing, the HTTP client)", "PushSession._post_in_slot (delivery/push/session.py)"),
        ("event loop: claims", "Ledger._claim (delivery/push/ledger.py)"),
        ("event loop: successes recorded, their acks", "Ledger._record (delivery/push/ledger.py)"),
        ("event loop: the renewal", "PushEngine._refresh (delivery/push/engine.py)"),
        ("event loop: frames parsed and handed to the claims", "Steps.start_attempts (delivery/push/steps.py)"),
        ("event loop: the sessions' loops", "PushSession._loop (delivery/push/session.py)"),
        ("event loop: the rest", "PushEngine._run (delivery/push/engine.py)"),
        ("bookkeeper: sessions adopted", "adopt_batched (delivery/push/claims.py)"),
        ("bookkeeper: failures settled, retries sent", "record_outcomes (delivery/push/outcomes.py)"),
        ("bookkeeper: claims renewed", "renew (delivery/push/claims.py)"),
        ("bookkeeper: the rest", "Bookkeeper._work (delivery/push/bookkeeper.py)"),
        ("stomp.py's reader thread (the frames)", "(stomp/transport.py)"),
        ("beat's tasks", "(delivery/tasks.py)"),
        ("Celery and kombu", "(kombu/"),
        ("Celery and kombu", "(celery/"),
        ("the heartbeat", "(dovecote/heartbeats.py)"),
        # py-spy cuts some stacks of the event loop's coroutines short of the frames above: their inner frames.
        ("event loop: the POSTs (signing, the HTTP client)", "(delivery/transports.py)"),
        ("event loop: the POSTs (signing, the HTTP client)", "(delivery/http1.py)"),
        ("event loop: the sessions' loops", "(delivery/push/session.py)"),
    ),
}


def step(stack: tuple[str, ...], steps: tuple[tuple[str, str], ...]) -> str:
    """The first of `steps` a frame of the stack matches, or "elsewhere"."""
    functions = [function(frame) for frame in stack]
    for name, part in steps:
        if any(part in frame for frame in functions):
            return name
    return "elsewhere"


def function(frame: str) -> str:
    """The frame without its line number: `function (path)`."""
    name, _, where = frame.rpartition(" (")
    return f"{name} ({where.rstrip(')').rsplit(':', 1)[0]})"


def waiting(frame: str) -> bool:
    name = frame.rpartition(" (")[0]
    return name in WAITING or name.rpartition(".")[2] in WAITING


def frame_area(frame: str) -> str:
    """The area a py-spy frame (`function (path:line)`) belongs to: a Dovecote folder or a library package."""
    _, _, where = frame.rpartition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    for area in OURS:
        if f"/{area}" in f"/{path}" or path.startswith(area):
            return area.rstrip("/")
    if path.startswith("<") or "/lib/python" in path or "lib/python3" in path:
        return "python stdlib"
    return path


def read(path: Path) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            # The first frames name the process and thread; the rest run outermost first.
            stacks[tuple(f for f in stack.split(";") if not f.startswith(("process ", "thread ")))] += int(count)
    return stacks


def summarize(path: Path, top: int = 15) -> str:
    """What one process's samples say: busy share by area (the leaf frame's), and the busiest functions."""
    samples = read(path)  # --gil: only the thread holding the GIL, i.e. running Python (WAITING: what slips by)
    busy = Counter({stack: n for stack, n in samples.items() if stack and not waiting(stack[-1])})
    busy_total = sum(busy.values())
    if not busy_total:
        return f"{path.stem}: no samples"
    by_area: Counter[str] = Counter()
    own: Counter[str] = Counter()
    ours_inclusive: Counter[str] = Counter()
    ours = {area.rstrip("/") for area in OURS}
    for stack, n in busy.items():
        by_area[frame_area(stack[-1])] += n
        own[function(stack[-1])] += n
        for name in {function(frame) for frame in stack if frame_area(frame) in ours}:
            ours_inclusive[name] += n
    lines = [f"{path.stem}: {busy_total:,} samples on a core ({busy_total / RATE:,.1f} s of CPU)",
             "  busy time by area of the frame running (its own time):"]
    lines += [f"    {n / busy_total:6.1%}  {area}" for area, n in by_area.most_common(top)]
    lines.append("  functions with the most samples of their own:")
    lines += [f"    {n / busy_total:6.1%}  {frame}" for frame, n in own.most_common(top)]
    lines.append("  Dovecote's functions, busy time under them (inclusive):")
    lines += [f"    {n / busy_total:6.1%}  {frame}" for frame, n in ours_inclusive.most_common(top)]
    if steps := STEPS.get(path.stem.partition(".")[0]):  # worker.2-1: the second worker, restarted once
        by_step: Counter[str] = Counter()
        for stack, n in busy.items():
            by_step[step(stack, steps)] += n
        lines.append("  busy time by step (bench/profile.py STEPS):")
        lines += [f"    {n / busy_total:6.1%}  {name}" for name, n in by_step.most_common()]
    return "\n".join(lines)
