"""Context limits are honest: a run whose prompts plus max_response_tokens exceed the model's context window is
refused with the numbers and the knob named (CLI, run start), never capped silently."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from common.knobs import ConfigError, parse_config
from training import context_window as cw
from training import session as session_module
from training.cli import main
from training.config import RLConfig
from training.models import loading, resolve
from training.types import PromptRecord, TrainingHooks

TOO_LONG = ("max_response_tokens (64) plus the longest prompt (2008 tokens, prompt p-17) exceeds the context window "
            "of 2048 tokens of model tiny; lower max_response_tokens to at most 40 or shorten the prompt")


def long_problem(tokens: int) -> str:
    """A problem whose prompt is `tokens` tokens for the tiny preset (plain template, 6 tokens, one per digit)."""
    return "1" * (tokens - 6)


def config(**knobs) -> RLConfig:
    return parse_config(RLConfig, {"trainer_backend": "noop-test", **knobs})


# --- the window, from a config.json or a preset ---

@pytest.mark.parametrize("hf_config, window", [
    ({"max_position_embeddings": 4096}, 4096),
    ({"n_positions": 1024}, 1024),  # GPT-2
    ({"seq_length": 8192, "max_position_embeddings": 32768}, 8192),  # several names: the smallest, as vLLM
    ({"text_config": {"max_position_embeddings": 2048}, "vision_config": {"image_size": 224}}, 2048),
    # rope scalings as vLLM 0.32 and the torch engine read them: YaRN configs name the stretched window already
    ({"max_position_embeddings": 32768,
      "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}, 32768),
    ({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 131072),
    ({"max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, 8192),
    ({"max_position_embeddings": 4096, "rope_parameters": {"rope_type": "linear", "factor": 2.0}}, 8192),
    ({"max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}, 4096),
    ({"hidden_size": 64}, None),
])
def test_the_window_is_read_from_a_hugging_face_config(hf_config, window):
    assert cw.config_window(hf_config) == window


def test_the_window_of_a_local_model_folder_is_its_config_json(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "max_position_embeddings": 4096}))
    assert cw.model_window(str(tmp_path)) == 4096
    assert cw.folder_window(tmp_path / "missing") is None


def test_preset_windows_are_known_without_creating_the_preset(tmp_path):
    assert cw.model_window("tiny", tmp_path) == 2048 and cw.model_window("tiny-vl", tmp_path) == 2048
    assert not any(tmp_path.iterdir())  # nothing created
    code = ("import sys, training.context_window; "
            "print([name for name in ('torch', 'transformers', 'django') if name in sys.modules])")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"


def test_the_preset_window_matches_the_created_model(tiny_model_dir):
    assert cw.folder_window(tiny_model_dir) == cw.PRESET_WINDOWS["tiny"] == 2048


def test_a_hub_id_with_no_local_files_has_an_unknown_window(monkeypatch):
    monkeypatch.setattr(resolve, "cached_hub_snapshot", lambda name: None)
    assert cw.model_window("some-org/some-model") is None
    assert cw.launch_context_errors(config(model="some-org/some-model", max_response_tokens=100000),
                                    {"1": "x"}, None) == {}


def test_the_effective_window_is_the_smaller_of_the_model_and_max_model_len():
    assert cw.effective_window(config(), 2048) == 2048
    assert cw.effective_window(config(max_model_len=1024), 2048) == 1024
    assert cw.effective_window(config(max_model_len=1024), None) == 1024
    assert cw.effective_window(config(), None) is None


# --- the messages ---

def test_a_prompt_plus_the_response_limit_over_the_window_names_knob_numbers_and_prompt():
    errors = cw.context_window_errors(config(max_response_tokens=64), 2048, {"p-1": 30, "p-17": 2008, "p-2": 500})
    assert errors == {"max_response_tokens": TOO_LONG}
    with pytest.raises(ValueError) as raised:
        cw.check_context_window(config(max_response_tokens=64), 2048, {"p-1": 30, "p-17": 2008})
    assert str(raised.value) == TOO_LONG


def test_a_run_that_fits_exactly_is_accepted():
    assert cw.context_window_errors(config(max_response_tokens=40), 2048, {"p-17": 2008}) == {}


def test_a_prompt_that_alone_fills_the_window_is_named_by_its_id():
    errors = cw.context_window_errors(config(max_response_tokens=64), 2048, {"a": 10, "b": 2100, "c": 2048})
    assert errors == {"prompt_set": "prompt b alone is 2100 tokens, which fills the context window of 2048 tokens "
                                    "of model tiny and leaves no room for a response (1 more prompt is too long "
                                    "too); shorten or remove it"}


def test_a_response_limit_that_fills_the_window_alone_is_named():
    errors = cw.context_window_errors(config(max_response_tokens=2048), 2048, None)
    assert errors == {"max_response_tokens": "max_response_tokens (2048) leaves no room for a prompt in the context "
                                             "window of 2048 tokens of model tiny; lower max_response_tokens below "
                                             "2048"}


def test_max_model_len_lowers_the_window_and_refuses_what_the_model_would_fit():
    lengths = {"p-3": 900}
    assert cw.context_window_errors(config(max_response_tokens=256), 2048, lengths) == {}
    errors = cw.context_window_errors(config(max_response_tokens=256, max_model_len=1024), 2048, lengths)
    assert errors == {"max_response_tokens": (
        "max_response_tokens (256) plus the longest prompt (900 tokens, prompt p-3) exceeds the context window of "
        "1024 tokens set by max_model_len (model tiny's own is 2048); lower max_response_tokens to at most 124, "
        "raise max_model_len or shorten the prompt")}


def test_max_model_len_may_only_lower_the_window():
    errors = cw.context_window_errors(config(max_model_len=4096), 2048, {"p": 10})
    assert errors == {"max_model_len": "max_model_len (4096) exceeds the context window of 2048 tokens of model tiny; "
                                       "it may only lower it: set at most 2048 or leave it empty"}


def test_max_response_tokens_must_be_below_max_model_len_in_the_config_itself():
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"max_model_len": 256, "max_response_tokens": 256})
    assert error.value.errors == {"max_response_tokens": "must be below max_model_len (256): the prompt needs room in "
                                                         "the context window too"}


def test_warmup_sequences_longer_than_the_window_are_refused():
    errors = cw.context_window_errors(config(warmup_sft_steps=5, warmup_sft_sequence_length=4096), 2048, None)
    assert list(errors) == ["warmup_sft_sequence_length"] and "(4096)" in errors["warmup_sft_sequence_length"]
    assert cw.context_window_errors(config(warmup_sft_steps=0, warmup_sft_sequence_length=4096), 2048, None) == {}


# --- prompt lengths without torch, as prompt_ids makes them ---

def test_launch_prompt_lengths_match_prompt_ids(tiny_model_dir):
    from training.prompting import prompt_ids

    problems = {"a": "What is 2+3?", "b": "Compute 12*12 then add 7. " * 30, "c": "é ü \\frac{1}{2}",
                "d": long_problem(2008)}
    tokenizer = loading.load_tokenizer(str(tiny_model_dir))
    assert cw.folder_prompt_lengths(tiny_model_dir, problems) == {
        key: len(prompt_ids(problem, tokenizer)) for key, problem in problems.items()}
    assert cw.folder_prompt_lengths(tiny_model_dir, {"d": long_problem(2008)}) == {"d": 2008}


def test_launch_prompt_lengths_follow_a_chat_template(tiny_model_dir, tmp_path):
    """A chat template (system turn, bos_token, loop controls) is rendered as transformers renders it."""
    from training.prompting import prompt_ids

    folder = tmp_path / "chat"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "chat_template.jinja").write_text(
        "{{ bos_token }}{% if messages[0]['role'] != 'system' %}system: be brief\n{% endif %}"
        "{% for message in messages %}{% if message.role == 'system' %}{% continue %}{% endif %}"
        "{{ message.role + ': ' + message.content | trim + '\n' }}{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}")
    problems = {"a": "  What is 2+3?  ", "b": "Compute 12*12. " * 20}
    tokenizer = loading.load_tokenizer(str(folder))
    assert tokenizer.chat_template
    assert cw.folder_prompt_lengths(folder, problems) == {
        key: len(prompt_ids(problem, tokenizer)) for key, problem in problems.items()}


# --- run start (the worker) ---

@pytest.fixture
def no_model_loading(monkeypatch):
    """start_session must refuse before the weights load, the warm-up or the rollout engine."""
    def never(*args, **kwargs):
        raise AssertionError("loaded the model before checking the context window")

    monkeypatch.setattr(session_module, "load_model", never)
    monkeypatch.setattr(session_module, "run_warmup", never)


def test_start_session_refuses_a_prompt_that_does_not_fit_before_any_warm_up(run_paths, no_model_loading):
    records = [PromptRecord(prompt_id="p-1", problem="What is 2+3?", answer="5"),
               PromptRecord(prompt_id="p-17", problem=long_problem(2008), answer="1")]
    run = config(trainer_backend="torch", max_response_tokens=64, warmup_sft_steps=5)
    with pytest.raises(ValueError) as raised:
        session_module.start_session(run, records, run_paths, TrainingHooks())
    assert str(raised.value) == TOO_LONG
    assert not run_paths.output_dir.exists() or not any(run_paths.output_dir.rglob("*.safetensors"))


def test_start_session_refuses_by_max_model_len(run_paths, no_model_loading):
    records = [PromptRecord(prompt_id="p-1", problem=long_problem(900), answer="1")]
    with pytest.raises(cw.ContextWindowError) as raised:
        session_module.start_session(config(trainer_backend="torch", max_response_tokens=256, max_model_len=1024),
                                     records, run_paths, TrainingHooks())
    assert "exceeds the context window of 1024 tokens set by max_model_len (model tiny's own is 2048)" in \
        str(raised.value)


def test_start_session_refuses_prompts_with_images_before_loading_anything(run_paths, no_model_loading):
    records = [PromptRecord(prompt_id="p-1", problem="What is 2+3?", answer="5"),
               PromptRecord(prompt_id="p-2", problem="What does the plot show?", answer="a", image="plot.png")]
    with pytest.raises(ValueError) as raised:
        session_module.start_session(config(trainer_backend="torch"), records, run_paths, TrainingHooks())
    assert str(raised.value).startswith("1 prompt(s) have an image (first: prompt p-2): RL trains on text prompts "
                                        "only and would leave the images out")


def test_start_session_accepts_a_run_that_fits(run_paths):
    records = [PromptRecord(prompt_id="p-17", problem=long_problem(2008), answer="1")]
    session = session_module.start_session(config(trainer_backend="torch", max_response_tokens=40), records,
                                           run_paths, TrainingHooks())
    try:
        assert [len(ids) for ids in session.prompts] == [2008]
    finally:
        session.close()


# --- the CLI ---

@pytest.fixture
def cli_folder(tmp_path, monkeypatch, tiny_model_dir):
    """A working folder with the tiny preset in models/ and the hub unreachable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(resolve, "cached_hub_snapshot", lambda name: None)
    (tmp_path / "models").mkdir()
    shutil.copytree(tiny_model_dir, tmp_path / "models" / "tiny")
    lines = [{"problem": "What is 2+3?", "answer": "5"}, {"problem": long_problem(2008), "answer": "1"}]
    (tmp_path / "prompts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path


def cli_refusal(capsys, yaml_text: str) -> str:
    with open("t.yaml", "w") as file:
        file.write(yaml_text)
    assert main(["t.yaml", "--models-dir", "models"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


CLI_CONFIG = "prompts: prompts.jsonl\ntrainer_backend: torch\niterations: 1\nmax_response_tokens: 64\n"
CLI_TOO_LONG = TOO_LONG.replace("prompt p-17", "prompt 2")  # a prompt file's prompt ids are its line numbers


def test_the_cli_refuses_a_prompt_that_does_not_fit(capsys, cli_folder):
    assert cli_refusal(capsys, CLI_CONFIG) == f"mirrorlab-train: error: t.yaml: {CLI_TOO_LONG}"
    assert not (cli_folder / "runs").exists()  # refused before the run started


def test_the_cli_refuses_at_run_start_what_it_could_not_count_at_launch(capsys, cli_folder, monkeypatch):
    """With no tokenizer at hand at launch (a hub id, a preset not created yet), start_session's check refuses."""
    monkeypatch.setattr(cw, "folder_prompt_lengths", lambda folder, problems: None)
    monkeypatch.setattr(session_module, "load_model", lambda *args, **kwargs: pytest.fail("model loaded"))
    assert cli_refusal(capsys, CLI_CONFIG) == f"mirrorlab-train: error: t.yaml: {CLI_TOO_LONG}"


def test_the_cli_refuses_a_response_limit_lowered_out_of_room_by_max_model_len(capsys, cli_folder):
    refusal = cli_refusal(capsys, CLI_CONFIG + "max_model_len: 1024\n")
    assert refusal == ("mirrorlab-train: error: t.yaml: prompt 2 alone is 2008 tokens, which fills the context window "
                       "of 1024 tokens set by max_model_len (model tiny's own is 2048) and leaves no room for a "
                       "response; shorten or remove it, or raise max_model_len")
