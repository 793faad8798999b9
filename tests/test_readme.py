"""The README documents what the code offers."""

from pathlib import Path

from common.knobs import describe_knobs
from training.config import RLConfig

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_the_readme_opens_with_the_two_commands():
    opening = README[:1500]
    assert "bash scripts/demo.sh" in opening and "bash scripts/test.sh" in opening


def test_every_rl_knob_is_documented_with_its_default():
    for knob in describe_knobs(RLConfig):
        default = "empty" if knob["default"] is None else knob["default"]
        assert f"| `{knob['name']}` | {knob['group']} | `{default}` |" in README, knob["name"]


def test_the_ci_script_calls_the_readme_test_command():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci
