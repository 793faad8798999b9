"""Which local paths a project may name: the one rule for models, checkpoints and dataset imports (no Django).

In the web app a model is named by a preset, a hub id or an absolute path, and a dataset by a hub id or an
absolute path. A path is resolved first (os.path.realpath, so `..` and symlinks cannot escape) and is
allowed only when the resolved path lies
- inside one of the project's own folders (its runs' and variants' checkpoint folders), or
- under an allowed root (the deployment's shared model or import folders),
and never inside another project's storage: inside the shared checkpoints folder only the project's own
folders count, whatever the allowed roots; inside the app's private folders (its code, its data folder)
only an allowed root that lies deeper still opens a path. The deepest folder containing the path decides.
A refusal names the field and the allowed forms, and reads the same whether the path exists or not.
The caller passes the folders in (webapp.path_policy from the settings); this module reads no settings.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable

HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")  # org/name
PATH_PREFIXES = ("/", "./", "../", "~")  # a name starting so is a path, never a hub id


def looks_like_path(name: str) -> bool:
    """/x, ./x, ../x, ~x, or a path with a separator that is not a hub id's org/name."""
    if name in (".", "..") or name.startswith(PATH_PREFIXES):
        return True
    return os.sep in name and not HUB_ID.fullmatch(name)


class PathRefused(ValueError):
    """A path (or a name read as one) that the project may not use; `field` is the input that named it."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def _resolved(folders: Iterable[str | os.PathLike]) -> tuple[str, ...]:
    return tuple(os.path.realpath(folder) for folder in folders)


@dataclass(frozen=True)
class PathRules:
    """The folders one project's paths are checked against; every folder is resolved (realpath) on creation."""

    allowed_roots: tuple[str, ...] = ()  # shared folders any project may name
    own_folders: tuple[str, ...] = ()  # the project's own storage (its runs' and variants' checkpoints)
    project_storage: tuple[str, ...] = ()  # folders holding every project's files: only own folders inside count
    private_roots: tuple[str, ...] = ()  # the app's code and data: closed unless an allowed root lies deeper
    roots_setting: str = "the allowed roots"  # the setting that lists allowed_roots, for messages
    local_forms: str = ""  # what else the input accepts, for messages ("a preset (tiny), a hub id (org/name)")

    def __post_init__(self) -> None:
        for name in ("allowed_roots", "own_folders", "project_storage", "private_roots"):
            object.__setattr__(self, name, _resolved(getattr(self, name)))

    def allowed_forms(self) -> str:
        """The forms a refused input may take instead, with the allowed roots listed."""
        roots = ", ".join(self.allowed_roots) or "none set"
        own = "inside the project's own checkpoint folders or " if self.own_folders or self.project_storage else ""
        prefix = f"{self.local_forms}, or " if self.local_forms else ""
        return f"give {prefix}an absolute path {own}under {self.roots_setting} ({roots})"


def is_within(path: str, folder: str) -> bool:
    """The path is the folder or lies inside it (both resolved)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _deepest(path: str, folders: tuple[str, ...]) -> int:
    """Depth (number of components) of the deepest folder containing the path; -1 when none does."""
    return max((len(folder.rstrip(os.sep).split(os.sep)) for folder in folders if is_within(path, folder)),
               default=-1)


def allowed_path(path: str, rules: PathRules) -> str | None:
    """The resolved absolute path when the rules allow it, else None; decided on the resolved path alone."""
    resolved = os.path.realpath(path)
    if any(is_within(resolved, folder) for folder in rules.own_folders):
        return resolved
    if any(is_within(resolved, folder) for folder in rules.project_storage):
        return None
    allowed = _deepest(resolved, rules.allowed_roots)
    return resolved if allowed >= 0 and allowed > _deepest(resolved, rules.private_roots) else None


def checked_path(path: str, rules: PathRules, field_name: str) -> str:
    """An absolute path the rules allow, resolved; PathRefused (the same words whether it exists or not)."""
    if not os.path.isabs(path):
        raise PathRefused(field_name, f"'{path}' is not an absolute path: {rules.allowed_forms()}")
    resolved = allowed_path(path, rules)
    if resolved is None:
        raise PathRefused(field_name, f"'{path}' is not a path this project may use: {rules.allowed_forms()}")
    return resolved


def checked_name_or_path(name: str, rules: PathRules, field_name: str) -> str:
    """A name that reads as a path (/x, ./x, ~x, a/b/c) checked and resolved; any other name (a preset, a hub id
    org/name) as given, when it can be one (Hugging Face's rules for a repository id: "tiny model" cannot)."""
    if looks_like_path(name):
        return checked_path(name, rules, field_name)
    from common.hub_errors import invalid_hub_id

    if reason := invalid_hub_id(name):
        raise PathRefused(field_name, f"'{name}' is neither a path nor a model name (a preset such as tiny, or a "
                                      f"hub id org/name): {reason}")
    return name


def refuse_relative_lookup(name: str, rules: PathRules, field_name: str, exists=os.path.lexists) -> None:
    """On a worker: a name kept as a hub id must not name a file or folder relative to the working directory,
    which the loaders would read instead of asking the hub."""
    if name and not os.path.isabs(name) and exists(name):
        raise PathRefused(field_name, f"'{name}' names a file or folder relative to the worker's working "
                                      f"directory, not a hub id: {rules.allowed_forms()}")
