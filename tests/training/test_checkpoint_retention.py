"""keep_last_checkpoints: which checkpoints go (a pure selection), how a folder goes (crash-safely), and the loop."""

from __future__ import annotations

import os

import pytest

from training.checkpoint import (
    STATE_FILE, checkpoint_dir, complete_checkpoint_dirs, latest_checkpoint, remove_checkpoints,
    remove_unfinished_saves,
)
from training.checkpoint_retention import checkpoints_to_remove
from training.config.resumable import RESUMABLE_KNOBS


# ---------------------------------------------------------------- the selection


def test_keep_0_removes_nothing():
    assert checkpoints_to_remove([0, 10, 20, 30], keep_last=0, pinned=set()) == []


def test_it_keeps_the_newest_n_and_the_warm_up():
    assert checkpoints_to_remove([0, 10, 20, 30, 40], keep_last=2, pinned=set()) == [10, 20]


def test_n_1_keeps_the_warm_up_and_the_newest_only():
    assert checkpoints_to_remove([0, 1, 2, 3], keep_last=1, pinned=set()) == [1, 2]


def test_pinned_iterations_stay_and_do_not_count_towards_n():
    assert checkpoints_to_remove([0, 10, 20, 30, 40], keep_last=2, pinned={10}) == [20]
    assert checkpoints_to_remove([10, 20, 30], keep_last=1, pinned={20, 99}) == [10]  # 99: not saved, ignored


def test_a_run_without_warm_up_keeps_its_newest_and_order_does_not_matter():
    assert checkpoints_to_remove([3, 1, 2, 2], keep_last=1, pinned=set()) == [1, 2]
    assert checkpoints_to_remove([], keep_last=3, pinned=set()) == []
    assert checkpoints_to_remove([5], keep_last=1, pinned=set()) == []


def test_the_knob_may_change_on_resume():
    assert "keep_last_checkpoints" in RESUMABLE_KNOBS


# ---------------------------------------------------------------- removing folders


def saved(output_dir, iteration: int) -> None:
    folder = checkpoint_dir(output_dir, iteration)
    (folder / "rank_state").mkdir(parents=True)
    (folder / STATE_FILE).write_bytes(b"state")
    (folder / "rank_state" / "rank-0.pt").write_bytes(b"rank")


def test_a_removed_checkpoint_goes_with_its_rank_state_and_leaves_nothing(tmp_path):
    for iteration in (1, 2, 3):
        saved(tmp_path, iteration)
    lines = []
    assert remove_checkpoints(tmp_path, [1, 2], lines.append) == [1, 2]
    assert sorted(path.name for path in (tmp_path / "checkpoints").iterdir()) == ["iteration-000003"]
    assert lines == []


def test_a_removal_cut_short_after_its_rename_is_ignored_by_resume_and_deleted_at_the_next_start(tmp_path):
    saved(tmp_path, 1)
    saved(tmp_path, 2)
    aside = checkpoint_dir(tmp_path, 2).with_name("iteration-000002.removing")
    os.rename(checkpoint_dir(tmp_path, 2), aside)  # what remove_checkpoints does first; then the process died
    assert [path.name for path in complete_checkpoint_dirs(tmp_path)] == ["iteration-000001"]
    assert [path.name for path in remove_unfinished_saves(tmp_path)] == ["iteration-000002.removing"]
    assert not aside.exists()


