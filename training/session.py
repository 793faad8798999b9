"""Everything one RL run holds between iterations, built fresh or restored from a checkpoint."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from common.knobs import config_to_dict
from training import distributed
from training.checkpoint import (
    finish_counts_for_rank, latest_checkpoint, read_rank_state, remove_unfinished_saves, replay_buffer_for_rank,
    replay_buffer_state, restore_rng, rng_state, save_checkpoint, write_rank_state,
)
from training.config import RLConfig
from training.config.run import OVERLAP_NEEDS_ONE_PROCESS
from training.context_window import check_session_prompts
from training.models.loading import load_model, load_tokenizer, loaded_model_window, resolve_model_path
from training.models.memory_fit import check_training_fits, free_gpu_bytes, local_process_count
from training.prompting import prompt_ids
from training.resume_config import check_resume, prompts_fingerprint
from grading.cot_judge import CotJudge
from grading.cot_judge.modes import RULE
from training.rewards import CorrectnessRewards
from training.rollout import rollout_engines
from training.rollout.base import EngineSettings
from training.rollouts_ahead import RolloutsAhead
from training.sampling import ProblemSampler, make_sampler
from training.sft import warmup_sft
from training.tasks.arithmetic import warmup_traces
from training.backends import trainer_classes
from training.trajectories import ReplayBuffer
from training.types import CheckpointReport, PromptRecord, RunPaths, TrainingHooks, images_refusal

WARMUP_TRACES = 20000
# Share of the warm-up traces written step by step (the rest answer directly): the warmed-up policy answers directly
# half the time, so RL has a choice to make (docs/demo-design.md)
WARMUP_STEP_BY_STEP_SHARE = 0.5


@dataclass
class RunSession:
    config: RLConfig
    records: Sequence[PromptRecord]
    prompts: list[tuple[int, ...]]
    tokenizer: object
    trainer: object  # a trainer_classes entry: update(batch, rewards) -> metrics; `model`, the HF weights
    engine: object
    sampler: ProblemSampler
    buffer: ReplayBuffer
    numpy_rng: np.random.Generator
    paths: RunPaths
    next_iteration: int
    context: distributed.DistributedContext = distributed.SINGLE_PROCESS
    rewards: CorrectnessRewards | None = None  # the run's grader, closed with the session
    ahead: RolloutsAhead = field(default_factory=RolloutsAhead)  # overlap_rollouts: the next batch, in the making

    @property
    def model(self):
        return self.trainer.model

    @cached_property
    def records_fingerprint(self) -> str:
        """The prompts' hash each checkpoint keeps (the records do not change during a session: hashed once)."""
        return prompts_fingerprint(self.records)

    def save(self, iteration: int) -> CheckpointReport | None:
        """Every rank calls it; the main rank writes (with all ranks' replay buffers and the rollouts made ahead)
        and returns the report."""
        self.ahead.wait()  # the rollouts made ahead change the buffer, the sampler and its generator
        rank_buffers = distributed.all_gather_objects((self.buffer.state_dict(), asdict(self.buffer.finish_counts)))
        rank_state = self.trainer.rank_state()
        if rank_state is not None:
            write_rank_state(self.paths.output_dir, iteration, self.context.rank, rank_state)
        distributed.barrier()  # every rank's state is written before the main rank moves it into the checkpoint
        report = None
        if self.context.is_main:
            state = {"rng": rng_state(self.numpy_rng), "sampler": self.sampler.state_dict(),
                     **replay_buffer_state(*zip(*rank_buffers)), "rollouts_ahead": self.ahead.state_dict(),
                     "prompts_fingerprint": self.records_fingerprint}
            report = save_checkpoint(self.paths.output_dir, iteration, self.model, self.tokenizer,
                                     config_to_dict(self.config, deployment=False), state)
        distributed.barrier()  # nobody goes on (or resumes) before the checkpoint is complete
        return report

    def close(self) -> None:
        try:
            self.ahead.close()
            if self.engine is not None:
                self.engine.close()
        finally:
            if self.rewards is not None:
                self.rewards.close()


