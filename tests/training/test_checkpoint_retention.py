"""keep_last_checkpoints: which checkpoints go (a pure selection), how a folder goes (crash-safely), and the loop."""

from __future__ import annotations

import json
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
    saved(tmp_path, 1)
    saved(tmp_path, 3)
    in_the_way = checkpoint_dir(tmp_path, 1).with_name("iteration-000001.removing")
    in_the_way.write_text("a file, not a folder")  # rmtree leaves it; renaming a folder onto a file fails
    lines = []
    assert remove_checkpoints(tmp_path, [1], lines.append) == []
    assert len(lines) == 1 and "could not remove the checkpoint of iteration 1" in lines[0] and \
        "Not a directory" in lines[0]
    assert [path.name for path in complete_checkpoint_dirs(tmp_path)] == ["iteration-000001", "iteration-000003"]


# ---------------------------------------------------------------- the loop


RUN = dict(iterations=5, batch_size=2, samples_per_problem=2, max_response_tokens=8, warmup_sft_steps=2,
           warmup_sft_batch_size=2, warmup_sft_sequence_length=64, checkpoint_every_iterations=1,
           keep_last_checkpoints=2, stored_samples_per_iteration=0)


def train(paths, pinned=frozenset(), **changes):
    """(iterations reported, checkpoints reported, removals approved) of a run of RUN plus changes; the hooks
    approve every removal but those of `pinned`."""
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(8, seed=1)]
    iterations, checkpoints, removed = [], [], []

    def approve(candidates: list[int]) -> list[int]:
        if approved := [iteration for iteration in candidates if iteration not in pinned]:
            removed.append(approved)
        return approved

    hooks = TrainingHooks(on_iteration=lambda report: iterations.append(report.iteration),
                          on_checkpoint=lambda report: checkpoints.append(report.iteration),
                          approve_checkpoint_removals=approve)
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


def test_the_loop_keeps_old_checkpoints_when_the_hooks_cannot_tell(tmp_path):
    from training.loop import remove_old_checkpoints
    from training.types import PinnedCheckpointsUnknown, TrainingHooks

    for iteration in (1, 2, 3):
        saved(tmp_path, iteration)

    def unknown(candidates: list[int]) -> list[int]:
        raise PinnedCheckpointsUnknown("no answer")

    lines = []
    remove_old_checkpoints(tmp_path, 1, TrainingHooks(approve_checkpoint_removals=unknown, log=lines.append))
    assert len(complete_checkpoint_dirs(tmp_path)) == 3
    assert lines == ["keep_last_checkpoints: old checkpoints kept this time (no answer)"]


def test_the_loop_asks_for_the_candidates_and_deletes_only_the_approved_ones(tmp_path):
    from training.loop import remove_old_checkpoints
    from training.types import TrainingHooks

    for iteration in (0, 1, 2, 3, 4):
        saved(tmp_path, iteration)
    asked = []

    def approve(candidates: list[int]) -> list[int]:
        asked.append(candidates)
        assert len(complete_checkpoint_dirs(tmp_path)) == 5  # asked before any folder goes
        return [2]

    remove_old_checkpoints(tmp_path, 1, TrainingHooks(approve_checkpoint_removals=approve))
    assert asked == [[1, 2, 3]]  # candidates without pins: the hooks decide which stay
    assert [path.name for path in complete_checkpoint_dirs(tmp_path)] == \
        ["iteration-000000", "iteration-000001", "iteration-000003", "iteration-000004"]


def test_without_candidates_the_hooks_are_not_asked(tmp_path):
    from training.loop import remove_old_checkpoints
    from training.types import TrainingHooks

    saved(tmp_path, 0)
    saved(tmp_path, 1)
    remove_old_checkpoints(tmp_path, 1, TrainingHooks(approve_checkpoint_removals=pytest.fail))


def test_by_default_every_candidate_is_approved():
    from training.types import TrainingHooks

    assert TrainingHooks().approve_checkpoint_removals([1, 2]) == [1, 2]


# ---------------------------------------------------------------- under torchrun: rank 0 and the launcher


