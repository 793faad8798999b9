"""Django settings. Every setting the environment may change is read here, once."""

from __future__ import annotations

from pathlib import Path

import plotly

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
    "webapp.projects",
    "webapp.prompts",
    "webapp.runs",
    "webapp.evals",
    "webapp.long2short",
    "webapp.pages",
]

MIDDLEWARE = [
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
FILE_UPLOAD_MAX_MEMORY_SIZE = envint("FILE_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 50 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "webapp.pagination.Pagination",
    "PAGE_SIZE": envint("API_PAGE_SIZE", 50),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Mirrorlab API",
    "DESCRIPTION": "Prompt sets, RL runs, benchmark suites, evaluations and long2short variants.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
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

# A running job whose heartbeat is older than this is taken to belong to a dead worker and may be re-claimed.
JOB_STALE_AFTER_SECONDS = envint("JOB_STALE_AFTER_SECONDS", 900)

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}
