"""Django settings for Dovecote, read from the environment (see README: Configuration)."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.utils.csp import CSP

from dovecote import checkout
from dovecote.env import (
    ConfigError,
    checked_secret_key,
    env_allow_hosts,
    env_bool,
    env_duration,
    env_fernet_keys,
    env_int,
    env_list,
    env_networks,
    env_rate,
    env_str,
    env_url,
    local_fernet_key,
    local_secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent
# In a checkout, the services `make services` started and plain HTTP, unless the environment says otherwise.
checkout.load()

DEBUG = env_bool("DJANGO_DEBUG", False)
# Production is the default (docs/security.md): with DEBUG off Dovecote is served over HTTPS, its
# cookies are Secure, HSTS is on, and its keys must come from the environment. DOVECOTE_HTTPS=false
# relaxes this for a plain-HTTP run on this machine (make run, make demo, the test suite).
DOVECOTE_HTTPS = env_bool("DOVECOTE_HTTPS", not DEBUG)
PRODUCTION = DOVECOTE_HTTPS and not DEBUG
# Local runs: a key that is not set is made on first start and kept in var/ (one host only).
SECRET_KEY = checked_secret_key("DJANGO_SECRET_KEY", production=PRODUCTION) \
    or local_secret_key(BASE_DIR / "var" / "secret-key")
# Fernet keys that encrypt signing secrets at rest, comma-separated: the first encrypts, every one decrypts.
DOVECOTE_SECRETS_KEYS = env_fernet_keys("DOVECOTE_SECRETS_KEY", production=PRODUCTION) \
    or [local_fernet_key(BASE_DIR / "var" / "secrets-key")]
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

# Reverse proxies in front of the web server (0: none). With N, the client's address is the entry
# the first of them wrote into X-Forwarded-For, and their X-Forwarded-Proto says whether it was HTTPS.
DOVECOTE_TRUSTED_PROXIES = env_int("DOVECOTE_TRUSTED_PROXIES", 0, minimum=0, maximum=10)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if DOVECOTE_TRUSTED_PROXIES else None
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = DOVECOTE_HTTPS
SECURE_SSL_REDIRECT = DOVECOTE_HTTPS
# Health checks and metrics scrapers probe the server itself, over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz/", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("DOVECOTE_HSTS_SECONDS", 365 * 24 * 3600 if DOVECOTE_HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DOVECOTE_HSTS_INCLUDE_SUBDOMAINS", True)
# Preloading is a promise to browser vendors an operator makes for the whole domain, not a default.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
SESSION_COOKIE_HTTPONLY = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Every page's scripts and styles are files served from here: nothing inline, nothing from elsewhere.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

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
    # Dovecote's apps, each importing only those listed after it (docs/architecture.md#layers).
    "console",
    "api",
    "demo",
    "analytics",
    "delivery",
    "subscriptions",
    "rooms",
]

MIDDLEWARE = [
    "dovecote.middleware.BodySizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (hashed, compressed by collectstatic) straight from STATIC_ROOT, before any other work.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "dovecote.middleware.CommonMiddleware",  # Django's, without the redirect that loses an API body
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "dovecote.urls"
WSGI_APPLICATION = "dovecote.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The console's templates live in the project's top-level templates/ (the specified layout).
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: DATABASE_URL (PostgreSQL through psycopg 3); unset means the embedded SQLite file.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    if not DATABASE_URL.startswith(("postgres://", "postgresql://")):
        raise ConfigError(f"DATABASE_URL={DATABASE_URL!r} must be a postgres:// or postgresql:// URL")
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    # Django turns psycopg's prepared statements off (prepare_threshold None), which made the publish
    # path's `prepare=True` (delivery/rows.py `_run`) a no-op: PostgreSQL parsed and planned its statements
    # at every execution. With a threshold those are prepared once per connection; the ORM's queries are
    # not (Django binds their parameters on the client, and client-side cursors never prepare).
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("DOVECOTE_SQLITE_PATH") or str(BASE_DIR / "var" / "dovecote.sqlite3"),
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
STOMP_CONSUMERS_PER_CONNECTION = env_int("STOMP_CONSUMERS_PER_CONNECTION", 256, minimum=1)  # then another connection

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
# Celery's loggers go through the LOGGING below (Dovecote's formatter, its escaping) instead of
# handlers of Celery's own on the root logger.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes a thread's database connection before and after every task unless
# this is set: a new PostgreSQL backend (fork, authentication) for every beat tick. Tasks keep
# their connections as requests do instead (dovecote/celery.py: CONN_MAX_AGE, health checks).
CELERY_DB_REUSE_MAX = 10**9
# Every periodic job runs every few seconds, so beat needs no schedule file (the default shelve file
# breaks under Python 3.13's dbm.sqlite3 with "locking protocol" errors).
CELERY_BEAT_SCHEDULER = "dovecote.heartbeats:HeartbeatScheduler"  # celery.beat:Scheduler that says it is alive
# (and sleeps until an entry is due: Celery's own ticks without pause for the last 10 ms before each)
# Where a persistent scheduler (`celery beat -S celery.beat:PersistentScheduler`) would keep its file:
# with the other runtime files under var/, never in the directory beat happens to start in.
CELERY_BEAT_SCHEDULE_FILENAME = str(BASE_DIR / "var" / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "dispatch-push-sessions": {"task": "delivery.tasks.dispatch_push_sessions", "schedule": 1.0},
    "sweep-outbox": {"task": "delivery.tasks.sweep_outbox", "schedule": 2.0},
    "expire-overdue": {"task": "delivery.tasks.expire_overdue", "schedule": 5.0},
    # The safety net for ordering keys left with held events and nothing in flight (delivery/sequencing.py).
    "release-stalled-keys": {"task": "delivery.tasks.release_stalled_keys", "schedule": 10.0},
    "expire-leases": {"task": "delivery.tasks.expire_leases", "schedule": 1.0},
    # The safety net for frames a broker lost (delivery/watchdog.py).
    "resend-lost-frames": {"task": "delivery.tasks.resend_lost_frames", "schedule": 10.0},
    # Circuit breakers open longer than their limit disable their subscriptions (delivery/long_open_breakers.py).
    "disable-long-open-breakers": {"task": "delivery.tasks.disable_long_open_breakers", "schedule": 30.0},
    # Five past each hour, once the previous hour is complete; a run still going makes the next one skip.
    "run-reports": {"task": "analytics.tasks.run_reports", "schedule": crontab(minute=5),
                    "options": {"expires": 50 * 60}},
    # Half past each hour: settled messages past their retention go to the archive (analytics/archive.py);
    # a run still going makes the next one skip (an advisory lock).
    "archive": {"task": "analytics.tasks.archive", "schedule": crontab(minute=35), "options": {"expires": 50 * 60}},
}
# False: beat schedules neither hourly job; run `manage.py run_reports` and `manage.py archive` from a
# scheduler of your own (the follower and the console's Refresh still ask for report runs). `make bench` sets
# it: the report run at five past would start a Spark driver on both cores in the middle of a figure.
if not env_bool("DOVECOTE_HOURLY_JOBS", True):
    CELERY_BEAT_SCHEDULE = {name: entry for name, entry in CELERY_BEAT_SCHEDULE.items()
                            if name not in {"run-reports", "archive"}}

# Health (api/health.py): /healthz/ready fails when no worker or no beat has sent a heartbeat for this long.
DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS = env_int("DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS", 10, minimum=2)

# Metrics (GET /metrics, docs/operations.md#metrics): a scrape is answered when it brings the bearer
# token DOVECOTE_METRICS_TOKEN or comes from an address in DOVECOTE_METRICS_ALLOW (hosts' IPs or CIDRs).
DOVECOTE_METRICS_TOKEN = env_str("DOVECOTE_METRICS_TOKEN")
if DOVECOTE_METRICS_TOKEN and len(DOVECOTE_METRICS_TOKEN) < 16:
    raise ConfigError("DOVECOTE_METRICS_TOKEN must be at least 16 characters")
DOVECOTE_METRICS_ALLOW = env_networks("DOVECOTE_METRICS_ALLOW", "127.0.0.1,::1")
# Where every process keeps its metric values when several share one scrape (bin/web, bin/worker and
# bin/beat set it; dovecote/metrics.py). Unset: each process keeps its own in memory.
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR")
if PROMETHEUS_MULTIPROC_DIR:
    Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
# The `room` label names at most this many rooms per process; the others are counted as room="_other".
DOVECOTE_METRICS_MAX_ROOMS = env_int("DOVECOTE_METRICS_MAX_ROOMS", 100, minimum=1, maximum=10_000)
# Queue depths are reported for the deepest this-many subscriptions; the rest are summed as "_other".
DOVECOTE_METRICS_MAX_QUEUES = env_int("DOVECOTE_METRICS_MAX_QUEUES", 200, minimum=1, maximum=10_000)

# Push URLs may reach loopback or private hosts only when listed here (hosts or CIDRs, each with an
# optional :port that opens only that port; subscriptions/push_urls.py).
DOVECOTE_PUSH_ALLOW_HOSTS = env_allow_hosts("DOVECOTE_PUSH_ALLOW_HOSTS")
# Embedded demo mode (`make demo`): serves the built-in flaky webhook receiver at /demo/receiver/.
DOVECOTE_DEMO = env_bool("DOVECOTE_DEMO", False)
# How long one push session (one subscription's deliveries on a worker's event loop) runs before it
# hands over (so sessions spread over the workers), and how long it stays warm without messages.
DOVECOTE_PUSH_SESSION_SECONDS = env_int("DOVECOTE_PUSH_SESSION_SECONDS", 300, minimum=1)
DOVECOTE_PUSH_SESSION_IDLE_SECONDS = env_int("DOVECOTE_PUSH_SESSION_IDLE_SECONDS", 300, minimum=1)
# The most push sessions one hot subscription gets, one per worker (delivery/push/claims.py); 1: one session.
DOVECOTE_PUSH_SESSIONS_PER_SUBSCRIPTION = env_int("DOVECOTE_PUSH_SESSIONS_PER_SUBSCRIPTION", 8, minimum=1)
# Sockets and POSTs in flight of one worker process's push engine, idle keep-alive connections
# included (lowered to half the soft RLIMIT_NOFILE when that is lower), and the most of them one room
# and one subscription may hold (delivery/push/budget.py).
DOVECOTE_PUSH_SOCKETS = env_int("DOVECOTE_PUSH_SOCKETS", 256, minimum=1)
DOVECOTE_PUSH_SOCKETS_PER_ROOM_PERCENT = env_int("DOVECOTE_PUSH_SOCKETS_PER_ROOM_PERCENT", 50, minimum=1,
                                                 maximum=100)
DOVECOTE_PUSH_SOCKETS_PER_SUBSCRIPTION_PERCENT = env_int("DOVECOTE_PUSH_SOCKETS_PER_SUBSCRIPTION_PERCENT", 25,
                                                         minimum=1, maximum=100)
# A push subscription's max_in_flight × timeout_ms, in seconds: how long its POSTs may hold sockets.
DOVECOTE_MAX_IN_FLIGHT_SECONDS = env_int("DOVECOTE_MAX_IN_FLIGHT_SECONDS", 6000, minimum=1)
# /healthz/ready fails while a worker has fewer file descriptors than this left (or cannot open a socket).
DOVECOTE_WORKER_MIN_FREE_FDS = env_int("DOVECOTE_WORKER_MIN_FREE_FDS", 32, minimum=1)
# After a signing-secret rotation, the old secret keeps signing pushes (a second signature) this long.
DOVECOTE_SECRET_OVERLAP_SECONDS = env_int("DOVECOTE_SECRET_OVERLAP_SECONDS", 24 * 3600, minimum=0,
                                          maximum=7 * 24 * 3600)
DOVECOTE_MAX_BODY_BYTES = env_int("DOVECOTE_MAX_BODY_BYTES", 256 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = DOVECOTE_MAX_BODY_BYTES
# JSON (request bodies, schemas, payloads) nested deeper than this many arrays and objects is refused.
DOVECOTE_MAX_JSON_DEPTH = env_int("DOVECOTE_MAX_JSON_DEPTH", 64, minimum=2, maximum=200)
# Quotas and caps (docs/security.md).
DOVECOTE_MAX_SUBSCRIPTIONS_PER_ROOM = env_int("DOVECOTE_MAX_SUBSCRIPTIONS_PER_ROOM", 100, minimum=1)
DOVECOTE_MAX_EVENT_TYPES_PER_ROOM = env_int("DOVECOTE_MAX_EVENT_TYPES_PER_ROOM", 200, minimum=1)
# What an event type's JSON Schema may cost (rooms/schemas.py): its compact JSON, its subschemas, and
# the subschemas a check visits with its references followed; beyond them it is refused at creation.
DOVECOTE_SCHEMA_MAX_BYTES = env_int("DOVECOTE_SCHEMA_MAX_BYTES", 64 * 1024, minimum=1024)
DOVECOTE_SCHEMA_MAX_SUBSCHEMAS = env_int("DOVECOTE_SCHEMA_MAX_SUBSCHEMAS", 2000, minimum=10)
DOVECOTE_SCHEMA_MAX_EXPANDED = env_int("DOVECOTE_SCHEMA_MAX_EXPANDED", 10_000, minimum=10)
# Steps (rooms/schema_keywords.py) the payloads of one publish may take together to check against
# their schemas; a payload that needs more is refused (400).
DOVECOTE_SCHEMA_CHECK_STEPS = env_int("DOVECOTE_SCHEMA_CHECK_STEPS", 250_000, minimum=1000)
# Compiled schema validators each process keeps, by the total size of their schemas' JSON.
DOVECOTE_SCHEMA_CACHE_BYTES = env_int("DOVECOTE_SCHEMA_CACHE_BYTES", 8 * 1024 * 1024, minimum=64 * 1024)
# A pull reply stops taking messages once their bodies add up to this many bytes (it always has one).
DOVECOTE_PULL_REPLY_MAX_BYTES = env_int("DOVECOTE_PULL_REPLY_MAX_BYTES", 4 * 1024 * 1024, minimum=1024)
# Replaying dead letters happens in transactions of at most this many.
DOVECOTE_REPLAY_CHUNK = env_int("DOVECOTE_REPLAY_CHUNK", 500, minimum=1)
# Long polls (pulls with wait_ms > 0) each hold a web thread: at most this many at once per web
# process, and per API key within a process; the others are answered 429 at once.
DOVECOTE_LONG_POLLS = env_int("DOVECOTE_LONG_POLLS", 2, minimum=0)
DOVECOTE_LONG_POLLS_PER_KEY = env_int("DOVECOTE_LONG_POLLS_PER_KEY", 1, minimum=0)
# Requests per API key (per client address for calls without one), e.g. 6000/min; over it: 429.
DOVECOTE_API_RATE = env_rate("DOVECOTE_API_RATE", "6000/min")
# Failed sign-ins per client address: passwords (UI and admin) and API keys. Over it, every attempt
# from that address is refused until the window ends, right password or key included.
DOVECOTE_LOGIN_FAILURE_RATE = env_rate("DOVECOTE_LOGIN_FAILURE_RATE", "10/15min")
DOVECOTE_API_KEY_FAILURE_RATE = env_rate("DOVECOTE_API_KEY_FAILURE_RATE", "20/min")

# Analytics (docs/analytics.md): the Spark report jobs. The defaults suit a 2-core machine.
DOVECOTE_SPARK_MASTER = env_str("DOVECOTE_SPARK_MASTER", "local[*]")  # or spark://host:7077, yarn, k8s://…
DOVECOTE_SPARK_DRIVER_MEMORY = env_str("DOVECOTE_SPARK_DRIVER_MEMORY", "1g")
# The PostgreSQL JDBC driver, given to Spark as local jars (Debian: libpostgresql-jdbc-java).
DOVECOTE_SPARK_JARS = env_str("DOVECOTE_SPARK_JARS", "/usr/share/java/postgresql.jar")
# Where the Spark driver JVM's class-data archive is kept (made by the first run, mapped by the next: ~5 s
# less to start a run; analytics/jobs/session.py). Empty: none.
DOVECOTE_SPARK_CLASS_ARCHIVES = env_str("DOVECOTE_SPARK_CLASS_ARCHIVES", str(BASE_DIR / "var" / "spark"))
DOVECOTE_REPORT_PARTITIONS = env_int("DOVECOTE_REPORT_PARTITIONS", 2, minimum=1)  # JDBC read partitions
DOVECOTE_REPORT_FETCHSIZE = env_int("DOVECOTE_REPORT_FETCHSIZE", 10_000, minimum=1)

# Retention and the archive (docs/analytics.md#retention-and-the-archive): settled messages older than
# their room's retention (this, unless the room sets retention_ms; bounds as rooms/rules.py's, 1 h .. 3650 d)
# move from PostgreSQL to Parquet files under DOVECOTE_ARCHIVE_URL (a folder, s3a://… or hdfs://…),
# DOVECOTE_ARCHIVE_BATCH messages per batch (one Parquet write, then one short delete transaction).
DOVECOTE_RETENTION = env_duration("DOVECOTE_RETENTION", "7d", minimum_s=3600, maximum_s=3650 * 86400)
DOVECOTE_ARCHIVE_URL = env_str("DOVECOTE_ARCHIVE_URL", str(BASE_DIR / "var" / "archive"))
DOVECOTE_ARCHIVE_BATCH = env_int("DOVECOTE_ARCHIVE_BATCH", 5000, minimum=1, maximum=1_000_000)

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
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer",
                                 "rest_framework.renderers.BrowsableAPIRenderer"],
    "DEFAULT_PARSER_CLASSES": ["dovecote.inputs.JsonBodyParser"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "DEFAULT_THROTTLE_CLASSES": ["dovecote.throttling.ApiKeyRateThrottle"],
    "PAGE_SIZE": 50,
    "NUM_PROXIES": DOVECOTE_TRUSTED_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Dovecote API",
    "DESCRIPTION": "Rooms, subscriptions and event delivery on an Apache Artemis broker.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get their own components (`RoomRequest`, `PatchedRoomRequest`): without them the
    # reply components, whose read-only fields are required, stood for the request too, and generators
    # that ignore `readOnly` demanded `id` and `created_at` on create.
    "COMPONENT_SPLIT_REQUEST": True,
    "GET_LIB_DOC_EXCLUDES": "dovecote.inputs.schema_doc_excludes",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.errors.document_common_replies",
    ],
    # Swagger UI is served from the drf-spectacular-sidecar package, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "SubscriptionStatusEnum": "subscriptions.models.Subscription.Status",
        "BreakerStateEnum": "subscriptions.models.Subscription.Breaker",
        "DeliveryStatusEnum": "delivery.models.Delivery.Status",
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# The operator UI (console/) signs staff users in with Django auth.
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves the static files. In production collectstatic (the Dockerfile, `make run`) writes
# each under a name with its hash, gzipped beside it, and they are served from STATIC_ROOT, cached
# for ever. DEBUG and the embedded demo serve them from the finders as they are (no collectstatic).
STATIC_FROM_FINDERS = DEBUG or DOVECOTE_DEMO
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage" if STATIC_FROM_FINDERS
                    else "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = STATIC_FROM_FINDERS
STATICFILES_DIRS = [
    # The console's own static files, in the project's top-level static/ (the specified layout).
    BASE_DIR / "static",
    # Front-end packages come from the npm registry (package.json; `npm ci`, run by make) and are
    # served straight from node_modules, never committed.
    ("vendor/htmx", BASE_DIR / "node_modules" / "htmx.org" / "dist"),
]

LOG_LEVEL = env_str("DOVECOTE_LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ConfigError(f"DOVECOTE_LOG_LEVEL={LOG_LEVEL!r} is not a log level")
LOG_FORMAT = env_str("DOVECOTE_LOG_FORMAT", "keyvalue").lower()
if LOG_FORMAT not in {"keyvalue", "json"}:
    raise ConfigError(f"DOVECOTE_LOG_FORMAT={LOG_FORMAT!r} must be keyvalue or json")
_per_task_lines = "WARNING" if LOG_LEVEL == "INFO" else LOG_LEVEL  # Celery's lines of every task (LOGGING, below)
# dovecote.logformat.configure: this LOGGING, and Python's warnings logged (py.warnings) in the same format.
LOGGING_CONFIG = "dovecote.logformat.configure"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "keyvalue": {"()": "dovecote.logformat.KeyValueFormatter"},
        "json": {"()": "dovecote.logformat.JsonFormatter"},
    },
    "handlers": {"console": {"class": "dovecote.logformat.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "dovecote": {"level": LOG_LEVEL},
        "delivery": {"level": LOG_LEVEL},
        # The worker's and beat's own lines (started, ready, task errors), in Dovecote's format.
        "celery": {"level": "INFO" if LOG_LEVEL in {"DEBUG", "INFO"} else LOG_LEVEL},
        # But a line for each task received and each task succeeded or retried only at DEBUG: beat's housekeeping
        # sends about three tasks a second, so those lines were nearly all of an idle worker's log (and 634 of a
        # worker's 1,500 in make bench's fan-out group). A task that fails is still an ERROR of celery.app.trace.
        "celery.worker.strategy": {"level": _per_task_lines},
        "celery.app.trace": {"level": _per_task_lines},
        # delivery.broker reports connection losses and reconnects itself; stomp.py's own
        # tracebacks for the same events would only repeat them.
        "stomp.py": {"level": "CRITICAL"},
        # Python's warnings (a deprecation, Celery's warning about running as root) as records, to the root's handler.
        "py.warnings": {"level": "WARNING", "handlers": [], "propagate": True},
    },
}
