"""Which checkpoint folders count, and in which order: by iteration number, not by name."""

from __future__ import annotations

from training.checkpoint import STATE_FILE, checkpoint_dir, complete_checkpoint_dirs


def test_checkpoints_sort_by_iteration_and_half_written_ones_do_not_count(tmp_path):
    for iteration in (999_999, 1_000_000, 2):
        folder = checkpoint_dir(tmp_path, iteration)
        folder.mkdir(parents=True)
        (folder / STATE_FILE).write_bytes(b"")
    (tmp_path / "checkpoints" / "iteration-000003.partial").mkdir()  # a crash mid-save
    (tmp_path / "checkpoints" / "iteration-000004").mkdir()  # no state file: not complete
    names = [folder.name for folder in complete_checkpoint_dirs(tmp_path)]
    assert names == ["iteration-000002", "iteration-999999", "iteration-1000000"]  # as text, 1000000 sorted first
    assert complete_checkpoint_dirs(tmp_path / "nowhere") == []


def test_the_staging_folders_of_interrupted_saves_are_removed(tmp_path):
    from training.checkpoint import checkpoint_dir, remove_unfinished_saves

    for name in ("iteration-000002.partial", "iteration-000004.rank_state", "iteration-000003"):
        (tmp_path / "checkpoints" / name).mkdir(parents=True)
    removed = remove_unfinished_saves(tmp_path)
    assert [path.name for path in removed] == ["iteration-000002.partial", "iteration-000004.rank_state"]
    assert sorted(path.name for path in (tmp_path / "checkpoints").iterdir()) == ["iteration-000003"]
    assert checkpoint_dir(tmp_path, 3).is_dir() and remove_unfinished_saves(tmp_path / "nothing-here") == []
