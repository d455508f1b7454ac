"""With DEBUG off, Dovecote's settings are production-safe unless the run is local: in a checkout (its services
file, var/services.env, or the one DOVECOTE_ENV_FILE names) or with DOVECOTE_HTTPS=false.

Each check runs manage.py or Django in a process of its own whose environment names no services file
(DOVECOTE_ENV_FILE empty) unless the test gives one, so it sees production as a deployment would."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = Path(tempfile.mkdtemp(prefix="dovecote-settings-"))
KEYS = {"DJANGO_SECRET_KEY": "s" * 20 + "-a-random-enough-key-" + "t" * 20,
        "DOVECOTE_SECRETS_KEY": Fernet.generate_key().decode()}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    """Run manage.py with only `env` (no DEBUG, no DOVECOTE_HTTPS unless given), on a scratch SQLite file."""
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "dovecote.settings", "STOMP_URL": "memory://",
            "DOVECOTE_SQLITE_PATH": str(SCRATCH / "check.sqlite3"), "DOVECOTE_ENV_FILE": ""}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_deploy_check_finds_nothing_to_warn_about_by_default() -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", **KEYS)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def settings_value(expression: str, **env: str) -> str:
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "dovecote.settings", "DOVECOTE_ENV_FILE": ""}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_production_cookies_are_secure_and_https_is_enforced() -> None:
    shown = settings_value("settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, settings.SECURE_SSL_REDIRECT,"
                           " settings.SECURE_HSTS_SECONDS, settings.SECURE_PROXY_SSL_HEADER", **KEYS)
    assert shown == "True True True 31536000 None"
    behind_proxy = settings_value("settings.SECURE_PROXY_SSL_HEADER", DOVECOTE_TRUSTED_PROXIES="1", **KEYS)
    assert behind_proxy == "('HTTP_X_FORWARDED_PROTO', 'https')"


def test_a_plain_http_local_run_relaxes_them() -> None:
    shown = settings_value("settings.SESSION_COOKIE_SECURE, settings.SECURE_SSL_REDIRECT, settings.SECURE_HSTS_SECONDS",
                           DOVECOTE_HTTPS="false")
    assert shown == "False False 0"


@pytest.mark.parametrize(("env", "message"), [
    ({"DOVECOTE_SECRETS_KEY": KEYS["DOVECOTE_SECRETS_KEY"]}, "DJANGO_SECRET_KEY must be set in production"),
    ({"DJANGO_SECRET_KEY": KEYS["DJANGO_SECRET_KEY"]}, "DOVECOTE_SECRETS_KEY must be set in production"),
    ({**KEYS, "DJANGO_SECRET_KEY": "insecure-compose-default-set-DJANGO_SECRET_KEY"}, "is a placeholder"),
    ({**KEYS, "DOVECOTE_SECRETS_KEY": "not-a-key"}, "key 1 is not a Fernet key"),
])
def test_production_does_not_start_without_its_keys(env: dict[str, str], message: str) -> None:
    result = manage("check", **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_pages_carry_a_content_security_policy_and_no_framing(client: Client) -> None:
    response = client.get("/login/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize(("env", "message"), [
    ({"DOVECOTE_LOG_FORMAT": "xml"}, "DOVECOTE_LOG_FORMAT='xml' must be keyvalue or json"),
    ({"DOVECOTE_METRICS_ALLOW": "127.0.0.1,10.0.0.0/33"}, "DOVECOTE_METRICS_ALLOW: '10.0.0.0/33' is not an IP address"),
    ({"DOVECOTE_METRICS_TOKEN": "short"}, "DOVECOTE_METRICS_TOKEN must be at least 16 characters"),
    ({"DOVECOTE_METRICS_MAX_ROOMS": "0"}, "DOVECOTE_METRICS_MAX_ROOMS=0 must be at least 1"),
    ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin': Dovecote exports traces with otlp"),
])
def test_a_bad_operations_setting_stops_the_process_naming_it(env: dict[str, str], message: str) -> None:
    result = manage("check", DOVECOTE_HTTPS="false", **env)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize(("value", "jobs"),
                         [("", "archive run-reports"), ("false", ""), ("true", "archive run-reports")])
def test_beat_schedules_the_hourly_jobs_unless_told_not_to(value: str, jobs: str) -> None:
    expression = "*sorted(n for n in settings.CELERY_BEAT_SCHEDULE if n in ('run-reports', 'archive'))"
    assert settings_value(expression, DOVECOTE_HTTPS="false", DOVECOTE_HOURLY_JOBS=value) == jobs
    assert "resend-lost-frames" in settings_value("*settings.CELERY_BEAT_SCHEDULE", DOVECOTE_HTTPS="false",
                                                  DOVECOTE_HOURLY_JOBS=value).split()


def test_a_hourly_jobs_setting_that_is_not_a_boolean_stops_the_process_naming_it() -> None:
    result = manage("check", DOVECOTE_HTTPS="false", DOVECOTE_HOURLY_JOBS="nightly")
    assert result.returncode != 0
    assert "DOVECOTE_HOURLY_JOBS='nightly' is not a boolean" in result.stderr


def services_file(tmp_path: Path, **variables: str) -> str:
    path = tmp_path / "services.env"
    path.write_text("# written by make services\n" + "".join(f"{k}={v}\n" for k, v in variables.items()))
    return str(path)


def test_a_checkout_runs_on_its_services_file_over_plain_http(tmp_path: Path) -> None:
    env_file = services_file(tmp_path, DATABASE_URL="postgres://me:pw@db.local:5433/mine", STOMP_URL="memory://")
    shown = settings_value("settings.DATABASES['default']['HOST'], settings.DATABASES['default']['NAME'], "
                           "settings.SECURE_SSL_REDIRECT, settings.SESSION_COOKIE_SECURE", DOVECOTE_ENV_FILE=env_file)
    assert shown == "db.local mine False False"


def test_in_a_checkout_the_callers_environment_wins(tmp_path: Path) -> None:
    env_file = services_file(tmp_path, DATABASE_URL="postgres://me:pw@db.local:5433/mine")
    shown = settings_value("settings.DATABASES['default']['NAME']", DOVECOTE_ENV_FILE=env_file,
                           DATABASE_URL="postgres://you:pw@elsewhere:5432/yours")
    assert shown == "yours"
    result = manage("check", DOVECOTE_ENV_FILE=env_file, DOVECOTE_HTTPS="true")
    assert result.returncode != 0 and "DJANGO_SECRET_KEY must be set in production" in result.stderr


def test_without_a_services_file_a_run_is_production(tmp_path: Path) -> None:
    result = manage("check", DOVECOTE_ENV_FILE=str(tmp_path / "absent.env"))
    assert result.returncode != 0 and "DJANGO_SECRET_KEY must be set in production" in result.stderr
    assert "var/services.env" in result.stderr  # the message says what makes a run local


def test_the_secrets_key_is_made_without_the_keys_production_requires() -> None:
    result = manage("generate_secrets_key")
    assert result.returncode == 0, result.stderr
    Fernet(result.stdout.strip())  # a valid key