def test_a_folder_that_cannot_be_deleted_is_logged_and_the_others_still_go(tmp_path, monkeypatch):
    import shutil

    for iteration in (1, 2, 3):
        saved(tmp_path, iteration)
    real_rmtree = shutil.rmtree

    def failing_rmtree(path, *args, **kwargs):
        if str(path).endswith("iteration-000001.removing") and not kwargs.get("ignore_errors"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", failing_rmtree)
    lines = []
    assert remove_checkpoints(tmp_path, [1, 2], lines.append) == [1, 2]  # 1 is gone for resuming all the same
    assert len(lines) == 1 and "iteration 1" in lines[0] and "Permission denied" in lines[0]
    assert [path.name for path in complete_checkpoint_dirs(tmp_path)] == ["iteration-000003"]


def test_a_folder_that_cannot_be_renamed_stays_and_is_not_reported(tmp_path):
    saved(tmp_path, 3)
    lines = []
    assert remove_checkpoints(tmp_path, [1], lines.append) == []  # no folder 1: the rename fails
    assert "could not remove the checkpoint of iteration 1" in lines[0]


# ---------------------------------------------------------------- the loop


RUN = dict(iterations=5, batch_size=2, samples_per_problem=2, max_response_tokens=8, warmup_sft_steps=2,
           warmup_sft_batch_size=2, warmup_sft_sequence_length=64, checkpoint_every_iterations=1,
           keep_last_checkpoints=2, stored_samples_per_iteration=0)


def train(paths, pinned=frozenset(), **changes):
    """(iterations reported, checkpoints reported, removals reported) of a run of RUN plus changes."""
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(8, seed=1)]
    iterations, checkpoints, removed = [], [], []
    hooks = TrainingHooks(on_iteration=lambda report: iterations.append(report.iteration),
                          on_checkpoint=lambda report: checkpoints.append(report.iteration),
                          pinned_checkpoints=lambda: set(pinned), on_checkpoints_removed=removed.append)
    run(parse_config(RLConfig, {**RUN, **changes}), records, paths, hooks)
    return iterations, checkpoints, removed


def saved_iterations(paths) -> list[int]:
    return [int(folder.name.removeprefix("iteration-")) for folder in complete_checkpoint_dirs(paths.output_dir)]


@pytest.mark.slow
def test_keep_last_2_over_5_iterations_keeps_the_warm_up_and_the_newest_two_and_resumes(run_paths):
    iterations, checkpoints, removed = train(run_paths)
    assert iterations == [1, 2, 3, 4, 5] and checkpoints == [0, 1, 2, 3, 4, 5]
    assert saved_iterations(run_paths) == [0, 4, 5]
    assert sorted(path.name for path in (run_paths.output_dir / "checkpoints").iterdir()) == \
        ["iteration-000000", "iteration-000004", "iteration-000005"]  # no .removing left behind
    assert removed == [[1], [2], [3]]  # one removal per save, once a third checkpoint after the warm-up exists
    assert latest_checkpoint(run_paths.output_dir).iteration == 5
    iterations, checkpoints, removed = train(run_paths, iterations=6)  # resumed: from 5, not from scratch
    assert iterations == [6] and checkpoints == [6] and removed == [[4]]
    assert saved_iterations(run_paths) == [0, 5, 6]


@pytest.mark.slow
def test_a_pinned_checkpoint_survives(run_paths):
    _, _, removed = train(run_paths, pinned={2}, iterations=4, warmup_sft_steps=0)
    assert saved_iterations(run_paths) == [2, 3, 4]
    assert removed == [[1]]


def test_the_loop_keeps_old_checkpoints_when_the_pins_are_unknown(tmp_path):
    from training.loop import remove_old_checkpoints
    from training.types import PinnedCheckpointsUnknown, TrainingHooks

    for iteration in (1, 2, 3):
        saved(tmp_path, iteration)

    def unknown() -> set[int]:
        raise PinnedCheckpointsUnknown("no answer")

    lines, removed = [], []
    remove_old_checkpoints(tmp_path, 1, TrainingHooks(pinned_checkpoints=unknown, log=lines.append,
                                                      on_checkpoints_removed=removed.append))
    assert len(complete_checkpoint_dirs(tmp_path)) == 3 and removed == []
    assert lines == ["keep_last_checkpoints: old checkpoints kept this time (no answer)"]
    remove_old_checkpoints(tmp_path, 1, TrainingHooks(pinned_checkpoints=lambda: {1},
                                                      on_checkpoints_removed=removed.append))
    assert removed == [[2]]


# ---------------------------------------------------------------- under torchrun: rank 0 and the launcher