def answered(rank_0, candidates: list[int], reader, worker) -> list:
    """Rank 0 asks (in a thread, as it waits) while the launcher replays the events into the worker's hooks;
    returns [approved] or [the error rank 0 raised]."""
    import threading
    import time

    outcome = []

    def ask() -> None:
        try:
            outcome.append(rank_0.approve_checkpoint_removals(candidates))
        except Exception as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    thread = threading.Thread(target=ask)
    thread.start()
    deadline = time.monotonic() + 10
    while thread.is_alive() and time.monotonic() < deadline:
        reader.replay(worker)
        time.sleep(0.05)
    thread.join()
    return outcome


def test_rank_0_removes_what_the_launcher_approved_in_its_answer_to_its_request(tmp_path):
    from training.torchrun.events import EventReader, file_hooks
    from training.types import CheckpointReport, TrainingHooks

    events, answers = tmp_path / "events.jsonl", tmp_path / "removals.json"
    rank_0 = file_hooks(events, tmp_path / "stop", answers)
    rank_0.on_checkpoint(CheckpointReport(iteration=3, path=tmp_path, size_bytes=1))
    seen, asked = [], []

    def approve(candidates: list[int]) -> list[int]:
        asked.append((list(seen), candidates))
        return [1]

    worker = TrainingHooks(on_checkpoint=lambda report: seen.append(report.iteration),
                           approve_checkpoint_removals=approve)
    reader = EventReader(events, answers)
    assert answered(rank_0, [1, 2], reader, worker) == [[1]]
    assert asked == [([3], [1, 2])]  # asked once, after the newest checkpoint's row was written
    assert json.loads(answers.read_text()) == {"request": 2, "approved": [1]}
    assert answered(rank_0, [2], reader, TrainingHooks()) == [[2]]  # the next request has the next number
    assert json.loads(answers.read_text()) == {"request": 3, "approved": [2]}


def test_rank_0_keeps_everything_when_the_worker_cannot_tell(tmp_path):
    from training.torchrun.events import EventReader, file_hooks
    from training.types import PinnedCheckpointsUnknown, TrainingHooks

    events, answers = tmp_path / "events.jsonl", tmp_path / "removals.json"

    def unknown(candidates: list[int]) -> list[int]:
        raise PinnedCheckpointsUnknown("the database is down")

    outcome = answered(file_hooks(events, tmp_path / "stop", answers), [1], EventReader(events, answers),
                       TrainingHooks(approve_checkpoint_removals=unknown))
    assert len(outcome) == 1 and isinstance(outcome[0], PinnedCheckpointsUnknown)
    assert str(outcome[0]) == "the database is down"
    assert json.loads(answers.read_text()) == {"request": 1, "unknown": "the database is down"}


def test_rank_0_does_not_take_an_answer_to_another_request(tmp_path):
    from training.torchrun.events import removals_answer
    from training.types import PinnedCheckpointsUnknown

    answers = tmp_path / "removals.json"
    answers.write_text(json.dumps({"request": 1, "approved": [1]}))  # an earlier request's answer
    with pytest.raises(PinnedCheckpointsUnknown, match="did not answer removal request 2"):
        removals_answer(answers, 2, wait_seconds=0.3)
    with pytest.raises(PinnedCheckpointsUnknown):
        removals_answer(tmp_path / "nothing.json", 1, wait_seconds=0.0)  # no answer at all
    assert removals_answer(answers, 1, wait_seconds=0.0) == [1]


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
             TrainingHooks(approve_checkpoint_removals=lambda iterations: removed.append(iterations) or iterations))
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


def test_the_warm_up_steps_reach_the_launcher_every_ten_steps_and_at_the_last(tmp_path):
    from training.torchrun.events import EventReader, file_hooks
    from training.types import TrainingHooks

    events = tmp_path / "events.jsonl"
    rank_0 = file_hooks(events, tmp_path / "stop", tmp_path / "removals.json")
    for step in range(1, 26):
        rank_0.on_warmup_step(step, 25, 1.0 / step)
    seen = []
    reader = EventReader(events, tmp_path / "removals.json")
    reader.replay(TrainingHooks(on_warmup_step=lambda *step: seen.append(step)))
    assert seen == [(10, 25, 0.1), (20, 25, 0.05), (25, 25, 0.04)]
