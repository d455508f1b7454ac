"""The committed schema and generated client are what the code produces today (`make client` refreshes them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATE = ROOT / "scripts" / "generate-python-client.sh"


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file() and "__pycache__" not in path.parts}


def test_the_committed_schema_and_python_client_are_what_the_schema_generates(tmp_path: Path) -> None:
    subprocess.run([str(GENERATE), str(tmp_path)], cwd=ROOT, check=True, capture_output=True, timeout=300)

    assert (tmp_path / "openapi.yaml").read_text() == (ROOT / "clients" / "openapi.yaml").read_text(), (
        "clients/openapi.yaml is stale: run `make client` and commit the result")
    generated = files_under(tmp_path / "python" / "dovecote_api")
    committed = files_under(ROOT / "clients" / "python" / "dovecote_api")
    stale = sorted(name for name in generated.keys() | committed.keys() if generated.get(name) != committed.get(name))
    assert not stale, f"clients/python/dovecote_api differs from the schema's client in {stale}: run `make client`"
