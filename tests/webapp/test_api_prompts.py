"""/api/prompts/: one prompt created or edited is checked as a file's lines are (path rule, lengths, test cases)."""

from __future__ import annotations

import pytest

from webapp.prompts.models import Prompt

pytestmark = pytest.mark.django_db


@pytest.fixture
def prompt(prompt_set):
    return prompt_set.prompts.get(position=1)


def test_an_edit_refuses_an_image_outside_the_import_roots(api_for, alice, prompt):
    response = api_for(alice).patch(f"/api/prompts/{prompt.pk}/", {"image": "/etc/passwd"}, format="json")
    assert response.status_code == 400
    assert response.json()["image"][0].startswith("image: '/etc/passwd' is not a path this project may use")
    prompt.refresh_from_db()
    assert prompt.image == ""


def test_an_edit_stores_an_allowed_image_resolved(api_for, alice, prompt, tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "cat.png").write_bytes(b"png")
    (tmp_path / "link").symlink_to(tmp_path / "images")
    response = api_for(alice).patch(f"/api/prompts/{prompt.pk}/", {"image": str(tmp_path / "link" / "cat.png")},
                                    format="json")
    assert response.status_code == 200, response.json()
    prompt.refresh_from_db()
    assert prompt.image == str(tmp_path / "images" / "cat.png")


@pytest.mark.parametrize("field", ["problem", "answer"])
def test_an_edit_refuses_a_problem_or_answer_over_the_length_limit(api_for, alice, prompt, settings, field):
    settings.MAX_PROMPT_CHARS = 10
    before = getattr(prompt, field)
    response = api_for(alice).patch(f"/api/prompts/{prompt.pk}/", {field: "x" * 11}, format="json")
    assert response.status_code == 400
    assert response.json() == {field: [f"the {field} has 11 characters; at most 10 (MIRRORLAB_MAX_PROMPT_CHARS)"]}
    prompt.refresh_from_db()
    assert getattr(prompt, field) == before


@pytest.mark.parametrize("test_cases, reason", [
    (5, "'test_cases' must be a non-empty list of test cases"),
    ("abc", "'test_cases' must be a non-empty list of test cases"),
    ([], "'test_cases' must be a non-empty list of test cases"),
    ([1, 2], "test_cases[0] must be an object"),
    ({"x": 1}, "test_cases[0].input must be a string (stdin test)"),
    ([{"kind": "sql", "input": "1"}], "test_cases[0].kind must be 'stdin' or 'functional', got 'sql'"),
])
def test_malformed_test_cases_are_refused_on_create_and_on_edit(api_for, alice, prompt_set, prompt, test_cases,
                                                                 reason):
    api = api_for(alice)
    created = api.post("/api/prompts/", {"prompt_set": prompt_set.pk, "problem": "q", "test_cases": test_cases},
                       format="json")
    edited = api.patch(f"/api/prompts/{prompt.pk}/", {"test_cases": test_cases}, format="json")
    assert (created.status_code, edited.status_code) == (400, 400)
    assert created.json() == edited.json() == {"test_cases": [reason]}
    assert prompt_set.prompts.count() == 2
    prompt.refresh_from_db()
    assert prompt.test_cases is None


def test_well_formed_test_cases_are_stored_as_given(api_for, alice, prompt_set):
    cases = [{"input": "1 2", "output": "3"}, {"kind": "functional", "entry_point": "f", "code": "def check(f): 1"}]
    response = api_for(alice).post("/api/prompts/", {"prompt_set": prompt_set.pk, "problem": "q",
                                                     "test_cases": cases}, format="json")
    assert response.status_code == 201, response.json()
    assert Prompt.objects.get(pk=response.json()["id"]).test_cases == cases


def test_an_image_whose_resolved_path_is_too_long_to_store_is_refused(api_for, alice, prompt_set, tmp_path):
    deep = tmp_path.joinpath(*["d" * 60] * 9)
    deep.mkdir(parents=True)
    (tmp_path / "short").symlink_to(deep)
    response = api_for(alice).post("/api/prompts/", {"prompt_set": prompt_set.pk, "problem": "q", "answer": "1",
                                                     "image": str(tmp_path / "short" / "cat.png")}, format="json")
    assert response.status_code == 400
    (reason,) = response.json()["image"]
    assert f"resolves to a path of {len(str(deep / 'cat.png'))} characters; at most 500 fit" in reason
    assert prompt_set.prompts.count() == 2
