"""The manage.py commands the README shows run exactly as written in a checkout, on `make run`'s services.

A user's shell after `make services` and `make run` names no service: the checkout's services file
does (dovecote/checkout.py). Here the shell is the suite's environment without any service variable,
and DOVECOTE_ENV_FILE names a services file pointing at the suite's database, broker and Redis; the
commands, `make superuser` and `bin/web` (what `make run` serves with) all read it by themselves.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator

import pytest
import requests
from cryptography.fernet import Fernet
from django.conf import settings
from django.contrib.auth.models import User

from rooms.models import ApiKey
from tests import workers
from tests.demo_process import free_port
from tests.run_processes import ROOT, BinProcess

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# What a user's shell does not hold: the checkout's services file supplies these.
SERVICE_VARIABLES = {"DATABASE_URL", "STOMP_URL", "CELERY_BROKER_URL", "TEST_REDIS_URL", "DOVECOTE_HTTPS",
                     "DOVECOTE_SQLITE_PATH", "DOVECOTE_ENV_FILE", "DJANGO_SETTINGS_MODULE"}
COMMAND = re.compile(r"`((?:[\w./]*/)?python3? manage\.py [^`]+)`")
# A command with one of these is a form to fill in (NAME, [--room ROOM_ID ...], spark://host), not one to run.
PLACEHOLDER = re.compile(r"\[|…|\b[A-Z][A-Z_]*\b|://host\b")


def readme_commands() -> list[str]:
    return COMMAND.findall((ROOT / "README.md").read_text())


@pytest.fixture(scope="module")
def shell(django_db_setup, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A user's environment in a checkout whose services file names the suite's services."""
    tmp_path = tmp_path_factory.mktemp("checkout")
    services = tmp_path / "services.env"
    services.write_text(f"DATABASE_URL={workers.test_database_url()}\nSTOMP_URL={settings.STOMP_URL}\n"
                        f"CELERY_BROKER_URL={settings.CELERY_BROKER_URL}\n")
    env = {name: value for name, value in os.environ.items() if name not in SERVICE_VARIABLES}
    return env | {"DOVECOTE_ENV_FILE": str(services), "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}


def run(command: str, env: dict[str, str], **options: object) -> subprocess.CompletedProcess:
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=180, check=False, stdin=subprocess.DEVNULL, **options)
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def web(shell: dict[str, str], tmp_path_factory: pytest.TempPathFactory, django_db_blocker) -> Iterator[BinProcess]:
    """`make run`'s web process (bin/web) after its release step, on the same environment as the commands."""
    run("make --no-print-directory -s -o venv release", shell)  # migrations, and the static files it serves
    port = free_port()
    process = BinProcess("web", shell | {"PORT": str(port), "WEB_WORKERS": "1"}, tmp_path_factory.mktemp("web"))
    process.base = f"http://127.0.0.1:{port}"
    try:
        process.wait_until_serving(f"{process.base}/healthz/live")
        yield process
    finally:
        process.stop()
        with django_db_blocker.unblock():
            workers.close_other_sessions()


def test_every_manage_py_command_in_the_readme_runs_from_the_projects_virtualenv() -> None:
    commands = readme_commands()
    assert commands, "the README shows manage.py commands"
    bare = [command for command in commands if not command.startswith(".venv/bin/python manage.py ")]
    assert not bare, f"without .venv/bin/python a fresh clone has no Django: {bare}"


def test_every_manage_py_command_the_readme_names_exists(shell: dict[str, str]) -> None:
    names = set(re.findall(r"manage\.py (\w+)", (ROOT / "README.md").read_text()))
    names |= set(re.findall(r"manage\.py \w+` / `(\w+)`", (ROOT / "README.md").read_text()))
    listed = set(run(".venv/bin/python manage.py help --commands", shell).stdout.split())
    assert names and not names - listed, f"the README names commands manage.py does not have: {names - listed}"


def test_the_readmes_literal_commands_run_as_written(shell: dict[str, str]) -> None:
    literal = [command for command in readme_commands() if not PLACEHOLDER.search(command)]
    assert ".venv/bin/python manage.py create_api_key --name me --admin" in literal
    for command in literal:
        run(command, shell)


def test_the_readmes_api_key_command_makes_a_key_make_runs_web_server_accepts(
        shell: dict[str, str], web: BinProcess) -> None:
    [command] = [c for c in readme_commands() if "create_api_key --name me --admin" in c]
    key = run(command, shell).stdout.strip().splitlines()[-1]
    assert ApiKey.objects.get(name="me").is_admin  # in the database the services file names
    response = requests.get(f"{web.base}/api/v1/rooms/", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, f"{response.text}\n{web.text()}"
    wrong = requests.get(f"{web.base}/api/v1/rooms/", headers={"Authorization": "Bearer dvc_wrong"}, timeout=30)
    assert wrong.status_code == 401


def test_make_superuser_makes_a_login_to_make_runs_web_server(shell: dict[str, str], web: BinProcess) -> None:
    env = shell | {"DJANGO_SUPERUSER_USERNAME": "ops", "DJANGO_SUPERUSER_EMAIL": "ops@example.com",
                   "DJANGO_SUPERUSER_PASSWORD": "a long enough passphrase 42"}
    run("make --no-print-directory -s -o venv superuser", env)  # -o venv: the suite's venv is already made
    assert User.objects.get(username="ops").is_superuser
    browser = requests.Session()
    login = f"{web.base}/admin/login/?next=/admin/"
    assert browser.get(login, timeout=30).status_code == 200, web.text()
    signed_in = browser.post(login, timeout=30, data={
        "username": "ops", "password": "a long enough passphrase 42", "next": "/admin/",
        "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
    assert signed_in.status_code == 200 and signed_in.url == f"{web.base}/admin/", \
        f"{signed_in.url}\n{signed_in.text[:2000]}\n{web.text()}"
    assert "Log out" in signed_in.text


def test_the_secrets_key_command_prints_a_key_where_no_settings_load() -> None:
    env = {"PATH": os.environ["PATH"], "DOVECOTE_ENV_FILE": ""}  # production without its keys: settings refuse
    result = run(".venv/bin/python manage.py generate_secrets_key", env)
    Fernet(result.stdout.strip())