def seed_everything(seed: int) -> np.random.Generator:
    random.seed(seed)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def start_session(config: RLConfig, records: Sequence[PromptRecord], paths: RunPaths,
                  hooks: TrainingHooks) -> RunSession:
    """Resume from the run's newest checkpoint, or load the base model (and warm it up with SFT)."""
    if not records:
        raise ValueError("the prompt set is empty: add prompts before launching a run")
    with_images = [record.prompt_id for record in records if record.image]
    if with_images:
        raise ValueError(images_refusal(len(with_images), f"prompt {with_images[0]}"))
    context = distributed.current_context()
    if config.overlap_rollouts and context.world_size > 1:
        raise ValueError(f"overlap_rollouts {OVERLAP_NEEDS_ONE_PROCESS}; this run has {context.world_size}")
    numpy_rng = seed_everything(config.seed)
    if context.is_main and (leftovers := remove_unfinished_saves(paths.output_dir)):
        hooks.log(f"removed {len(leftovers)} checkpoint folder(s) an interrupted save or removal left: "
                  f"{', '.join(path.name for path in leftovers)}")
    resume = latest_checkpoint(paths.output_dir)
    check_same_checkpoint(resume.iteration if resume else None, paths)
    if resume:  # the same recipe and prompts as the checkpoint, or a clear refusal before anything loads
        resumed = check_resume(resume.path, resume.state, config, records)
        for name in (knob.name for knob in fields(config)):
            if getattr(resumed, name) != getattr(config, name):
                hooks.log(f"{name} stays {getattr(resumed, name)} as {resume.path.name} trained with it (the "
                          "checkpoint predates the knob)")
        config = resumed
    model_path = str(resume.path) if resume else resolve_model_path(config.model, paths.models_dir)
    tokenizer = load_tokenizer(model_path)
    prompts = [prompt_ids(r.problem, tokenizer) for r in records]
    # every prompt plus max_response_tokens fits the model's context window, or a clear refusal before anything runs
    prompt_lengths = {record.prompt_id: len(ids) for record, ids in zip(records, prompts)}
    check_session_prompts(config, loaded_model_window(model_path), prompt_lengths)
    check_model_fits(config, model_path)  # a model larger than memory: a clear refusal, not the OOM killer
    distributed.barrier()  # every rank has checked before any loads (a rank's load lowers what the next one sees)
    trainer = trainer_classes.get(config.trainer_backend)(load_model(model_path), config)
    sampler = make_sampler(config.sampling_strategy, records, config.curriculum_iterations,
                           hard_problems_by=config.hard_problems_by,
                           hard_pass_rate_threshold=config.hard_pass_rate_threshold)
    buffer = ReplayBuffer()
    if resume:
        hooks.log(f"resuming from {resume.path.name} (iteration {resume.iteration})")
        load_rank_state(trainer, resume.path, context.rank, hooks)
        restore_rng(resume.state["rng"], numpy_rng)
        sampler.load_state_dict(resume.state["sampler"])
        buffer.load_state_dict(replay_buffer_for_rank(resume.state, context.rank, context.world_size),
                               finish_counts_for_rank(resume.state, context.rank, context.world_size))
    session = RunSession(
        config=config, records=records, prompts=prompts,
        tokenizer=tokenizer, trainer=trainer, engine=None, sampler=sampler, buffer=buffer, numpy_rng=numpy_rng,
        paths=paths, next_iteration=resume.iteration + 1 if resume else 1, context=context,
        rewards=run_rewards(config, paths),
    )
    if resume:
        session.ahead.load_state_dict(resume.state.get("rollouts_ahead"))
        if config.overlap_rollouts and resume.iteration > 0 and resume.state.get("rollouts_ahead") is None:
            hooks.log(f"overlap_rollouts: the checkpoint of iteration {resume.iteration} holds no rollouts made "
                      "ahead (it ended its run), so the next iteration is rolled out by the current policy")
    if not resume and config.warmup_sft_steps > 0:
        run_warmup(session, hooks)
    session.engine = rollout_engines.get(config.rollout_engine)(session.model, tokenizer, model_path,
                                                                EngineSettings.of_run(config),
                                                                trainer=trainer)
    return session


