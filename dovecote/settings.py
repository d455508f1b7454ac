"""Django settings for Dovecote, read from the environment (see README: Configuration)."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from celery.schedules import crontab

from dovecote.env import (
    ConfigError,
    env_bool,
    env_int,
    env_list,
    env_rate,
    env_str,
    env_url,
    local_secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DJANGO_DEBUG", False)
# Unset: a random key kept in var/secret-key, made on first start (one host only; set it when
# several web processes on different hosts must share sessions).
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or local_secret_key(BASE_DIR / "var" / "secret-key")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "rooms",
    "subscriptions",
    "delivery",
    "analytics",
]

MIDDLEWARE = [
    "dovecote.middleware.BodySizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "dovecote.urls"
WSGI_APPLICATION = "dovecote.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            "libraries": {"ui": "dovecote.ui.templatetags"},  # {% load ui %}: the UI's filters
        },
    },
]

# Database: DATABASE_URL (PostgreSQL through psycopg 3); unset means the embedded SQLite file.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    if not DATABASE_URL.startswith(("postgres://", "postgresql://")):
        raise ConfigError(f"DATABASE_URL={DATABASE_URL!r} must be a postgres:// or postgresql:// URL")
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("DOVECOTE_SQLITE_PATH") or BASE_DIR / "var" / "dovecote.sqlite3",
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,  # embedded mode writes from several threads
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Broker: stomp://user:pass@host:61613, or memory:// for the in-process broker (the default).
STOMP_URL = env_url("STOMP_URL", "memory://", schemes=("stomp", "stomp+ssl", "memory"))
STOMP_HEARTBEAT_MS = env_int("STOMP_HEARTBEAT_MS", 10_000, minimum=0)
STOMP_RECEIPT_TIMEOUT_MS = env_int("STOMP_RECEIPT_TIMEOUT_MS", 10_000, minimum=1)

# Celery: unset CELERY_BROKER_URL means embedded mode (kombu's in-process transport).
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", "memory://localhost/", schemes=("redis", "rediss", "amqp", "memory"))
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Every periodic job runs every few seconds, so beat needs no schedule file (the default shelve file
# breaks under Python 3.13's dbm.sqlite3 with "locking protocol" errors).
CELERY_BEAT_SCHEDULER = "celery.beat:Scheduler"
# Where a persistent scheduler (`celery beat -S celery.beat:PersistentScheduler`) would keep its file:
# with the other runtime files under var/, never in the directory beat happens to start in.
CELERY_BEAT_SCHEDULE_FILENAME = str(BASE_DIR / "var" / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "dispatch-push-sessions": {"task": "delivery.tasks.dispatch_push_sessions", "schedule": 1.0},
    "sweep-outbox": {"task": "delivery.tasks.sweep_outbox", "schedule": 2.0},
    "expire-overdue": {"task": "delivery.tasks.expire_overdue", "schedule": 5.0},
    "expire-leases": {"task": "delivery.tasks.expire_leases", "schedule": 1.0},
    # The safety net for frames a broker lost (delivery/watchdog.py).
    "resend-lost-frames": {"task": "delivery.tasks.resend_lost_frames", "schedule": 10.0},
    # Five past each hour, once the previous hour is complete; a run still going makes the next one skip.
    "run-reports": {"task": "analytics.tasks.run_reports", "schedule": crontab(minute=5),
                    "options": {"expires": 50 * 60}},
}

# Push URLs may reach loopback or private hosts only when listed here (hosts or CIDRs).
DOVECOTE_PUSH_ALLOW_HOSTS = env_list("DOVECOTE_PUSH_ALLOW_HOSTS")
# Embedded demo mode (`make demo`): serves the built-in flaky webhook receiver at /demo/receiver/.
DOVECOTE_DEMO = env_bool("DOVECOTE_DEMO", False)
# How long one push session (a Celery task draining one subscription) runs before handing over.
DOVECOTE_PUSH_SESSION_SECONDS = env_int("DOVECOTE_PUSH_SESSION_SECONDS", 30, minimum=1)
DOVECOTE_MAX_BODY_BYTES = env_int("DOVECOTE_MAX_BODY_BYTES", 256 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = DOVECOTE_MAX_BODY_BYTES
# Requests per API key (per client address for calls without one), e.g. 6000/min; over it: 429.
DOVECOTE_API_RATE = env_rate("DOVECOTE_API_RATE", "6000/min")

# Analytics (docs/analytics.md): the Spark report jobs. The defaults suit a 2-core machine.
DOVECOTE_SPARK_MASTER = env_str("DOVECOTE_SPARK_MASTER", "local[*]")  # or spark://host:7077, yarn, k8s://…
DOVECOTE_SPARK_DRIVER_MEMORY = env_str("DOVECOTE_SPARK_DRIVER_MEMORY", "1g")
# The PostgreSQL JDBC driver, given to Spark as local jars (Debian: libpostgresql-jdbc-java).
DOVECOTE_SPARK_JARS = env_str("DOVECOTE_SPARK_JARS", "/usr/share/java/postgresql.jar")
DOVECOTE_REPORT_PARTITIONS = env_int("DOVECOTE_REPORT_PARTITIONS", 2, minimum=1)  # JDBC read partitions
DOVECOTE_REPORT_FETCHSIZE = env_int("DOVECOTE_REPORT_FETCHSIZE", 10_000, minimum=1)

# The cache holds the rate-limit counters, so every web process must share it: Redis when
# DOVECOTE_CACHE_URL or a redis:// CELERY_BROKER_URL names one, else this process's memory.
_REDIS_SCHEMES = ("redis://", "rediss://")
DOVECOTE_CACHE_URL = env_url(
    "DOVECOTE_CACHE_URL",
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(_REDIS_SCHEMES) else "locmem://",
    schemes=("redis", "rediss", "locmem"),
)
if DOVECOTE_CACHE_URL.startswith(_REDIS_SCHEMES):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": DOVECOTE_CACHE_URL, "KEY_PREFIX": "dovecote"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rooms.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer",
                                 "rest_framework.renderers.BrowsableAPIRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "dovecote.api_errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "DEFAULT_THROTTLE_CLASSES": ["dovecote.throttling.ApiKeyRateThrottle"],
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Dovecote API",
    "DESCRIPTION": "Rooms, subscriptions and event delivery on an Apache Artemis broker.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI is served from the drf-spectacular-sidecar package, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "SubscriptionStatusEnum": "subscriptions.models.Subscription.Status",
        "DeliveryStatusEnum": "delivery.models.Delivery.Status",
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# The operator UI (dovecote/ui) signs staff users in with Django auth.
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # Front-end packages come from the npm registry (package.json; `npm ci`, run by make) and are
    # served straight from node_modules, never committed.
    ("vendor/htmx", BASE_DIR / "node_modules" / "htmx.org" / "dist"),
]

LOG_LEVEL = env_str("DOVECOTE_LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ConfigError(f"DOVECOTE_LOG_LEVEL={LOG_LEVEL!r} is not a log level")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "keyvalue": {"()": "dovecote.logformat.KeyValueFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "keyvalue"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "dovecote": {"level": LOG_LEVEL},
        "delivery": {"level": LOG_LEVEL},
        # delivery.broker reports connection losses and reconnects itself; stomp.py's own
        # tracebacks for the same events would only repeat them.
        "stomp.py": {"level": "CRITICAL"},
    },
}
