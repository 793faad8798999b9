"""REST API of prompt sets and prompts, with JSONL/CSV upload and dataset imports."""

from __future__ import annotations

from contextlib import contextmanager

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from django.shortcuts import get_object_or_404

from common.knobs import describe_knobs
from common.path_rules import PathRefused
from evaluation.datasets.prompt_import import PromptImportConfig
from webapp.api_base import (
    ProjectScopedSerializer, ScopedViewSet, StrictModelSerializer, StrictSerializer, UniqueNameInProjectMixin,
    visible_field,
)
from webapp.api_filters import VisibleFilterSet
from webapp.configs import resolve_config
from webapp.path_policy import checked_dataset_id
from common.prompt_files import PromptFileError, guess_format, parse_prompt_file
from common.test_cases import normalise_test_cases
from webapp.projects.models import Project
from webapp.prompts.models import Prompt, PromptSet, PromptSetImport
from webapp.limits import upload_size_error
from webapp.parsers import StrictJSONParser
from webapp.prompts.services import (
    PromptLimitError, add_prompt, add_prompts, checked_prompt_fields, create_prompt_set, imports_in_request,
    launch_prompt_import, prompt_set_name_error, queue_upload_import,
)
from webapp.runs.api import JOB_FIELDS


@contextmanager
def refused_as_field_errors():
    """A prompt over the deployment's limits becomes a 400 naming the input that carried it."""
    try:
        yield
    except PromptLimitError as error:
        raise serializers.ValidationError({error.field: [str(error)]}) from None


def checked_upload_format(upload, file_format: str | None) -> str:
    """The upload's format (given, or guessed from its name); a ValidationError for a file over the size limit
    or of an unknown format."""
    if error := upload_size_error(upload.size):
        raise serializers.ValidationError({"file": [error]})
    try:
        return file_format or guess_format(upload.name)
    except ValueError as error:
        raise serializers.ValidationError({"file": [str(error)]}) from None


def read_prompt_upload(upload, file_format: str | None):
    """Parse an uploaded file, or raise a ValidationError naming the bad line (or the size limit)."""
    file_format = checked_upload_format(upload, file_format)
    try:
        return parse_prompt_file(upload.read(), file_format)
    except PromptFileError as error:
        raise serializers.ValidationError({"file": [f"line {error.line}: {error.reason}"]}) from None
    except ValueError as error:
        raise serializers.ValidationError({"file": [str(error)]}) from None


class PromptSetSerializer(UniqueNameInProjectMixin, ProjectScopedSerializer):
    prompt_count = serializers.IntegerField(read_only=True, source="prompts.count")
    file = serializers.FileField(write_only=True, required=False, help_text="JSONL or CSV of prompts (on create; "
                                                                            "later files go to upload/).")
    format = serializers.ChoiceField(choices=("jsonl", "csv"), write_only=True, required=False,
                                     help_text="File format; guessed from the name when omitted.")

    class Meta:
        model = PromptSet
        fields = ("id", "project", "name", "description", "source", "created_at", "prompt_count", "file", "format")

    def validate(self, attrs):
        if self.instance is not None and (given := sorted({"file", "format"} & attrs.keys())):
            raise serializers.ValidationError({name: [
                f"a set's prompts are added by POST /api/prompt-sets/{self.instance.pk}/upload/; PUT and PATCH "
                "change its name, description and source"] for name in given})
        return super().validate(attrs)

    def name_error(self, project, name: str) -> str | None:
        """Another set of the project, or a queued or running import, has the name (as the 202 upload checks)."""
        return prompt_set_name_error(project, name, renamed=self.instance)

    def create(self, validated_data):
        upload = validated_data.pop("file", None)
        file_format = validated_data.pop("format", None)
        parsed = read_prompt_upload(upload, file_format) if upload else []
        source = validated_data.pop("source", "") or getattr(upload, "name", "")
        with refused_as_field_errors():
            return create_prompt_set(prompts=parsed, user=self.context["request"].user, source=source,
                                     **validated_data)



class UploadSerializer(StrictSerializer):
    file = serializers.FileField(help_text="JSONL or CSV of prompts, appended to the set.")
    format = serializers.ChoiceField(choices=("jsonl", "csv"), required=False)


IMPORT_CONFIG_HELP = "; ".join(f"{knob['name']}: {knob['help']}" for knob in describe_knobs(PromptImportConfig))


class PromptSetImportSerializer(StrictModelSerializer):
    """A queued import of a dataset as a new prompt set; `config` is a PromptImportConfig (defaults filled in)."""

    project = visible_field(Project, help_text="Project id (you must be a member).")
    config = serializers.JSONField(help_text=f"Dataset and column mapping. {IMPORT_CONFIG_HELP}")
    owner = serializers.StringRelatedField()

    class Meta:
        model = PromptSetImport
        fields = ("id", "project", "name", "description", "config", "prompt_set", "owner", "log", *JOB_FIELDS)
        read_only_fields = ("prompt_set", "log", *JOB_FIELDS)

    def validate_config(self, value):
        """The import's settings; a local dataset path must lie under MIRRORLAB_IMPORT_ROOTS (stored resolved)."""
        config = resolve_config(PromptImportConfig, value)
        try:
            return {**config, "dataset_id": checked_dataset_id(config["dataset_id"])}
        except PathRefused as refused:
            raise serializers.ValidationError({refused.field: [refused.reason]}) from None

    def validate(self, attrs):
        attrs["name"] = attrs["name"].strip()
        error = prompt_set_name_error(attrs["project"], attrs["name"])
        if error:
            raise serializers.ValidationError({"name": error})
        return attrs

    def create(self, validated_data):
        return launch_prompt_import(owner=self.context["request"].user, **validated_data)


