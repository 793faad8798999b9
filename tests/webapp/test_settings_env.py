"""Settings helpers: DATABASE_URL parsing and typed environment readers."""

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


def test_the_web_settings_never_import_torch():
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='webapp.settings'; django.setup(); "
            "import webapp.urls, sys; print('torch' in sys.modules)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "DATABASE_URL": "sqlite:////tmp/mirrorlab-import.sqlite3"})
    assert output.stdout.strip() == "False"
