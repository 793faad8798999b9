"""Prompt-set pages: list, detail with paginated prompts, and the upload form."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from webapp.prompts.models import Prompt, PromptSet
from common.prompt_files import ParsedPrompt
from webapp.prompts.services import add_prompts

pytestmark = pytest.mark.django_db

VALID_JSONL = (
    b'{"problem": "What is 3+4?", "answer": "7"}\n'
    b'{"problem": "What is 6*7?", "answer": "42", "difficulty": "easy", "tags": ["arithmetic"]}\n'
    b'{"problem": "Echo the input.", "test_cases": [{"input": "a", "output": "a"}], "domain": "code"}\n'
)
VALID_CSV = b"problem,answer,difficulty\nWhat is 1+1?,2,easy\nWhat is 9-4?,5,easy\n"
BAD_SECOND_LINE = b'{"problem": "What is 3+4?", "answer": "7"}\n{"problem": "no answer here"}\n'


def add_many_prompts(prompt_set, count: int) -> None:
    add_prompts(prompt_set, [ParsedPrompt(line=i, problem=f"Problem number {i}", answer=str(i)) for i in range(count)])


def upload(client, name: str, filename: str, content: bytes):
    file = SimpleUploadedFile(filename, content, content_type="application/octet-stream")
    return client.post(reverse("prompt-set-upload"), {"name": name, "description": "from a test", "file": file})


@pytest.mark.parametrize("user_name", ["alice", "bob"])
def test_members_see_the_prompt_set_page(client_for, request, prompt_set, user_name):
    response = client_for(request.getfixturevalue(user_name)).get(
        reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk}))
    assert response.status_code == 200
    assert b"What is 12*12?" in response.content


def test_outsider_gets_404_on_prompt_set_page(client_for, charlie, prompt_set):
    response = client_for(charlie).get(reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk}))
    assert response.status_code == 404


def test_staff_see_any_prompt_set_page(client_for, django_user_model, prompt_set):
    staff = django_user_model.objects.create_user("dora", password="dora-password", is_staff=True)
    assert client_for(staff).get(reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk})).status_code == 200


def test_list_shows_the_current_projects_sets_with_prompt_counts(client_for, bob, prompt_set):
    response = client_for(bob).get(reverse("prompt-set-list"))
    assert response.status_code == 200
    content = response.content.decode()
    assert reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk}) in content
    assert '<td class="num">2</td>' in content


def test_outsider_list_shows_no_foreign_sets(client_for, charlie, prompt_set):
    content = client_for(charlie).get(reverse("prompt-set-list")).content.decode()
    assert prompt_set.name not in content
    assert "No project yet" in content


def test_detail_paginates_prompts(client_for, alice, prompt_set):
    add_many_prompts(prompt_set, 120)  # 122 prompts in all: pages of 50, 50, 22
    client = client_for(alice)
    first = client.get(reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk}))
    assert len(first.context["page"].object_list) == 50
    last = client.get(reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk}), {"page": 3})
    assert len(last.context["page"].object_list) == 22
    assert b"Problem number 119" in last.content
    assert b"page 3 of 3" in last.content


def test_detail_with_many_prompts_uses_a_bounded_number_of_queries(client_for, alice, prompt_set,
                                                                    django_assert_max_num_queries):
    add_many_prompts(prompt_set, 300)
    client = client_for(alice)
    with django_assert_max_num_queries(10):
        response = client.get(reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk}))
    assert response.status_code == 200


def test_list_with_many_sets_uses_a_bounded_number_of_queries(client_for, alice, project,
                                                               django_assert_max_num_queries):
    for index in range(40):
        prompt_set = PromptSet.objects.create(project=project, name=f"set-{index}", created_by=alice)
        add_many_prompts(prompt_set, 3)
    client = client_for(alice)
    with django_assert_max_num_queries(10):
        response = client.get(reverse("prompt-set-list"))
    assert response.status_code == 200
    assert len(response.context["page"].object_list) == 25


def test_upload_imports_a_valid_jsonl_file(client_for, bob, project):
    response = upload(client_for(bob), "fresh", "fresh.jsonl", VALID_JSONL)
    prompt_set = PromptSet.objects.get(project=project, name="fresh")
    assert response.status_code == 302
    assert response.url == reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk})
    assert prompt_set.created_by == bob
    assert prompt_set.source == "fresh.jsonl"
    assert prompt_set.description == "from a test"
    assert list(prompt_set.prompts.values_list("position", "answer")) == [(1, "7"), (2, "42"), (3, "")]
    assert prompt_set.prompts.get(position=3).test_cases == [{"input": "a", "output": "a"}]


def test_upload_imports_a_valid_csv_file(client_for, alice, project):
    response = upload(client_for(alice), "from-csv", "set.csv", VALID_CSV)
    assert response.status_code == 302
    prompt_set = PromptSet.objects.get(project=project, name="from-csv")
    assert prompt_set.prompts.count() == 2


def test_upload_refuses_a_bad_line_naming_it_and_creates_nothing(client_for, alice, project):
    prompts_before = Prompt.objects.count()
    response = upload(client_for(alice), "broken", "broken.jsonl", BAD_SECOND_LINE)
    assert response.status_code == 200
    errors = response.context["form"].errors["file"]
    assert errors == ["line 2: needs an 'answer' or 'test_cases' to verify responses"]
    assert b"line 2: needs an" in response.content
    assert not PromptSet.objects.filter(name="broken").exists()
    assert Prompt.objects.count() == prompts_before


def test_upload_refuses_invalid_json_naming_the_line(client_for, alice, project):
    response = upload(client_for(alice), "broken", "broken.jsonl", b'{"problem": "a", "answer": "1"}\n\n{oops\n')
    assert response.status_code == 200
    assert response.context["form"].errors["file"][0].startswith("line 3: not valid JSON")
    assert not PromptSet.objects.filter(name="broken").exists()


def test_upload_refuses_an_unknown_file_extension(client_for, alice, project):
    response = upload(client_for(alice), "text", "prompts.txt", VALID_JSONL)
    assert response.status_code == 200
    assert "name it .jsonl or .csv" in response.context["form"].errors["file"][0]
    assert not PromptSet.objects.filter(name="text").exists()


def test_upload_refuses_a_name_already_used_in_the_project(client_for, alice, prompt_set):
    response = upload(client_for(alice), prompt_set.name, "again.jsonl", VALID_JSONL)
    assert response.status_code == 200
    assert "already has a prompt set named" in response.context["form"].errors["name"][0]
    assert PromptSet.objects.filter(name=prompt_set.name).count() == 1


def test_upload_without_a_project_shows_the_hint_and_creates_nothing(client_for, charlie):
    client = client_for(charlie)
    assert b"No project yet" in client.get(reverse("prompt-set-upload")).content
    response = upload(client, "orphan", "orphan.jsonl", VALID_JSONL)
    assert response.status_code == 200
    assert not PromptSet.objects.filter(name="orphan").exists()
