"""REST API of benchmark suites, evaluation runs, results and per-sample rows."""

from __future__ import annotations

import django_filters
from rest_framework import serializers

from common.knobs import ConfigError, config_to_dict
from evaluation.suite_config import parse_suite
from training.config import ROLLOUT_ENGINES
from webapp.configs import as_validation_error
from webapp.api_base import CancelMixin, ProjectScopedSerializer, ReadOnlyScopedViewSet, ScopedViewSet, visible_field
from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun, SampleResult
from webapp.evals.services import launch_evaluation
from webapp.runs.api import JOB_FIELDS
from webapp.runs.models import Checkpoint


class BenchmarkSuiteSerializer(ProjectScopedSerializer):
    benchmarks = serializers.JSONField(help_text="Ordered list of {benchmark, samples_per_problem, max_tokens, "
                                                 "temperature, top_p, limit}.")

    class Meta:
        model = BenchmarkSuite
        fields = ("id", "project", "name", "description", "benchmarks", "created_at")

    def validate_benchmarks(self, value):
        try:
            return [config_to_dict(settings) for settings in parse_suite(value)]
        except ConfigError as error:
            raise as_validation_error(error) from None


class BenchmarkSuiteViewSet(ScopedViewSet):
    queryset = BenchmarkSuite.objects.all()
    serializer_class = BenchmarkSuiteSerializer
    filterset_fields = ("project",)


class EvalRunSerializer(ProjectScopedSerializer):
    same_project_fields = ("suite", "checkpoint")
    suite = visible_field(BenchmarkSuite)
    checkpoint = visible_field(Checkpoint, required=False, allow_null=True)
    rollout_engine = serializers.ChoiceField(choices=ROLLOUT_ENGINES, default="torch")
    owner = serializers.StringRelatedField()

    class Meta:
        model = EvalRun
        fields = ("id", "project", "suite", "checkpoint", "model", "rollout_engine", "seed", "owner", *JOB_FIELDS)
        read_only_fields = JOB_FIELDS

    def validate(self, attrs):
        attrs = super().validate(attrs)
        checkpoint = attrs.get("checkpoint", getattr(self.instance, "checkpoint", None))
        model = attrs.get("model", getattr(self.instance, "model", ""))
        if (checkpoint is None) == (not model):
            raise serializers.ValidationError({"checkpoint": "give either a checkpoint or a model, not both"})
        if self.instance is not None and self.instance.status != "queued" and attrs.keys() - {"project"}:
            raise serializers.ValidationError({"status": "an evaluation can change only while queued"})
        return attrs

    def create(self, validated_data):
        return launch_evaluation(owner=self.context["request"].user, **validated_data)


class EvalRunViewSet(CancelMixin, ScopedViewSet):
    queryset = EvalRun.objects.select_related("owner")
    serializer_class = EvalRunSerializer
    filterset_fields = ("project", "suite", "checkpoint", "status")


class BenchmarkResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = BenchmarkResult
        fields = ("id", "eval_run", "benchmark", "score", "ci_low", "ci_high", "mean_response_tokens",
                  "num_problems", "samples_per_problem", "metrics")


class BenchmarkResultViewSet(ReadOnlyScopedViewSet):
    """Per-benchmark scores, written by evaluation workers."""

    queryset = BenchmarkResult.objects.all()
    serializer_class = BenchmarkResultSerializer
    filterset_fields = ("eval_run", "benchmark")


class SampleResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = SampleResult
        fields = ("id", "eval_run", "benchmark", "problem_id", "sample_index", "response", "response_tokens",
                  "correct", "truncated", "extracted_answer")


class SampleResultFilter(django_filters.FilterSet):
    min_tokens = django_filters.NumberFilter(field_name="response_tokens", lookup_expr="gte")
    max_tokens = django_filters.NumberFilter(field_name="response_tokens", lookup_expr="lte")

    class Meta:
        model = SampleResult
        fields = ("eval_run", "benchmark", "problem_id", "correct", "truncated")


class SampleResultViewSet(ReadOnlyScopedViewSet):
    """Per-sample rows; filter by run, benchmark, correctness, truncation and length."""

    queryset = SampleResult.objects.all()
    serializer_class = SampleResultSerializer
    filterset_class = SampleResultFilter
