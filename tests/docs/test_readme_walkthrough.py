"""The README's curl walkthrough, run as written (its commands are read from README.md), against
`make demo` and against the real services (the web server, a Celery worker with beat, Apache Artemis)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from tests import workers
from tests.demo_process import ROOT, Demo, free_port, get_json

SECTION = "## Five minutes with the API (curl)"


def walkthrough() -> str:
    """Return the walkthrough's shell commands: every `sh` block of its section but the first (the server)."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    assert len(blocks) >= 2 and "make demo" in blocks[0], "the section starts with the command that serves Dovecote"
    return "\n".join(blocks[1:])


def run_walkthrough(port: int, extra_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """Run the walkthrough against Dovecote on `port`; return the shell variables it set that matter here."""
    script = walkthrough() + '\nprintf "\\nRESULT %s %s %s %s\\n" "$KEY" "$MESSAGE" "$BILLING" "$AUDIT"\n'
    user_env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}  # a shell, not pytest's
    env = {**user_env, "PORT": str(port), "RECEIVER_PORT": str(free_port()), **extra_env}
    # In a process group of its own, so a receiver it started in the background goes with it, whatever happens.
    shell = subprocess.Popen(["bash", "-eu", "-o", "pipefail", "-c", script], cwd=ROOT, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = shell.communicate(timeout=180)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)
    assert shell.returncode == 0, f"{stdout[-3000:]}\n{stderr[-3000:]}"
    key, message, billing, audit = stdout.rsplit("RESULT ", 1)[1].split()
    return {"key": key, "message": message, "billing": billing, "audit": audit}


def check_outcome(port: int, ran: dict[str, str]) -> None:
    """The message went through what the README says: three failed attempts 2 s and 6 s apart, a dead letter,
    a replay delivered in the second life, and the pull subscription's ack."""
    message = get_json(f"http://127.0.0.1:{port}/api/v1/messages/{ran['message']}/", ran["key"])
    destinations = {str(d["subscription"]): d for d in message["destinations"]}
    billing, audit = destinations[ran["billing"]], destinations[ran["audit"]]
    assert audit["status"] == "acked"
    assert billing["status"] == "delivered"
    first_life = [a for a in billing["timeline"] if a["life"] == 1]
    assert [(a["attempt"], a["status_code"], a["next_delay_ms"]) for a in first_life] == [
        (1, 501, 2000), (2, 501, 4000), (3, 501, None)]
    starts = [datetime.fromisoformat(a["started_at"]) for a in first_life]
    offsets = [(start - starts[0]).total_seconds() for start in starts]
    assert offsets[1] == pytest.approx(2, abs=0.5) and offsets[2] == pytest.approx(6, abs=0.7)  # "0 s, +2 s, +6 s"
    assert [(a["life"], a["status_code"]) for a in billing["timeline"] if a["life"] == 2] == [(2, 204)]


@pytest.mark.slow
def test_the_readme_walkthrough_runs_as_written_against_the_demo(tmp_path: Path) -> None:
    state = tmp_path / "state"
    demo = Demo.start(state, free_port())
    try:
        demo.banner("API key")
        ran = run_walkthrough(demo.port, {"DOVECOTE_SQLITE_PATH": str(state / "demo.sqlite3")}, tmp_path)
        check_outcome(demo.port, ran)
    finally:
        demo.stop()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("worker")
def test_the_readme_walkthrough_runs_as_written_against_the_services(live_server, tmp_path: Path) -> None:
    port = int(live_server.url.rsplit(":", 1)[1])
    # `make api-key` finds no demo on this (empty) state, so it makes the key in DATABASE_URL's database.
    env = {"DATABASE_URL": workers.test_database_url(), "DOVECOTE_SQLITE_PATH": str(tmp_path / "none.sqlite3")}
    ran = run_walkthrough(port, env, tmp_path)
    check_outcome(port, ran)
