"""Settings helpers: DATABASE_URL parsing and typed environment readers."""

import json
import os
import subprocess
import sys

import pytest

from webapp.env import envbool, envint, parse_database_url


def test_postgres_urls_become_django_settings():
    settings = parse_database_url("postgres://me:p%40ss@db.local:5433/lab")
    assert settings["ENGINE"] == "django.db.backends.postgresql"
    assert (settings["USER"], settings["PASSWORD"], settings["HOST"], settings["PORT"], settings["NAME"]) == (
        "me", "p@ss", "db.local", "5433", "lab")


def test_sqlite_urls_keep_relative_and_absolute_paths():
    assert parse_database_url("sqlite:///data/x.sqlite3")["NAME"] == "data/x.sqlite3"
    assert parse_database_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"


def test_an_unknown_database_scheme_is_refused():
    with pytest.raises(ValueError, match="unsupported scheme 'mysql'"):
        parse_database_url("mysql://root@localhost/test")


def test_typed_readers(monkeypatch):
    monkeypatch.setenv("FLAG", "yes")
    monkeypatch.setenv("COUNT", "12")
    assert envbool("FLAG", False) is True and envint("COUNT", 1) == 12 and envint("MISSING", 7) == 7
    monkeypatch.setenv("FLAG", "perhaps")
    with pytest.raises(ValueError, match="FLAG='perhaps'"):
        envbool("FLAG", False)


def test_the_web_server_and_task_module_never_import_heavy_libraries(tmp_path):
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='webapp.settings'; django.setup(); "
            "import webapp.urls, webapp.api_urls, workers.tasks, sys; "
            "from django.urls import get_resolver; get_resolver().url_patterns; "
            "print([name for name in ('torch', 'vllm', 'megatron', 'transformers') if name in sys.modules])")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "DATABASE_URL": "sqlite:////tmp/mirrorlab-import.sqlite3",
                                 "CELERY_BROKER_URL": "filesystem://", "MIRRORLAB_DATA_DIR": str(tmp_path)})
    assert output.stdout.strip() == "[]"


def test_the_on_disk_broker_keeps_all_its_folders_in_the_data_dir(tmp_path):
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='webapp.settings'; django.setup(); "
            "from django.conf import settings; import json; "
            "print(json.dumps(settings.CELERY_BROKER_TRANSPORT_OPTIONS))")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "CELERY_BROKER_URL": "filesystem://",
                                 "MIRRORLAB_DATA_DIR": str(tmp_path)})
    folders = json.loads(output.stdout)
    for option in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert folders[option].startswith(str(tmp_path)), option
