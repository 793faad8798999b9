"""A PostgreSQL database that a benchmark creates on 127.0.0.1 and drops when it is done."""

from __future__ import annotations

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def create_database(database: str) -> None:
    """Create `database` afresh (dropping a leftover of an earlier run)."""
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'drop database if exists "{database}" with (force)')
        admin.execute(f'create database "{database}"')


def drop_database(database: str) -> None:
    """Close Django's connections (if Django is loaded) and drop `database`."""
    import sys

    import psycopg

    if "django.db" in sys.modules:
        from django.db import connections

        connections.close_all()
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'drop database if exists "{database}" with (force)')
