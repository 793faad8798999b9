"""Typed readers of environment settings and the DATABASE_URL parser."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit


def envstr(name: str, default: str) -> str:
    """A string setting, or the default when unset or empty."""
    return os.environ.get(name) or default


def envbool(name: str, default: bool) -> bool:
    """A boolean setting: 1/true/yes/on or 0/false/no/off."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={raw!r}: expected true or false")


def envint(name: str, default: int) -> int:
    """An integer setting."""
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a whole number") from None


def envlist(name: str, default: list[str]) -> list[str]:
    """A comma-separated list setting."""
    raw = os.environ.get(name, "").strip()
    return [item.strip() for item in raw.split(",") if item.strip()] if raw else default


def parse_database_url(url: str) -> dict:
    """Django DATABASES entry for sqlite:///path or postgres://user:pass@host:port/name."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if url.startswith("sqlite:////"):
            path = "/" + path.lstrip("/")
        else:
            path = path.lstrip("/")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(Path(path)), "OPTIONS": {"timeout": 30}}
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 60,
        }
    raise ValueError(f"DATABASE_URL={url!r}: unsupported scheme {parts.scheme!r} (use sqlite:/// or postgres://)")
