"""`mirrorlab-train`: a simple mistake gives one line on stderr naming the file, field or line, and exit code 2."""

from __future__ import annotations

import json

import pytest
import torch
from huggingface_hub import constants

from common.knobs import config_to_dict
from common.prompt_files import PromptFileError, parse_prompt_file
from training.checkpoint import CONFIG_FILE, STATE_FILE, checkpoint_dir
from training.cli import main
from training.config import RLConfig
from training.models import resolve


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Each test in its own folder; the hub unreachable (the tests never wait on the network)."""
    monkeypatch.chdir(tmp_path)

    def unreachable(name):
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr(resolve, "hub_model_info", unreachable)
    monkeypatch.setattr(resolve, "cached_hub_snapshot", lambda name: None)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return tmp_path


def write(name: str, text: str):
    with open(name, "w") as file:
        file.write(text)
    return name


def refused(capsys, *argv: str) -> str:
    """Run the CLI expecting a refusal; its single stderr line."""
    assert main([*argv, "--models-dir", "models"]) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error
    lines = error.strip().splitlines()
    assert len(lines) == 1, error
    return lines[0]


def test_a_missing_config_file_is_named(capsys):
    assert refused(capsys, "t.yaml") == "mirrorlab-train: error: t.yaml: no such file"


def test_a_folder_as_config_is_refused(capsys, tmp_path):
    (tmp_path / "configs").mkdir()
    assert refused(capsys, "configs") == "mirrorlab-train: error: configs: is a folder, not a YAML config file"


@pytest.mark.parametrize("value, reason", [
    ("abc", "must be a whole number, not 'abc'"), ("2.5", "must be a whole number, not 2.5"),
    ("-5", "must be at least 1, not -5"), ("0", "must be at least 1, not 0"),
])
def test_a_bad_prompt_count_is_refused_before_print_config(capsys, value, reason):
    write("t.yaml", f"prompt_count: {value}\n")
    assert refused(capsys, "t.yaml", "--print-config") == f"mirrorlab-train: error: t.yaml: prompt_count: {reason}"


def test_a_missing_prompt_file_is_refused_at_parse_time(capsys):
    write("t.yaml", "prompts: nope.jsonl\n")
    assert refused(capsys, "t.yaml", "--print-config") == (
        "mirrorlab-train: error: t.yaml: prompts: no such file 'nope.jsonl' (use synthetic-arithmetic or a "
        "JSONL/CSV prompt file)")


def test_a_prompt_file_of_unknown_format_is_refused_at_parse_time(capsys):
    write("prompts.txt", "What is 1+1?\n")
    write("t.yaml", "prompts: prompts.txt\n")
    assert "t.yaml: prompts: cannot tell the format of 'prompts.txt'" in refused(capsys, "t.yaml", "--print-config")


def test_every_refused_key_is_listed_in_one_line(capsys):
    write("t.yaml", "prompt_count: x\ntau: 0\nbogus: 1\n")
    line = refused(capsys, "t.yaml", "--print-config")
    assert "prompt_count: must be a whole number" in line and "tau: must be greater than 0.0" in line
    assert "bogus: unknown setting" in line


def test_a_key_yaml_reads_as_a_number_or_boolean_is_refused_naming_it(capsys):
    write("t.yaml", "iterations: -1\n1: 2\nno: 3\n")
    line = refused(capsys, "t.yaml", "--print-config")
    assert "1: a setting's name must be text, not the int 1 (in YAML, quote the key)" in line
    assert "False: a setting's name must be text, not the bool False" in line
    assert "iterations: must be at least 1" in line


def test_a_duplicate_key_is_refused_with_both_lines(capsys):
    write("t.yaml", "tau: 0.1\niterations: 3\ntau: 0.2\n")
    assert refused(capsys, "t.yaml", "--print-config") == \
        "mirrorlab-train: error: t.yaml line 3: duplicate key 'tau' (first given on line 1)"


def test_a_duplicate_key_in_a_flow_mapping_is_refused(capsys):
    write("t.yaml", "{tau: 0.1, tau: 0.2}\n")
    assert refused(capsys, "t.yaml", "--print-config") == \
        "mirrorlab-train: error: t.yaml line 1: duplicate key 'tau' (first given on line 1)"


def test_invalid_yaml_is_one_line_with_its_line_number(capsys):
    write("t.yaml", "iterations: 3\ntau: [1\n")
    assert refused(capsys, "t.yaml").startswith("mirrorlab-train: error: t.yaml line 3: not valid YAML: expected")


def test_a_list_at_the_top_level_is_refused(capsys):
    write("t.yaml", "- tau\n")
    assert refused(capsys, "t.yaml") == \
        "mirrorlab-train: error: t.yaml: expected a mapping of settings (name: value) at the top level"


def test_a_good_config_prints_every_knob(capsys):
    write("t.yaml", "prompt_count: 8\ntau: 0.5\n")
    assert main(["t.yaml", "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "prompt_count: 8\n" in printed and "tau: 0.5\n" in printed and "output_dir: runs/cli\n" in printed


def test_a_misspelled_model_is_refused_with_one_clear_line(capsys):
    write("t.yaml", "model: tinyy\nprompt_count: 4\noutput_dir: out\n")
    assert refused(capsys, "t.yaml") == (
        "mirrorlab-train: error: t.yaml: model 'tinyy' is not a preset (tiny, tiny-vl), not a local folder, and the "
        "Hugging Face hub could not provide it (hub unreachable: [Errno -2] Name or service not known)")


def test_a_missing_model_folder_is_refused_at_once(capsys):
    write("t.yaml", "model: /models/missing\nprompt_count: 4\noutput_dir: out\n")
    assert refused(capsys, "t.yaml") == "mirrorlab-train: error: t.yaml: model '/models/missing': no such folder"


def saved_checkpoint(tmp_path, prompt_count: int):
    """The files a resume reads first (saved config and training state) of a run of the default config."""
    folder = checkpoint_dir(tmp_path / "out", 2)
    folder.mkdir(parents=True)
    (folder / CONFIG_FILE).write_text(json.dumps(config_to_dict(RLConfig())))
    torch.save({"iteration": 2, "sampler": {"n": prompt_count}}, folder / STATE_FILE)
    return folder


def test_resuming_with_a_changed_recipe_lists_each_change_and_how_to_proceed(capsys, tmp_path):
    saved_checkpoint(tmp_path, 4)
    write("t.yaml", "model: /nonexistent\ntau: 5.0\niterations: 30\nprompt_count: 4\noutput_dir: out\n")
    assert refused(capsys, "t.yaml") == (
        "mirrorlab-train: error: t.yaml: cannot resume from out/checkpoints/iteration-000002: the config changed "
        "since it was saved (model: tiny -> /nonexistent; tau: 0.1 -> 5.0); to resume, set them back to the "
        "checkpoint's values; to train with the new ones, choose a new output_dir")


def test_resuming_with_another_prompt_count_says_the_prompt_set_changed(capsys, tmp_path):
    saved_checkpoint(tmp_path, 16)
    write("t.yaml", "prompt_count: 8\noutput_dir: out\n")
    assert refused(capsys, "t.yaml") == (
        "mirrorlab-train: error: t.yaml: cannot resume from out/checkpoints/iteration-000002: the prompt set changed "
        "since it was saved (it had 16 prompts, this run has 8); to resume, use the same prompts; to train on the "
        "new ones, choose a new output_dir")


def test_the_noop_backend_does_not_claim_checkpoints_it_never_wrote(capsys, tmp_path):
    write("t.yaml", "trainer_backend: noop-test\niterations: 2\nprompt_count: 4\noutput_dir: out\n")
    assert main(["t.yaml"]) == 0
    output = capsys.readouterr().out
    assert output.strip().splitlines()[-1] == "done: 2 iterations; no checkpoints written"
    assert not (tmp_path / "out" / "checkpoints").exists()


def test_a_jsonl_prompt_with_text_tags_is_refused_naming_line_and_field(capsys):
    write("p.jsonl", '{"problem": "1+1?", "answer": "2", "tags": ["a"]}\n'
                     '{"problem": "2+2?", "answer": "4", "tags": "a,b"}\n')
    write("t.yaml", "prompts: p.jsonl\ntrainer_backend: noop-test\n")
    assert refused(capsys, "t.yaml") == (
        "mirrorlab-train: error: prompts: p.jsonl: line 2: 'tags' must be a JSON list of strings, such as "
        "[\"a\", \"b\"], not the text \"a,b\" (';'-separated text is for CSV files)")


def test_tags_are_a_json_list_in_jsonl_and_semicolon_separated_text_in_csv():
    jsonl = parse_prompt_file(b'{"problem": "1+1?", "answer": "2", "tags": ["a", "b"]}\n', "jsonl")
    csv = parse_prompt_file(b'problem,answer,tags\n1+1?,2,a;b\n', "csv")
    assert jsonl[0].tags == csv[0].tags == ("a", "b")
    with pytest.raises(PromptFileError, match="^line 1: 'tags' must be a JSON list of strings"):
        parse_prompt_file(b'{"problem": "1+1?", "answer": "2", "tags": "a;b"}\n', "jsonl")


def test_prompts_with_images_are_refused_rather_than_trained_without_them(capsys):
    write("p.jsonl", '{"problem": "2+2", "answer": "4"}\n{"problem": "What does the plot show?", "answer": "a", '
                     '"image": "plots/one.png"}\n')
    write("t.yaml", "prompts: p.jsonl\noutput_dir: out\n")
    assert refused(capsys, "t.yaml") == (
        "mirrorlab-train: error: t.yaml: prompts: 1 prompt(s) have an image (first: line 2): RL trains on text "
        "prompts only and would leave the images out; use a prompt set without images (images are scored in "
        "evaluation suites, e.g. MathVista)")


def test_the_progress_bar_starts_with_the_first_iteration_not_the_warm_up(capsys):
    from training.cli import progress_hooks
    from training.types import IterationReport

    hooks, close = progress_hooks(total=10)
    hooks.log("warm-up SFT step 40: loss 1.234")
    assert capsys.readouterr().err == "warm-up SFT step 40: loss 1.234\n"  # above, no bar (its clock not started)
    report = IterationReport(iteration=6, train_accuracy=0.5, mean_response_length=12.0, p95_response_length=20.0,
                             loss=0.1, kl=0.0, tokens_generated=100, tokens_reused=0, seconds=1.0)
    hooks.on_iteration(report)  # a run resumed after iteration 5: the bar starts there
    close()
    drawn = capsys.readouterr().err
    assert "RL:" in drawn and "6/10" in drawn and "accuracy=0.500" in drawn
