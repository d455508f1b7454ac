"""The processes `make run` starts from the Procfile (bin/web, bin/worker, bin/beat), run as they are."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = str(Path(sys.executable).parent)  # python and celery, found on PATH as under `make run`


class BinProcess:
    """One bin/ script in a process group of its own; everything it writes goes to one log file."""

    def __init__(self, name: str, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.base = ""  # the URL it serves, for a web process
        self.log_path = log_dir / f"{name}.log"
        env = {**env, "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([str(ROOT / "bin" / name)], cwd=ROOT, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 90) -> None:
        """Wait until the log holds `text`; fail with the log if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while text not in self.text():
            assert self.process.poll() is None, f"{self.name} exited ({self.process.returncode}):\n{self.text()}"
            assert time.monotonic() < deadline, f"{self.name} did not log {text!r} in {timeout} s:\n{self.text()}"
            time.sleep(0.2)

    def wait_until_serving(self, url: str, timeout: float = 90) -> None:
        """Wait until `url` answers at all (any status)."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, f"{self.name} exited ({self.process.returncode}):\n{self.text()}"
            try:
                urllib.request.urlopen(url, timeout=5).close()
                return
            except urllib.error.HTTPError:
                return
            except OSError:
                assert time.monotonic() < deadline, f"{url} did not answer in {timeout} s:\n{self.text()}"
                time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM the process group (as honcho does on Ctrl-C), then SIGKILL what is left after 30 s."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
