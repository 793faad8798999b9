"""Test settings: the real local PostgreSQL and Redis unless the environment says otherwise."""

import os
import tempfile

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("CELERY_RESULT_BACKEND", "redis://127.0.0.1:6379/15")
os.environ.setdefault("MIRRORLAB_DATA_DIR", os.path.join(tempfile.gettempdir(), "mirrorlab-test-data"))

# ---- Path roots (issue 17, common/path_rules.py): the tests keep their models and datasets under pytest's
# temporary folders (tmp_path, tiny_model_dir), so pytest's base temp folder is the shared model root and the
# import root; set in the environment, so the Celery worker subprocesses of tests/workers inherit it.
import getpass  # noqa: E402

try:
    PYTEST_USER = getpass.getuser()
except (OSError, KeyError):  # pytest's own fallback (_pytest.tmpdir.get_user)
    PYTEST_USER = "unknown"
PYTEST_TEMP_ROOT = os.path.join(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir(),
                                f"pytest-of-{PYTEST_USER}")
os.environ.setdefault("MIRRORLAB_MODEL_ROOTS", PYTEST_TEMP_ROOT)
os.environ.setdefault("MIRRORLAB_IMPORT_ROOTS", PYTEST_TEMP_ROOT)
# ---- end of the path roots

from webapp.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

OFFER_TEST_ONLY_CHOICES = True  # the browser journey launches a noop-test run from the form
