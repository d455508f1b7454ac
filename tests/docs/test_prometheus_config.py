"""deploy/prometheus/: the scrape configuration and the alert rules pass promtool, and the rules' unit tests pass.

promtool comes from Debian's `prometheus` package (scripts/test-tools.sh installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"


def promtool(*args: str, cwd: Path = PROMETHEUS) -> str:
    tool = shutil.which("promtool")
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: scripts/test-tools.sh installs Debian's prometheus package")
        pytest.skip("promtool is not installed (scripts/test-tools.sh installs it)")
    run = subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_the_alert_rules_are_valid_and_their_unit_tests_pass() -> None:
    assert "SUCCESS: 8 rules found" in promtool("check", "rules", "alerts.yml")
    promtool("test", "rules", "alerts.test.yml")


def test_the_scrape_configuration_is_valid(tmp_path: Path) -> None:
    # The token file exists only inside the container: check a copy that points at one here.
    token = tmp_path / "dovecote-token"
    token.write_text("a-long-metrics-token-0123456789")
    config = (PROMETHEUS / "prometheus.yml").read_text().replace("/prometheus/dovecote-token", str(token))
    (tmp_path / "prometheus.yml").write_text(config)
    shutil.copy(PROMETHEUS / "alerts.yml", tmp_path / "alerts.yml")
    promtool("check", "config", "prometheus.yml", cwd=tmp_path)


def test_every_metric_an_alert_uses_is_documented() -> None:
    documented = (ROOT / "docs" / "operations.md").read_text()
    used = set(re.findall(r"\b(dovecote_[a-z_]+?)(?:_bucket|_sum|_count)?\b", (PROMETHEUS / "alerts.yml").read_text()))
    assert used
    for name in used:
        assert f"`{name}`" in documented, name
