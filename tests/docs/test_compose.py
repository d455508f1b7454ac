"""docker-compose.yml wires the production-like stack as docs/contract.md describes it.

The file is read with PyYAML (merge keys `<<` resolved); `docker compose config` checks it
further when the Docker CLI with its compose plugin is installed (no engine is needed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from delivery.broker.stomp_connection import parse_stomp_url
from tests.services import missing_service

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"

INFRA = ("artemis", "postgres", "redis")
APP = ("migrate", "web", "worker", "beat")
LONG_RUNNING_APP = ("web", "worker", "beat")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict) -> dict:
    return compose["services"]


def environment(service: dict) -> dict[str, str]:
    """A service's environment as a dict, whether written as a mapping or a list."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}


def depends_on(service: dict) -> dict[str, str]:
    """A service's dependencies as {name: condition} (short form means service_started)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def test_every_service_exists(services: dict) -> None:
    assert set(INFRA + APP) <= set(services), f"missing: {set(INFRA + APP) - set(services)}"


def test_artemis_is_built_from_the_same_version_and_settings_as_make_services(services: dict) -> None:
    build = services["artemis"]["build"]
    context = ROOT / (build if isinstance(build, str) else build["context"])
    assert context == ROOT / "deploy" / "artemis"
    dockerfile = (context / "Dockerfile").read_text()
    assert "COPY VERSION" in dockerfile and "apache-artemis:${version}:tar.gz:bin" in dockerfile
    assert "create-instance.sh" in dockerfile and "broker.xml" in dockerfile
    services_sh = (ROOT / "scripts" / "services.sh").read_text()
    assert "deploy/artemis/VERSION" in services_sh and "deploy/artemis/create-instance.sh" in services_sh
    assert "broker.xml" in (context / "create-instance.sh").read_text()


def test_artemis_serves_stomp_on_61613_with_a_persistent_volume(compose: dict, services: dict) -> None:
    artemis = services["artemis"]
    ports = [str(port) for port in artemis.get("expose", []) + artemis.get("ports", [])]
    assert any(port.split(":")[-1].split("/")[0] == "61613" for port in ports), ports
    env = environment(artemis)
    assert env.get("ARTEMIS_USER") and env.get("ARTEMIS_PASSWORD")
    assert "--require-login" in (ROOT / "deploy" / "artemis" / "create-instance.sh").read_text()

    mounts = [str(volume) for volume in artemis.get("volumes", [])]
    named = [m.split(":", 1)[0] for m in mounts if m.endswith(":/var/lib/artemis-instance")]
    assert named, f"no volume on /var/lib/artemis-instance: {mounts}"
    assert named[0] in (compose.get("volumes") or {}), f"{named[0]} is not a named volume"


def test_databases_keep_their_data_on_named_volumes(compose: dict, services: dict) -> None:
    declared = set(compose.get("volumes") or {})
    for name, target in (("postgres", "/var/lib/postgresql/data"), ("redis", "/data")):
        mounts = [str(volume) for volume in services[name].get("volumes", [])]
        sources = [m.split(":", 1)[0] for m in mounts if m.split(":")[1] == target]
        assert sources and sources[0] in declared, f"{name}: {mounts}"


@pytest.mark.parametrize("name", APP)
def test_app_services_are_wired_to_the_stack(services: dict, name: str) -> None:
    service = services[name]
    assert "build" in service or "image" in service
    env = environment(service)

    database = urlsplit(env["DATABASE_URL"])
    assert database.scheme in {"postgres", "postgresql"}
    assert database.hostname == "postgres"

    stomp = parse_stomp_url(env["STOMP_URL"].replace("${ARTEMIS_PASSWORD:-dovecote}", "dovecote"))
    assert stomp.scheme == "stomp"
    assert stomp.brokers == (("artemis", 61613), ("artemis-backup", 61613))  # the primary, then the ha backup
    assert stomp.login and stomp.passcode, "Artemis refuses anonymous logins"

    celery = urlsplit(env["CELERY_BROKER_URL"])
    assert (celery.scheme, celery.hostname) == ("redis", "redis")

    assert env.get("DJANGO_SECRET_KEY")
    assert env.get("DJANGO_ALLOWED_HOSTS")


@pytest.mark.parametrize("name", LONG_RUNNING_APP)
def test_app_processes_wait_for_healthy_services_and_migrations(services: dict, name: str) -> None:
    deps = depends_on(services[name])
    for infra in INFRA:
        assert deps.get(infra) == "service_healthy", f"{name} -> {infra}: {deps}"
    assert deps.get("migrate") == "service_completed_successfully", f"{name} -> migrate: {deps}"


def test_migrate_runs_once_against_a_healthy_database(services: dict) -> None:
    migrate = services["migrate"]
    assert "migrate" in " ".join(map(str, migrate["command"]))
    assert depends_on(migrate).get("postgres") == "service_healthy"
    assert str(migrate.get("restart", "no")) == "no"


@pytest.mark.parametrize("name", INFRA + LONG_RUNNING_APP)
def test_long_running_services_have_a_healthcheck(services: dict, name: str) -> None:
    healthcheck = services[name].get("healthcheck")
    assert healthcheck and healthcheck.get("test") and not healthcheck.get("disable"), name


def test_web_healthcheck_calls_healthz(services: dict) -> None:
    assert "/healthz/" in " ".join(map(str, services["web"]["healthcheck"]["test"]))


def test_dockerfile_runs_as_a_non_root_user() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    users = [line.split()[1] for line in dockerfile.splitlines() if line.strip().upper().startswith("USER ")]
    assert users and users[-1] not in {"root", "0"}, users
    assert "collectstatic" in dockerfile


def compose_command() -> list[str]:
    """Return the compose CLI: the docker plugin, else Debian's docker-compose (make test installs it)."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    missing_service("A docker compose CLI", "neither `docker compose` nor `docker-compose` is installed")
    return []


KEYS = {"DJANGO_SECRET_KEY": "k" * 50, "DOVECOTE_SECRETS_KEY": "A" * 43 + "="}


def compose_config(env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run `docker compose config -q` with `env` in place of the keys of the caller's environment."""
    base = {k: v for k, v in os.environ.items() if k not in KEYS}
    return subprocess.run([*compose_command(), "-f", str(COMPOSE_FILE), "config", "-q"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60, env={**base, **env}, check=False)


def test_docker_compose_accepts_the_file() -> None:
    result = compose_config(KEYS)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", sorted(KEYS))
def test_docker_compose_refuses_to_start_without_each_key(missing: str) -> None:
    result = compose_config({name: value for name, value in KEYS.items() if name != missing})
    assert result.returncode != 0
    assert f"set {missing}" in result.stderr


def test_the_ha_profile_adds_a_backup_that_shares_the_primarys_journal(services: dict) -> None:
    primary, backup = services["artemis"], services["artemis-backup"]
    assert backup.get("profiles") == ["ha"] and "profiles" not in primary
    assert (environment(primary)["ARTEMIS_HA"], environment(backup)["ARTEMIS_HA"]) == ("primary", "backup")
    assert backup["build"] == primary["build"]
    assert "artemis-data:/var/lib/artemis-instance" in primary["volumes"]
    assert "artemis-data:/var/lib/primary-instance" in backup["volumes"]
    assert "-Ddovecote.data.dir=/var/lib/primary-instance/data" in environment(backup)["JAVA_ARGS_APPEND"]
