from __future__ import annotations

import subprocess
import sys

import pytest

from dovecote.env import ConfigError, env_bool, env_duration, env_int, env_url


def test_bad_booleans_and_integers_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_FLAG", "maybe")
    monkeypatch.setenv("X_NUM", "ten")
    with pytest.raises(ConfigError, match="X_FLAG='maybe' is not a boolean"):
        env_bool("X_FLAG")
    with pytest.raises(ConfigError, match="X_NUM='ten' is not an integer"):
        env_int("X_NUM", 1)


def test_an_integer_below_its_minimum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_NUM", "-5")
    with pytest.raises(ConfigError, match="X_NUM=-5 must be at least 0"):
        env_int("X_NUM", 1, minimum=0)


@pytest.mark.parametrize(("value", "seconds"), [("7d", 7 * 86400), ("36h", 36 * 3600), ("90m", 5400),
                                               ("3600s", 3600), (" 2D ", 2 * 86400)])
def test_a_duration_is_read_in_seconds(monkeypatch: pytest.MonkeyPatch, value: str, seconds: int) -> None:
    monkeypatch.setenv("X_SPAN", value)
    assert env_duration("X_SPAN", "1d", minimum_s=60, maximum_s=10 * 86400) == seconds


def test_a_url_with_the_wrong_scheme_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOMP_URL", "amqp://guest@localhost")
    with pytest.raises(ConfigError, match="STOMP_URL='amqp://guest@localhost' must start with one of"):
        env_url("STOMP_URL", "memory://", schemes=("stomp", "memory"))


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DATABASE_URL", "mysql://root@localhost/x", "must be a postgres:// or postgresql:// URL"),
        ("STOMP_URL", "http://broker", "must start with one of"),
        ("DOVECOTE_LOG_LEVEL", "LOUD", "is not a log level"),
        ("DOVECOTE_RETENTION", "a week", "is not a duration: a whole number and one of s, m, h, d"),
        ("DOVECOTE_RETENTION", "30m", "must be between 3600 s and 315360000 s"),
    ],
)
def test_settings_fail_loudly_on_a_bad_value(variable: str, value: str, message: str) -> None:
    code = "import django; django.setup()"
    env = {"DJANGO_SETTINGS_MODULE": "dovecote.settings", "DOVECOTE_HTTPS": "false", "DOVECOTE_ENV_FILE": "",
           variable: value, "PATH": ""}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert message in result.stderr


def test_a_local_secret_key_is_made_once_and_kept_private(tmp_path) -> None:
    from dovecote.env import local_secret_key

    path = tmp_path / "var" / "secret-key"
    first = local_secret_key(path)
    assert len(first) >= 50 and local_secret_key(path) == first
    assert path.stat().st_mode & 0o777 == 0o600
