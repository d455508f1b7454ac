"""A shared-store Artemis pair (primary and backup) of the suite's own, started from the installed distribution.

Both instances are made by deploy/artemis/create-instance.sh (ARTEMIS_HA=primary / backup) from the
distribution `make services` installed, on free loopback ports, with one journal folder between them,
as docs/operations.md describes for production. The pair is this test's alone: killing its primary
never touches the broker the rest of the suite uses.
"""

from __future__ import annotations

import glob
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import stomp

from tests.services import missing_service

ROOT = Path(__file__).resolve().parent.parent
LOGIN = PASSCODE = "dovecote"
BACKUP_WAITING = "AMQ221109"  # "Backup Server … started; waiting for primary to fail before activating"
BECAME_LIVE = "AMQ221010"  # "Backup Server is now live"


def artemis_home() -> str:
    """The Artemis distribution `make services` installed (DOVECOTE_ARTEMIS_HOME, else its default place)."""
    home = os.environ.get("DOVECOTE_ARTEMIS_HOME") or next(
        iter(sorted(glob.glob("/var/lib/dovecote-artemis/apache-artemis-*"), reverse=True)), "")
    if not home or not Path(home, "bin", "artemis").is_file():
        missing_service("The Apache Artemis distribution", f"none at {home or '/var/lib/dovecote-artemis'}")
    return home


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Broker:
    role: str
    instance: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.instance / "console.log"

    def log_text(self, tail: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-tail:] if self.log.exists() else "(no log)"

    def java_args(self) -> list[str]:
        """The running JVM's command line (`artemis run` execs java in the process it was started as)."""
        assert self.process is not None, f"the {self.role} was never started"
        return Path(f"/proc/{self.process.pid}/cmdline").read_bytes().decode().split("\0")


@dataclass
class ArtemisPair:
    primary: Broker
    backup: Broker
    shared: Path
    started: list[Broker] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The failover list Dovecote's STOMP_URL takes: primary first, then backup."""
        return f"stomp://{LOGIN}:{PASSCODE}@127.0.0.1:{self.primary.port},127.0.0.1:{self.backup.port}"

    def start(self, broker: Broker) -> None:
        env = {**os.environ, "JAVA_ARGS_APPEND": f"-Ddovecote.stomp.host=127.0.0.1 -Ddovecote.stomp.port={broker.port} "
                                                  f"-Ddovecote.data.dir={self.shared} -XX:+ExitOnOutOfMemoryError"}
        broker.process = subprocess.Popen([str(broker.instance / "bin" / "artemis"), "run"], env=env,
                                          stdout=broker.log.open("a"), stderr=subprocess.STDOUT,
                                          start_new_session=True)
        self.started.append(broker)

    def kill(self, broker: Broker) -> None:
        """SIGKILL the broker's JVM, as a host that dies would stop it."""
        if broker.process is not None and broker.process.poll() is None:
            os.killpg(broker.process.pid, signal.SIGKILL)
            broker.process.wait(timeout=30)

    def stop(self) -> None:
        for broker in self.started:
            self.kill(broker)

    def logs(self) -> str:
        return "\n".join(f"--- {b.role} ({b.log}):\n{b.log_text()}" for b in (self.primary, self.backup))


def create_pair(work: Path) -> ArtemisPair:
    """Make the two instances (about 5 s each); start nothing."""
    home = artemis_home()
    pair = ArtemisPair(Broker("primary", work / "primary", free_port()), Broker("backup", work / "backup", free_port()),
                       work / "shared")
    pair.shared.mkdir(parents=True, exist_ok=True)
    for broker in (pair.primary, pair.backup):
        env = {**os.environ, "ARTEMIS_HA": broker.role, "ARTEMIS_USER": LOGIN, "ARTEMIS_PASSWORD": PASSCODE,
               "ARTEMIS_HEAP": "512M"}
        done = subprocess.run(["bash", str(ROOT / "deploy" / "artemis" / "create-instance.sh"), home,
                               str(broker.instance)], env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"could not create the {broker.role}: {done.stderr[-3000:]}"
    return pair


def wait_for_stomp(pair: ArtemisPair, broker: Broker, timeout: float = 120) -> None:
    """Wait until the broker answers a STOMP CONNECT with CONNECTED."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert broker.process is not None and broker.process.poll() is None, \
            f"the {broker.role} exited with {broker.process and broker.process.returncode}\n{pair.logs()}"
        conn = stomp.Connection12([("127.0.0.1", broker.port)], reconnect_attempts_max=1, timeout=2)
        try:
            conn.connect(LOGIN, PASSCODE, wait=True, with_connect_command=True)
        except Exception:  # noqa: BLE001 - not listening yet: try again until the deadline
            time.sleep(0.3)
            continue
        conn.disconnect()
        return
    raise AssertionError(f"the {broker.role} never answered STOMP on {broker.port}\n{pair.logs()}")


def wait_for_log(pair: ArtemisPair, broker: Broker, marker: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while marker not in broker.log_text(tail=10**7):
        assert time.monotonic() < deadline, f"the {broker.role} never logged {marker}\n{pair.logs()}"
        assert broker.process is not None and broker.process.poll() is None, \
            f"the {broker.role} exited with {broker.process and broker.process.returncode}\n{pair.logs()}"
        time.sleep(0.2)


def logged_at(broker: Broker, marker: str) -> float:
    """When the broker logged `marker` first (epoch seconds; Artemis logs this machine's local time)."""
    for line in broker.log_text(tail=10**7).splitlines():
        if marker in line:
            stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").astimezone()  # local time, as logged
            return stamp.timestamp()
    raise AssertionError(f"the {broker.role} never logged {marker}")
