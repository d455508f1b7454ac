"""The suite's settings: dovecote.settings, pointed at the real services before it is read.

Tests use their own Redis database for Celery, so a `make run` on the same machine never takes
their tasks, and the real PostgreSQL and STOMP broker unless the environment names others.
"""

from __future__ import annotations

import os
import tempfile

from dovecote import checkout
from tests.services import DEFAULT_REDIS_URL, DEFAULT_STOMP_URL

checkout.load()  # a checkout's services (var/services.env) first, as every process of it reads them
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dovecote")
if not os.environ.get("STOMP_URL", "").startswith("stomp"):
    os.environ["STOMP_URL"] = DEFAULT_STOMP_URL
os.environ["CELERY_BROKER_URL"] = os.environ.get("TEST_REDIS_URL") or DEFAULT_REDIS_URL
os.environ.setdefault("DOVECOTE_PUSH_ALLOW_HOSTS", "127.0.0.1")
# The test client and live servers speak plain HTTP (tests/dovecote/test_production_settings.py checks the defaults).
os.environ.setdefault("DOVECOTE_HTTPS", "false")
# The archive goes to a temporary folder, never the checkout's var/archive
# (tests/analytics/test_archive_*.py set their own).
os.environ.setdefault("DOVECOTE_ARCHIVE_URL", os.path.join(tempfile.gettempdir(), "dovecote-test-archive"))
# The Spark driver's class-data archive: one per machine for every run of the suite, out of the checkout.
os.environ.setdefault("DOVECOTE_SPARK_CLASS_ARCHIVES",
                      os.path.join(tempfile.gettempdir(), "dovecote-test-spark-classes"))

from dovecote.settings import *  # noqa: E402, F403 - after the environment is set up above

# Parallel runs on one machine (several developers' sessions) each set TEST_RUN_NAME, so they get
# their own test database; give each its own TEST_REDIS_URL database too.
if run_name := os.environ.get("TEST_RUN_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": f"test_dovecote_{run_name}"}  # noqa: F405

# The hourly report and archive runs start a Spark JVM: never from the workers the suite starts.
CELERY_BEAT_SCHEDULE = {name: entry for name, entry in CELERY_BEAT_SCHEDULE.items()  # noqa: F405
                        if name not in {"run-reports", "archive"}}

# Every reply of the API is held to its OpenAPI schema (tests/schema_validation.py); outermost, so it
# sees the replies other middleware makes (413, 429) too.
MIDDLEWARE = ["tests.schema_validation.CheckApiReplies", *MIDDLEWARE]  # noqa: F405

# The suite serves static files from the finders as they are, without a collectstatic per run
# (tests/dovecote/test_static_files.py checks the production storage on files it collects).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = True

# The receiver kit's Django integration (receivers/python), tested in this project: its inbox table.
INSTALLED_APPS = [*INSTALLED_APPS, "dovecote_receiver.django"]  # noqa: F405
