"""Django settings. Every setting the environment may change is read here, once."""

from __future__ import annotations

from pathlib import Path

import plotly
from django.core.exceptions import ImproperlyConfigured

from webapp.env import envbool, envint, envlist, envstr, parse_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(envstr("MIRRORLAB_DATA_DIR", str(BASE_DIR / "data"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = envbool("DEBUG", False)
SECRET_KEY = envstr("SECRET_KEY", "insecure-dev-key-set-SECRET_KEY-in-production")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "webapp.projects",
    "webapp.prompts",
    "webapp.runs",
    "webapp.evals",
    "webapp.long2short",
    "webapp.pages",
]

MIDDLEWARE = [
    "webapp.limits.RequestSizeLimitMiddleware",  # first: an oversized body is refused before anything reads it
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

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
                "webapp.projects.context.current_project",
            ],
        },
    },
]

DATABASES = {"default": parse_database_url(envstr("DATABASE_URL", f"sqlite:///{DATA_DIR / 'mirrorlab.sqlite3'}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# plotly.min.js is served from the installed plotly package: no CDN.
STATICFILES_DIRS = [BASE_DIR / "static", ("plotly", Path(plotly.__file__).parent / "package_data")]
WHITENOISE_USE_FINDERS = True
MEDIA_URL = "media/"
MEDIA_ROOT = DATA_DIR / "media"
UPLOADS_DIR = DATA_DIR / "uploads"  # large prompt files, kept until a worker has imported them
FILE_UPLOAD_MAX_MEMORY_SIZE = envint("FILE_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 50 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["webapp.api_filters.VisibleFilterBackend"],  # ids among the visible rows
    "DEFAULT_PAGINATION_CLASS": "webapp.pagination.Pagination",
    "PAGE_SIZE": envint("API_PAGE_SIZE", 50),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # NaN, Infinity, NUL and over-deep nesting refused naming where; JSON only (a form-encoded or multipart body
    # would reach the JSON fields unchecked): the prompt-set endpoints add multipart for their file uploads
    "DEFAULT_PARSER_CLASSES": ["webapp.parsers.StrictJSONParser"],
}

# Input limits, checked before any work (webapp/limits.py): a larger request body is refused with 413 before
# it is read; a larger upload, problem or set with a 400 naming the field; uploads above
# UPLOAD_IMPORT_IN_REQUEST_BYTES are imported by a background job, never inside the request.
MAX_UPLOAD_BYTES = envint("MIRRORLAB_MAX_UPLOAD_BYTES", 100_000_000)
MAX_REQUEST_BYTES = envint("MIRRORLAB_MAX_REQUEST_BYTES", MAX_UPLOAD_BYTES + 1_000_000)
UPLOAD_IMPORT_IN_REQUEST_BYTES = envint("MIRRORLAB_UPLOAD_IMPORT_IN_REQUEST_BYTES", 2_000_000)
MAX_PROMPT_CHARS = envint("MIRRORLAB_MAX_PROMPT_CHARS", 200_000)
MAX_PROMPTS_PER_SET = envint("MIRRORLAB_MAX_PROMPTS_PER_SET", 1_000_000)
MAX_JSON_DEPTH = envint("MIRRORLAB_MAX_JSON_DEPTH", 64)
MAX_JSON_BYTES = envint("MIRRORLAB_MAX_JSON_BYTES", 10_000_000)  # API JSON bodies (files go as multipart)
SPECTACULAR_SETTINGS = {
    "TITLE": "Mirrorlab API",
    "DESCRIPTION": "Prompt sets, RL runs, benchmark suites, evaluations and long2short variants.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # /api/docs/ draws the schema with Swagger UI from this package's static files, not a CDN (offline labs)
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# Celery: the on-disk filesystem transport by default, so one machine needs no broker.
CELERY_BROKER_DIR = DATA_DIR / "celery" / "broker"
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", "filesystem://")
CELERY_RESULTS_DIR = DATA_DIR / "celery" / "results"
CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND", f"file://{CELERY_RESULTS_DIR}")
if CELERY_RESULT_BACKEND.startswith("file://"):
    CELERY_RESULTS_DIR.mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
if CELERY_BROKER_URL.startswith("filesystem://"):
    for folder in ("queue", "processed", "control"):
        (CELERY_BROKER_DIR / folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),  # exchange tables; the default is ./control
        "store_processed": False,
    }

# Job recovery (webapp/jobs.py has the state machine): a running job stamps a heartbeat every
# JOB_HEARTBEAT_SECONDS; every worker looks for running jobs whose heartbeat is older than
# JOB_STALE_AFTER_SECONDS (a dead worker's) when it starts and every JOB_RECOVERY_INTERVAL_SECONDS,
# and re-queues them (or finishes them as cancelled when a cancel was pending).
JOB_HEARTBEAT_SECONDS = envint("JOB_HEARTBEAT_SECONDS", 10)
JOB_STALE_AFTER_SECONDS = envint("JOB_STALE_AFTER_SECONDS", 90)
# A job whose worker died this many times while running it (an OOM kill every time) fails instead of looping.
JOB_MAX_LOST_WORKERS = envint("JOB_MAX_LOST_WORKERS", 3)
JOB_RECOVERY_INTERVAL_SECONDS = envint("JOB_RECOVERY_INTERVAL_SECONDS", 30)
# A running job that has not stopped this long after its cancel (hung) stops beating, and recovery cancels it.
JOB_CANCEL_GRACE_SECONDS = envint("JOB_CANCEL_GRACE_SECONDS", 600)
# A job queued (its task on the broker) longer than this with no worker starting it: its page says which queue
# needs a worker (webapp/pages/job_waiting.py). Read from the row only; the web server never asks the broker.
JOB_QUEUED_HINT_SECONDS = envint("JOB_QUEUED_HINT_SECONDS", 60)
if JOB_STALE_AFTER_SECONDS < 3 * JOB_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured("JOB_STALE_AFTER_SECONDS must be at least three heartbeats (JOB_HEARTBEAT_SECONDS)")
if JOB_MAX_LOST_WORKERS < 1:
    raise ImproperlyConfigured("JOB_MAX_LOST_WORKERS must be at least 1 (the worker deaths that fail a job)")

CHECKPOINT_DIR = DATA_DIR / "checkpoints"
MODELS_DIR = DATA_DIR / "models"  # model presets created on first use (the `tiny` model)
DATASETS_DIR = Path(envstr("MIRRORLAB_DATASETS_DIR", str(DATA_DIR / "datasets")))
# Download a benchmark missing from DATASETS_DIR from the Hugging Face hub (machines with hub access).
FETCH_MISSING_BENCHMARKS = envbool("MIRRORLAB_FETCH_BENCHMARKS", False)
# The launch form offers test-only choices (the noop-test trainer) only to the test suite.
OFFER_TEST_ONLY_CHOICES = False
# Code sandbox for model-written programs: "forkserver" (fast, pre-forked) or "bwrap" (bubblewrap per run).
SANDBOX_BACKEND = envstr("MIRRORLAB_SANDBOX_BACKEND", "forkserver")
# vllm-hybrid: Unix socket of a vLLM sidecar that starts the vLLM servers (a Kubernetes GPU pod); empty = the
# trainer starts them as its own child processes.
VLLM_SIDECAR_SOCKET = envstr("MIRRORLAB_VLLM_SIDECAR_SOCKET", "")
LOG_DIR = DATA_DIR / "logs"

# ---- Paths users may name (issue 17, "paths belong to projects"; the rule is common/path_rules.py, applied by
# webapp/path_policy.py in the API, the forms and again on the workers). Comma-separated absolute folders.
# MODEL_ROOTS: shared model folders that evaluations, RL runs and registered checkpoints may name by path
# (default none: presets, hub ids, checkpoint ids and the project's own checkpoint folders only).
MODEL_ROOTS = envlist("MIRRORLAB_MODEL_ROOTS", [])
# IMPORT_ROOTS: folders whose files prompt-set imports may read (default none: hub dataset ids only).
IMPORT_ROOTS = envlist("MIRRORLAB_IMPORT_ROOTS", [])
# ---- end of the path roots

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}

# --- Accounts and the API schema (issue 17 item 6) ---------------------------------------------------------------
# Login throttling by django-axes: the login pages (/login/, /api/auth/login/, /admin/login/) and the token endpoint
# (/api/token/) count failed logins per username and per client address, in the database (shared by every web
# worker). LOGIN_FAILURE_LIMIT failures inside LOGIN_COOLOFF_MINUTES lock that username, and that address, out
# until the window has passed: 429 with Retry-After (the page shows it as the form's error). `manage.py axes_reset`
# (or `axes_reset_username <name>`, `axes_reset_ip <address>`) lifts a lockout at once.
INSTALLED_APPS += ["axes"]
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # last: it turns a flagged login into the lockout answer
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_FAILURE_LIMIT = envint("MIRRORLAB_LOGIN_FAILURE_LIMIT", 5)
LOGIN_COOLOFF_MINUTES = envint("MIRRORLAB_LOGIN_COOLOFF_MINUTES", 15)
# Reverse proxies in front of the web server that append the client's address to X-Forwarded-For (an ingress: 1).
# 0: the client's address is REMOTE_ADDR; behind a proxy that would put every user on the proxy's one address.
LOGIN_TRUSTED_PROXIES = envint("MIRRORLAB_TRUSTED_PROXIES", 0)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = LOGIN_COOLOFF_MINUTES / 60  # a float: hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one reaching the limit locks the login out
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the window ends on time, whatever is tried during it
AXES_LOCKOUT_CALLABLE = "webapp.accounts.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "webapp.accounts.lockout.client_ip_address"
AXES_VERBOSE = False
AXES_DISABLE_ACCESS_LOG = True  # no row per successful login (scripts fetch tokens often); failures are still kept
# The OpenAPI schema at /api/schema/ needs a login unless MIRRORLAB_PUBLIC_API_SCHEMA is true. Its operations
# list the error answers too (webapp/api_schema.py): 400, 403, 404, and 409 where a row's state refuses a change.
PUBLIC_API_SCHEMA = envbool("MIRRORLAB_PUBLIC_API_SCHEMA", False)
REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "webapp.api_schema.AutoSchema"
# --- end of accounts and the API schema ---------------------------------------------------------------------------
