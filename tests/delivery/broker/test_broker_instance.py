"""deploy/artemis/create-instance.sh: the instance it makes runs Dovecote's collector, once and for all."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.artemis_pair import LOGIN, PASSCODE, ROOT, artemis_home

CREATE_INSTANCE = ROOT / "deploy" / "artemis" / "create-instance.sh"


def create_instance(instance: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ARTEMIS_USER": LOGIN, "ARTEMIS_PASSWORD": PASSCODE, "ARTEMIS_HEAP": "512M"}
    env.pop("ARTEMIS_HA", None)
    return subprocess.run(["bash", str(CREATE_INSTANCE), artemis_home(), str(instance)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def java_args(instance: Path) -> list[str]:
    """The JVM flags the instance's artemis.profile gives `artemis run`."""
    profile = (instance / "etc" / "artemis.profile").read_text()
    line = next(line for line in profile.splitlines() if line.strip().startswith('JAVA_ARGS="-'))
    return line.split('"')[1].split()


def test_an_instance_runs_zgc_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    made = create_instance(tmp_path / "broker")
    assert made.returncode == 0, made.stderr[-3000:]
    assert made.stdout.split() == ["changed"]
    flags = java_args(tmp_path / "broker")
    assert "-XX:+UseZGC" in flags, flags
    assert not {"-XX:+UseG1GC", "-XX:+UseStringDeduplication"} & set(flags), flags

    again = create_instance(tmp_path / "broker")
    assert (again.returncode, again.stdout) == (0, ""), again.stderr[-3000:]
    assert java_args(tmp_path / "broker") == flags


def test_a_profile_whose_collector_flags_it_does_not_know_is_refused_by_name(tmp_path: Path) -> None:
    assert create_instance(tmp_path / "broker").returncode == 0
    profile = tmp_path / "broker" / "etc" / "artemis.profile"
    profile.write_text(profile.read_text().replace("-XX:+UseZGC ", "-XX:+UseParallelGC "))

    refused = create_instance(tmp_path / "broker")
    assert refused.returncode == 1
    assert f"{profile}: no JAVA_ARGS with -XX:+UseZGC" in refused.stderr, refused.stderr
