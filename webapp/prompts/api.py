"""REST API of prompt sets and prompts, with JSONL/CSV upload."""

from __future__ import annotations

import django_filters
from django.db import transaction
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from webapp.api_base import ProjectScopedSerializer, ScopedViewSet, visible_field
from common.prompt_files import PromptFileError, guess_format, parse_prompt_file
from webapp.prompts.models import Prompt, PromptSet
from webapp.prompts.services import add_prompts


def read_prompt_upload(upload, file_format: str | None):
    """Parse an uploaded file, or raise a ValidationError naming the bad line."""
    try:
        return parse_prompt_file(upload.read(), file_format or guess_format(upload.name))
    except PromptFileError as error:
        raise serializers.ValidationError({"file": [f"line {error.line}: {error.reason}"]}) from None
    except ValueError as error:
        raise serializers.ValidationError({"file": [str(error)]}) from None


class PromptSetSerializer(ProjectScopedSerializer):
    prompt_count = serializers.IntegerField(read_only=True, source="prompts.count")
    file = serializers.FileField(write_only=True, required=False, help_text="JSONL or CSV of prompts.")
    format = serializers.ChoiceField(choices=("jsonl", "csv"), write_only=True, required=False,
                                     help_text="File format; guessed from the name when omitted.")

    class Meta:
        model = PromptSet
        fields = ("id", "project", "name", "description", "source", "created_at", "prompt_count", "file", "format")

    def create(self, validated_data):
        upload = validated_data.pop("file", None)
        file_format = validated_data.pop("format", None)
        parsed = read_prompt_upload(upload, file_format) if upload else []
        with transaction.atomic():
            prompt_set = PromptSet.objects.create(created_by=self.context["request"].user,
                                                  source=validated_data.pop("source", "") or getattr(upload, "name", ""),
                                                  **validated_data)
            add_prompts(prompt_set, parsed)
        return prompt_set

    def update(self, instance, validated_data):
        validated_data.pop("file", None)
        validated_data.pop("format", None)
        return super().update(instance, validated_data)


class UploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JSONL or CSV of prompts, appended to the set.")
    format = serializers.ChoiceField(choices=("jsonl", "csv"), required=False)


class PromptSetViewSet(ScopedViewSet):
    queryset = PromptSet.objects.all()
    serializer_class = PromptSetSerializer
    filterset_fields = ("project",)
    parser_classes = (JSONParser, MultiPartParser, FormParser)

    @action(detail=True, methods=["post"], serializer_class=UploadSerializer)
    def upload(self, request, pk=None):
        """Append a JSONL/CSV file's prompts: every line or none."""
        prompt_set = self.get_object()
        serializer = UploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        parsed = read_prompt_upload(serializer.validated_data["file"], serializer.validated_data.get("format"))
        with transaction.atomic():
            added = add_prompts(prompt_set, parsed)
        return Response({"imported": added, "prompt_count": prompt_set.prompts.count()},
                        status=status.HTTP_201_CREATED)


class PromptSerializer(serializers.ModelSerializer):
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

    def validate(self, attrs):
        if self.instance is not None and "prompt_set" in attrs and attrs["prompt_set"] != self.instance.prompt_set:
            raise serializers.ValidationError({"prompt_set": "a prompt cannot move to another set"})
        answer = attrs.get("answer", getattr(self.instance, "answer", ""))
        tests = attrs.get("test_cases", getattr(self.instance, "test_cases", None))
        if not answer and tests is None:
            raise serializers.ValidationError({"answer": "give an answer or test_cases to verify responses"})
        return attrs

    def create(self, validated_data):
        prompt_set = validated_data["prompt_set"]
        with transaction.atomic():
            last = prompt_set.prompts.select_for_update().order_by("-position").first()
            validated_data["position"] = (last.position if last else 0) + 1
            return super().create(validated_data)


class PromptFilter(django_filters.FilterSet):
    class Meta:
        model = Prompt
        fields = ("prompt_set", "difficulty", "domain")


class PromptViewSet(ScopedViewSet):
    queryset = Prompt.objects.all()
    serializer_class = PromptSerializer
    filterset_class = PromptFilter
