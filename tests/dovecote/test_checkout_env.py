"""The one loader of a checkout's settings (dovecote/checkout.py), as the Makefile's targets use it:
`python -m dovecote.checkout` prints what the environment lacks, and the shell that evals it gets that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dovecote import checkout

ROOT = Path(__file__).resolve().parents[2]


def exported(env: dict[str, str], *names: str) -> list[str]:
    """The values of `names` in a bash that evals the loader's output, as the Makefile's targets do."""
    script = f'eval "$({sys.executable} -m dovecote.checkout)"; ' + "; ".join(f'echo "${{{n}-unset}}"' for n in names)
    result = subprocess.run(["bash", "-c", script], cwd=ROOT, env={"PATH": os.environ["PATH"], **env},
                            capture_output=True, text=True, timeout=60, check=True)
    return result.stdout.splitlines()


def test_a_make_target_gets_the_services_file_with_the_callers_variables_winning(tmp_path: Path) -> None:
    services = tmp_path / "services.env"
    services.write_text("DATABASE_URL=postgres://a:b@db:5432/x\nSTOMP_URL=stomp://u:p w$d@broker:61613\n"
                        "# a comment\nnot a line\n")
    shown = exported({"DOVECOTE_ENV_FILE": str(services), "DATABASE_URL": "postgres://mine@here/y"},
                     "DATABASE_URL", "STOMP_URL", "DOVECOTE_HTTPS")
    assert shown == ["postgres://mine@here/y", "stomp://u:p w$d@broker:61613", "false"]


def test_the_demo_and_a_deployment_read_no_services_file(tmp_path: Path) -> None:
    services = tmp_path / "services.env"
    services.write_text("DATABASE_URL=postgres://a:b@db:5432/x\n")
    assert exported({"DOVECOTE_ENV_FILE": str(services), "DOVECOTE_DEMO": "true"}, "DATABASE_URL") == ["unset"]
    assert exported({"DOVECOTE_ENV_FILE": ""}, "DATABASE_URL", "DOVECOTE_HTTPS") == ["unset", "unset"]
    assert exported({"DOVECOTE_ENV_FILE": str(tmp_path / "absent")}, "DOVECOTE_HTTPS") == ["unset"]


def test_a_checkout_is_recognized_by_the_file_make_services_writes() -> None:
    assert checkout.SERVICES_FILE == ROOT / "var" / "services.env"
    assert "ENV_FILE=$VAR/services.env" in (ROOT / "scripts" / "services.sh").read_text()