def check_model_fits(config: RLConfig, model_path: str) -> None:
    """ModelTooLarge when the trainer's least memory need (from the weights' headers) exceeds what this machine
    or its GPU has free (not checked on the GPU beside a vLLM sidecar, whose memory may be freed for training)."""
    on_gpu = torch.cuda.is_available()
    gpu_free = free_gpu_bytes() if on_gpu and not config.vllm_sidecar_socket else None
    check_training_fits(model_path, config.trainer_backend, on_gpu, local_process_count(), gpu_free)


def load_rank_state(trainer, checkpoint: Path, rank: int, hooks: TrainingHooks) -> None:
    """Give the trainer its state from the checkpoint (bf16 Megatron: the fp32 main weights), saying when the
    checkpoint's state was written by another layout and the trainer goes on from the saved weights alone."""
    state = read_rank_state(checkpoint, rank)
    if state is not None and not trainer.load_rank_state(state):
        hooks.log(f"rank {rank}: the checkpoint's trainer state was written with another parallel layout; "
                  "going on from its saved weights (in bf16, rounded)")


def run_rewards(config: RLConfig, paths: RunPaths) -> CorrectnessRewards:
    """The run's grader; with a judge mode, the judge model loads here on the rollout engine ("vllm" when the run
    samples with in-process vLLM, else "torch") and is released with the rewards."""
    if config.grader_mode == RULE:
        return CorrectnessRewards(config.answer_extraction)
    from training.generation import ModelGenerator, text_generate

    engine = "vllm" if config.rollout_engine == "vllm" else "torch"
    generator = ModelGenerator(resolve_model_path(config.judge_model, paths.models_dir), engine, seed=config.seed)
    judge = CotJudge(text_generate(generator, config.judge_max_tokens, config.seed))
    return CorrectnessRewards(config.answer_extraction, grader_mode=config.grader_mode, judge=judge,
                              on_close=generator.close)


def run_warmup(session: RunSession, hooks: TrainingHooks) -> None:
    """Long-CoT warm-up SFT on synthetic traces, saved as checkpoint 0 so a resume skips it."""
    config = session.config
    traces = warmup_traces(WARMUP_TRACES, seed=config.seed, step_by_step_share=WARMUP_STEP_BY_STEP_SHARE)
    examples = [(problem.problem, response) for problem, response in traces]
    hooks.log(f"warm-up SFT: {config.warmup_sft_steps} steps on packed traces")
    report_every = max(1, config.warmup_sft_steps // 10)
    warmup_sft(session.model, session.tokenizer, examples, steps=config.warmup_sft_steps,
               batch_size=config.warmup_sft_batch_size, block_length=config.warmup_sft_sequence_length,
               learning_rate=config.warmup_sft_learning_rate, seed=config.seed,
               on_step=lambda step, loss: warmup_step(hooks, step, config.warmup_sft_steps, loss, report_every))
    distributed.broadcast_module(session.model)  # every rank warmed up alike; make the weights identical
    session.trainer.reload_from_model()  # a trainer with weights of its own (megatron) takes the warmed-up ones
    hooks.on_checkpoint(session.save(0))


def warmup_step(hooks: TrainingHooks, step: int, steps: int, loss: float, log_every: int) -> None:
    """Report a warm-up step to the hooks, and log it every `log_every` steps."""
    hooks.on_warmup_step(step, steps, loss)
    if step % log_every == 0:
        hooks.log(f"warm-up SFT step {step}: loss {loss:.3f}")


def check_same_checkpoint(iteration: int | None, paths: RunPaths) -> None:
    """Under torchrun every rank must resume from the same checkpoint (a shared output_dir)."""
    seen = distributed.all_gather_objects(iteration)
    if len(set(seen)) > 1:
        raise RuntimeError(f"ranks see different newest checkpoints in {paths.output_dir} (iterations by rank: "
                           f"{seen}); put output_dir on storage that every node shares")