def test_rank_0_takes_the_pins_the_launcher_gave_after_its_newest_checkpoint(tmp_path):
    from training.torchrun.events import EventReader, file_hooks, write_pinned
    from training.types import CheckpointReport, TrainingHooks

    events, pinned = tmp_path / "events.jsonl", tmp_path / "pinned.json"
    rank_0 = file_hooks(events, tmp_path / "stop", pinned)
    write_pinned(pinned, {9}, events_replayed=0)  # the launcher's answer before the run's first event
    rank_0.on_checkpoint(CheckpointReport(iteration=2, path=tmp_path, size_bytes=1))
    reports, removals = [], []
    reader = EventReader(events)
    reader.replay(TrainingHooks(on_checkpoint=reports.append, on_checkpoints_removed=removals.append))
    assert reader.replayed == 1 and [report.iteration for report in reports] == [2]
    write_pinned(pinned, {2, 9}, events_replayed=reader.replayed)  # asked after the checkpoint's row was written
    assert rank_0.pinned_checkpoints() == {2, 9}
    rank_0.on_checkpoints_removed([1])
    reader.replay(TrainingHooks(on_checkpoints_removed=removals.append))
    assert removals == [[1]] and reader.replayed == 2


def test_rank_0_does_not_take_pins_older_than_its_newest_checkpoint(tmp_path):
    from training.torchrun.events import event_writer, pinned_after, write_pinned
    from training.types import PinnedCheckpointsUnknown

    write = event_writer(tmp_path / "events.jsonl")
    write("checkpoint", report={})
    write_pinned(tmp_path / "pinned.json", {9}, events_replayed=0)  # given before that checkpoint was recorded
    with pytest.raises(PinnedCheckpointsUnknown, match="after event 1"):
        pinned_after(tmp_path / "pinned.json", write.written, wait_seconds=0.3)
    with pytest.raises(PinnedCheckpointsUnknown):
        pinned_after(tmp_path / "nothing.json", 0, wait_seconds=0.0)  # no answer at all


# ---------------------------------------------------------------- the megatron backend: the same folders


def megatron_worker(rank: int, port: int, model_dir: str, out_dir: str) -> None:
    """bf16 Megatron (each checkpoint holds rank_state) with keep_last_checkpoints 1 over 3 iterations, then 4."""
    from pathlib import Path

    from tests.training.test_megatron_backend import start_rank

    start_rank(rank, 1, port)
    import torch

    from common.knobs import parse_config
    from training import loop
    from training.config import RLConfig
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(8, seed=1)]
    paths = RunPaths(Path(out_dir) / "run", Path(out_dir) / "models")
    settings = {"model": model_dir, "trainer_backend": "megatron", "megatron_precision": "bf16", "batch_size": 2,
                "samples_per_problem": 2, "max_response_tokens": 8, "checkpoint_every_iterations": 1,
                "keep_last_checkpoints": 1, "stored_samples_per_iteration": 0}
    removed, resumed = [], []
    loop.run(parse_config(RLConfig, {**settings, "iterations": 3}), records, paths,
             TrainingHooks(on_checkpoints_removed=removed.append))
    left = sorted(str(path.relative_to(paths.output_dir)) for path in (paths.output_dir / "checkpoints").rglob("*"))
    loop.run(parse_config(RLConfig, {**settings, "iterations": 4}), records, paths,
             TrainingHooks(on_iteration=lambda report: resumed.append(report.iteration)))
    torch.save({"removed": removed, "left": left, "resumed": resumed}, Path(out_dir) / "retention.pt")


@pytest.mark.slow
def test_megatron_checkpoints_go_with_their_rank_state(warm_model_dir, tmp_path):
    import torch

    from tests.training.test_distributed import free_port

    torch.multiprocessing.spawn(megatron_worker, args=(free_port(), str(warm_model_dir), str(tmp_path)), nprocs=1)
    result = torch.load(tmp_path / "retention.pt", weights_only=False)
    assert result["removed"] == [[1], [2]]
    folders = [name for name in result["left"] if "/" not in name.removeprefix("checkpoints/")]
    assert folders == ["checkpoints/iteration-000003"]  # nothing else: no rank_state of 1 or 2 left behind
    assert "checkpoints/iteration-000003/rank_state/rank-0.pt" in result["left"]
    assert result["resumed"] == [4]
