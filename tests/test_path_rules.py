"""The path rule itself (common/path_rules.py, issue 17): resolved paths, the deepest folder decides, the same words
whether a refused path exists or not."""

from __future__ import annotations

import pytest

from common.path_rules import PathRefused, PathRules, allowed_path, checked_name_or_path, checked_path


@pytest.fixture
def rules(tmp_path) -> PathRules:
    """Shared root tmp/shared; the app's data tmp/shared/app (private) holding the checkpoints, one run its own."""
    for folder in ("shared/models", "shared/app/checkpoints/run-1", "shared/app/checkpoints/run-2",
                   "shared/app/open", "shared-evil"):
        (tmp_path / folder).mkdir(parents=True)
    app = tmp_path / "shared" / "app"
    return PathRules(allowed_roots=(tmp_path / "shared", app / "open"), own_folders=(app / "checkpoints" / "run-1",),
                     project_storage=(app / "checkpoints",), private_roots=(app,), roots_setting="MODEL_ROOTS")


@pytest.mark.parametrize("relative, allowed", [
    ("shared/models", True), ("shared", True), ("shared/app/checkpoints/run-1", True),
    ("shared/app/checkpoints/run-1/iteration-3", True),  # not yet written: decided on the path alone
    ("shared/app/checkpoints/run-2", False),  # another project's run, though under an allowed root
    ("shared/app/checkpoints", False), ("shared/app", False), ("shared/app/database.sqlite3", False),
    ("shared/app/open/model", True),  # an allowed root deeper than the private folder opens it
    ("shared-evil", False),  # a sibling whose name starts like a root is not inside it
    ("shared/models/../../shared-evil", False), ("shared/models/../app/checkpoints/run-2", False),
])
def test_the_deepest_folder_containing_the_resolved_path_decides(rules, tmp_path, relative, allowed):
    resolved = allowed_path(str(tmp_path / relative), rules)
    assert (resolved is not None) is allowed
    if allowed:
        assert resolved == str((tmp_path / relative).resolve())


def test_a_symlink_is_judged_by_its_target(rules, tmp_path):
    (tmp_path / "shared" / "models" / "to-run-2").symlink_to(tmp_path / "shared/app/checkpoints/run-2")
    (tmp_path / "shared" / "models" / "to-run-1").symlink_to(tmp_path / "shared/app/checkpoints/run-1")
    assert allowed_path(str(tmp_path / "shared/models/to-run-2"), rules) is None
    own = str(tmp_path / "shared/app/checkpoints/run-1")
    assert allowed_path(str(tmp_path / "shared/models/to-run-1"), rules) == own


def test_a_refusal_reads_the_same_whether_the_path_exists_or_not(rules):
    with pytest.raises(PathRefused) as existing:
        checked_path("/etc", rules, "model")
    with pytest.raises(PathRefused) as missing:
        checked_path("/etx", rules, "model")
    assert existing.value.field == "model"
    assert existing.value.reason.replace("/etc", "<path>") == missing.value.reason.replace("/etx", "<path>")


def test_a_relative_path_is_refused(rules):
    with pytest.raises(PathRefused, match=r"^path: 'models/a/b' is not an absolute path: give an absolute path "
                                          r"inside the project's own checkpoint folders or under MODEL_ROOTS"):
        checked_path("models/a/b", rules, "path")


@pytest.mark.parametrize("name", ["tiny", "org/name", "Qwen/Qwen2.5-0.5B-Instruct", "gpt2"])
def test_names_that_are_no_paths_are_kept_as_given(rules, name):
    assert checked_name_or_path(name, rules, "model") == name


@pytest.mark.parametrize("name", ["/etc", "./model", "../model", "~/model", "a/b/c", ".", ".."])
def test_names_that_read_as_paths_are_checked(rules, name):
    with pytest.raises(PathRefused):
        checked_name_or_path(name, rules, "model")


@pytest.mark.parametrize("name", ["tiny model", "\u043c\u043e\u0434\u0435\u043b\u044c", "a--b", "-tiny"])
def test_names_that_cannot_be_a_preset_or_hub_id_are_refused_at_once(rules, name):
    """Before, the run was queued and failed on a worker; the CLI refused the same name when loading."""
    with pytest.raises(PathRefused, match=r"^model: '.*' is neither a path nor a model name"):
        checked_name_or_path(name, rules, "model")