class PromptSetViewSet(ScopedViewSet):
    queryset = PromptSet.objects.all()
    serializer_class = PromptSetSerializer
    filterset_fields = ("project",)
    parser_classes = (StrictJSONParser, MultiPartParser, FormParser)

    @extend_schema(responses={201: PromptSetSerializer, 202: PromptSetImportSerializer})
    def create(self, request, *args, **kwargs):
        """Create a prompt set, with the prompts of `file` when given; a file above
        MIRRORLAB_UPLOAD_IMPORT_IN_REQUEST_BYTES is imported by a worker: 202 with the import to follow."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        upload = data.get("file")
        if upload is None or imports_in_request(upload):
            self.perform_create(serializer)
            return Response(serializer.data, status=status.HTTP_201_CREATED)
        file_format = checked_upload_format(upload, data.get("format"))
        job = queue_upload_import(data["project"], request.user, upload, file_format, data["name"],
                                  data.get("description", ""))
        return Response(PromptSetImportSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={201: inline_serializer("PromptUpload", {
        "imported": serializers.IntegerField(help_text="Prompts appended from the file."),
        "prompt_count": serializers.IntegerField(help_text="Prompts in the set now.")}),
        202: PromptSetImportSerializer})
    @action(detail=True, methods=["post"], serializer_class=UploadSerializer)
    def upload(self, request, pk=None):
        """Append a JSONL/CSV file's prompts: every line or none. A file above
        MIRRORLAB_UPLOAD_IMPORT_IN_REQUEST_BYTES is appended by a worker: 202 with the import to follow."""
        prompt_set = self.get_object()
        serializer = UploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        if not imports_in_request(upload):
            file_format = checked_upload_format(upload, serializer.validated_data.get("format"))
            job = queue_upload_import(prompt_set.project, request.user, upload, file_format, prompt_set.name,
                                      append_to=prompt_set)
            return Response(PromptSetImportSerializer(job).data, status=status.HTTP_202_ACCEPTED)
        parsed = read_prompt_upload(upload, serializer.validated_data.get("format"))
        with refused_as_field_errors():
            added = add_prompts(prompt_set, parsed)
        return Response({"imported": added, "prompt_count": prompt_set.prompts.count()},
                        status=status.HTTP_201_CREATED)

    @extend_schema(responses={201: PromptSetImportSerializer})
    @action(detail=False, methods=["post"], url_path="import", serializer_class=PromptSetImportSerializer,
            parser_classes=(StrictJSONParser,))
    def import_dataset(self, request):
        """Queue the import of a hub dataset (or a local folder/file under MIRRORLAB_IMPORT_ROOTS) as a new prompt
        set."""
        serializer = PromptSetImportSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        job = serializer.save()
        return Response(PromptSetImportSerializer(job).data, status=status.HTTP_201_CREATED)

    @action(detail=False, methods=["get"], url_path=r"imports/(?P<import_id>[0-9]+)",
            serializer_class=PromptSetImportSerializer)
    def import_status(self, request, import_id=None):
        """An import's status, error and log; `prompt_set` is the new set's id once it succeeded."""
        job = get_object_or_404(PromptSetImport.objects.visible_to(request.user), pk=import_id)
        return Response(PromptSetImportSerializer(job).data)


class PromptSerializer(StrictModelSerializer):
    prompt_set = visible_field(PromptSet)

    class Meta:
        model = Prompt
        fields = ("id", "prompt_set", "position", "problem", "image", "answer", "test_cases", "domain", "tags",
                  "difficulty", "pass_rate")
        read_only_fields = ("position",)

    def validate_tags(self, value):
        if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
            raise serializers.ValidationError("must be a list of strings")
        return value

    def validate_test_cases(self, value):
        """Checked as an uploaded file's are (common.test_cases) and stored as given; null for none."""
        if value is not None:
            try:
                normalise_test_cases(value)
            except ValueError as error:
                raise serializers.ValidationError(str(error)) from None
        return value

    def validate(self, attrs):
        """On create and on edit: the image by the path rule, the problem and answer within MAX_PROMPT_CHARS."""
        if self.instance is not None and "prompt_set" in attrs and attrs["prompt_set"] != self.instance.prompt_set:
            raise serializers.ValidationError({"prompt_set": "a prompt cannot move to another set"})
        answer = attrs.get("answer", getattr(self.instance, "answer", ""))
        tests = attrs.get("test_cases", getattr(self.instance, "test_cases", None))
        if not answer and tests is None:
            raise serializers.ValidationError({"answer": "give an answer or test_cases to verify responses"})
        with refused_as_field_errors():
            return checked_prompt_fields(attrs)

    def create(self, validated_data):
        with refused_as_field_errors():
            return add_prompt(**validated_data)


class PromptFilter(VisibleFilterSet):
    class Meta:
        model = Prompt
        fields = ("prompt_set", "difficulty", "domain")


class PromptViewSet(ScopedViewSet):
    queryset = Prompt.objects.all()
    serializer_class = PromptSerializer
    filterset_class = PromptFilter
