"""Test settings: the real local PostgreSQL and Redis unless the environment says otherwise."""

import os
import tempfile

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("CELERY_RESULT_BACKEND", "redis://127.0.0.1:6379/15")
os.environ.setdefault("MIRRORLAB_DATA_DIR", os.path.join(tempfile.gettempdir(), "mirrorlab-test-data"))

from webapp.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

OFFER_TEST_ONLY_CHOICES = True  # the browser journey launches a noop-test run from the form
