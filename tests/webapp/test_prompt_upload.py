"""JSONL and CSV prompt imports: all lines or none, and the bad line is named."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from common.prompt_files import PromptFileError, parse_prompt_file, parse_record
from webapp.prompts.models import Prompt, PromptSet

pytestmark = pytest.mark.django_db

VALID_CSV = (
    "problem,answer,difficulty,tags,pass_rate,test_cases\n"
    "What is 7*6?,42,easy,arithmetic;multiplication,0.9,\n"
    '"Print the sum of two numbers, read from stdin.",,hard,code,,"[{""input"": ""1 2"", ""output"": ""3""}]"\n'
)


def upload(api, project, name, content, filename):
    return api.post("/api/prompt-sets/", {"project": project.pk, "name": name,
                                          "file": SimpleUploadedFile(filename, content)}, format="multipart")


def test_it_imports_a_valid_jsonl_file(api_for, project, alice):
    content = (b'{"problem": "1+1?", "answer": "2", "tags": ["a", "b"], "difficulty": "easy"}\n\n'
               b'{"problem": "Solve x^2=4 for x>0.", "answer": 2, "pass_rate": 0.25, "domain": "math"}\n')
    response = upload(api_for(alice), project, "jsonl set", content, "set.jsonl")
    assert response.status_code == 201, response.json()
    prompts = list(Prompt.objects.filter(prompt_set_id=response.json()["id"]))
    assert [(p.position, p.answer, p.tags, p.pass_rate) for p in prompts] == [
        (1, "2", ["a", "b"], None), (2, "2", [], 0.25)]
    assert prompts[1].domain == "math"


def test_it_imports_a_valid_csv_file(api_for, project, alice):
    response = upload(api_for(alice), project, "csv set", VALID_CSV.encode(), "set.csv")
    assert response.status_code == 201, response.json()
    first, second = Prompt.objects.filter(prompt_set_id=response.json()["id"])
    assert (first.answer, first.tags, first.pass_rate) == ("42", ["arithmetic", "multiplication"], 0.9)
    assert second.test_cases == [{"input": "1 2", "output": "3"}] and second.difficulty == "hard"


@pytest.mark.parametrize(
    "content, filename, line, reason",
    [
        (b'{"problem": "ok", "answer": "1"}\n{"problem": "broken", \n', "bad.jsonl", 2, "not valid JSON"),
        (b'{"problem": "ok", "answer": "1"}\n{"problem": "ok2", "answer": "2"}\n{"answer": "3"}\n',
         "bad.jsonl", 3, "'problem' is missing"),
        (b'{"problem": "ok", "answer": "1"}\n{"problem": "p", "answer": "1", "pass_rate": 2}\n',
         "bad.jsonl", 2, "between 0 and 1"),
        (b'{"problem": "no way to verify"}\n', "bad.jsonl", 1, "needs an 'answer' or 'test_cases'"),
        (b'{"problem": "p", "answer": "1", "colour": "red"}\n', "bad.jsonl", 1, "unknown field(s) colour"),
        (b"problem,answer\nfine,1\nalso fine,2\nbad,3,extra\n", "bad.csv", 4, "more values"),
        (b'problem,answer,test_cases\nfine,1,\nbad,,"[oops"\n', "bad.csv", 3, "not valid JSON"),
        (b"question,answer\nq,1\n", "bad.csv", 1, "'problem' column"),
    ],
)
def test_a_bad_line_imports_nothing_and_is_named(api_for, project, alice, content, filename, line, reason):
    response = upload(api_for(alice), project, "bad set", content, filename)
    assert response.status_code == 400
    message = response.json()["file"][0]
    assert message.startswith(f"line {line}:") and reason in message
    assert not PromptSet.objects.filter(name="bad set").exists()
    assert not Prompt.objects.exists()


def test_appending_a_bad_file_keeps_the_existing_prompts(api_for, prompt_set, alice):
    before = list(prompt_set.prompts.values_list("pk", flat=True))
    bad = SimpleUploadedFile("more.jsonl", b'{"problem": "p", "answer": "1"}\n{"problem": ""}\n')
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": bad}, format="multipart")
    assert response.status_code == 400 and response.json()["file"][0].startswith("line 2:")
    assert list(prompt_set.prompts.values_list("pk", flat=True)) == before


def test_appending_a_good_file_numbers_after_the_last_prompt(api_for, prompt_set, alice):
    good = SimpleUploadedFile("more.csv", b"problem,answer\nthird,3\n")
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": good}, format="multipart")
    assert response.status_code == 201 and response.json() == {"imported": 1, "prompt_count": 3}
    assert list(prompt_set.prompts.values_list("position", flat=True)) == [1, 2, 3]


def test_a_file_that_is_not_utf8_names_its_line():
    with pytest.raises(PromptFileError) as error:
        parse_prompt_file(b'{"problem": "a", "answer": "1"}\n{"problem": "\xff"}\n', "jsonl")
    assert error.value.line == 2


def test_an_unknown_extension_is_refused(api_for, project, alice):
    response = upload(api_for(alice), project, "x", b"problem,answer\na,1\n", "set.xlsx")
    assert response.status_code == 400 and "name it .jsonl or .csv" in response.json()["file"][0]


@pytest.mark.parametrize("content, filename, message", [
    (b'{"problem": "q", "answer": "1", "tags": ["a\\u0000b"]}\n', "set.jsonl",
     "line 1: tags[0]: contains a NUL character (\\u0000), which cannot be stored"),
    (b'{"problem": "q", "test_cases": [{"input": "\\u0000", "output": "1"}]}\n', "set.jsonl",
     "line 1: test_cases[0].input: contains a NUL character (\\u0000), which cannot be stored"),
    (b'{"problem": "q", "test_cases": [{"input": "1", "output": "1", "weight": NaN}]}\n', "set.jsonl",
     "line 1: test_cases[0].weight: NaN is not a number JSON allows; give a finite number"),
    (b'{"problem": "ok", "answer": "1"}\n{"problem": "q", "answer": NaN}\n', "set.jsonl",
     "line 2: answer: NaN is not a number JSON allows; give a finite number"),
    (b'{"problem": Infinity, "answer": "1"}\n', "set.jsonl",
     "line 1: problem: Infinity is not a number JSON allows; give a finite number"),
    (b'{"problem": "q", "answer": 1e999}\n', "set.jsonl",
     "line 1: answer: a number too large for a float (it reads as infinity); give a finite number"),
    (b"problem,answer,tags\nq,1,a\x00b\n", "set.csv",
     "line 2: tags: contains a NUL character (\\u0000), which cannot be stored"),
    (b'problem,test_cases\nq,"[{""input"": ""1"", ""output"": NaN}]"\n', "set.csv",
     "line 2: test_cases[0].output: NaN is not a number JSON allows; give a finite number"),
])
def test_nan_infinity_and_nul_characters_are_refused_naming_line_and_field(api_for, project, alice, content,
                                                                           filename, message):
    response = upload(api_for(alice), project, "bad set", content, filename)
    assert response.status_code == 400
    assert response.json()["file"] == [message]
    assert not PromptSet.objects.filter(name="bad set").exists()


@pytest.mark.parametrize("content, filename, message", [
    (b'{"problem": "ok", "answer": "1"}\n{"problem": "q", "test_cases": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
     "set.jsonl", "line 2: nested 100001 levels deep; at most 64"),
    (b'problem,test_cases\nq,"' + b"[" * 5000 + b"]" * 5000 + b'"\n', "set.csv",
     "line 2: 'test_cases' is nested 5000 levels deep; at most 64"),
])
def test_deeply_nested_json_is_refused_naming_the_line(api_for, project, alice, content, filename, message):
    response = upload(api_for(alice), project, "deep set", content, filename)
    assert response.status_code == 400
    assert response.json()["file"] == [message]
    assert not PromptSet.objects.filter(name="deep set").exists()


def test_a_bad_json_tags_cell_names_the_column(api_for, project, alice):
    response = upload(api_for(alice), project, "csv tags", b'problem,answer,tags\nq,1,"[bad"\n', "set.csv")
    assert response.status_code == 400
    assert response.json()["file"] == ["line 2: 'tags' is not valid JSON (Expecting value at column 2)"]
    assert not PromptSet.objects.filter(name="csv tags").exists()


def test_line_breaks_other_than_a_line_feed_stay_inside_their_json_strings(api_for, project, alice):
    content = '{"problem": "a\u2028b", "answer": "1"}\r\n{"problem": "c\x85d\u2029e", "answer": "2"}\n'.encode()
    response = upload(api_for(alice), project, "separators", content, "set.jsonl")
    assert response.status_code == 201, response.json()
    prompts = Prompt.objects.filter(prompt_set_id=response.json()["id"])
    assert list(prompts.values_list("problem", "answer")) == [("a\u2028b", "1"), ("c\x85d\u2029e", "2")]


def test_a_bad_line_after_a_line_separator_is_named_by_its_own_number(api_for, project, alice):
    content = '{"problem": "a\u2028b", "answer": "1"}\n{"problem": "no answer"}\n'.encode()
    response = upload(api_for(alice), project, "separators", content, "set.jsonl")
    assert response.status_code == 400
    assert response.json()["file"] == ["line 2: needs an 'answer' or 'test_cases' to verify responses"]


@pytest.mark.parametrize("value, reason", [
    (float("nan"), "answer: NaN (not a number); give a finite number"),
    (float("inf"), "answer: a number too large for a float (it reads as infinity); give a finite number"),
])
def test_a_dataset_rows_nan_or_infinity_is_refused_rather_than_stored_as_text(value, reason):
    with pytest.raises(PromptFileError) as error:
        parse_record({"problem": "q", "answer": value}, line=3)
    assert (error.value.line, error.value.reason) == (3, reason)
