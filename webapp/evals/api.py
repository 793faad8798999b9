"""REST API of benchmark suites, evaluation runs, results and per-sample rows."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_serializer, extend_schema_view,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.response import Response

from common.id_lists import MAX_ID, NotAnId, parse_id_list
from common.knobs import ConfigError, config_to_dict
from common.path_rules import PathRefused
from evaluation.suite_config import parse_suite
from training.config import ROLLOUT_ENGINES
from webapp.configs import as_validation_error
from webapp.api_base import (
    CancelMixin, Conflict, ProjectScopedSerializer, QueuedJobSerializerMixin, ReadOnlyScopedViewSet, ScopedViewSet,
    StrictSerializer, UniqueNameInProjectMixin, visible_field,
)
from webapp.api_filters import ResponseLengthFilter, StrictBooleanFilter
from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun, GraderAudit, SampleResult
from webapp.evals.services import (
    audit_grader, audit_refusal, disagreeing, launch_audit, launch_evaluation, length_curves,
)
from webapp.evals.table_renderers import (
    TABLE_FORMATS, TableCSVRenderer, TableJSONRenderer, TableLatexRenderer, TableMarkdownRenderer, TableRendererMixin,
    TableTextRenderer,
)
from webapp.evals.tables import BenchmarkTable, load_table
from webapp.path_policy import checked_model, suite_judge_changes
from webapp.api_schema import cancel_schema, error, updates_refused
from webapp.runs.api import JOB_FIELDS
from webapp.runs.models import Checkpoint


def patched_benchmarks(stored: list, given: Any) -> Any:
    """A PATCH's benchmark list: each entry keeps the stored settings of the same benchmark that it omits."""
    if not isinstance(given, list):
        return given
    by_name = {entry.get("benchmark"): entry for entry in stored if isinstance(entry, dict)}
    return [{**by_name.get(entry.get("benchmark"), {}), **entry} if isinstance(entry, dict) else entry
            for entry in given]


class BenchmarkSuiteSerializer(UniqueNameInProjectMixin, ProjectScopedSerializer):
    benchmarks = serializers.JSONField(help_text="Ordered list of {benchmark, samples_per_problem, max_tokens, "
                                                 "temperature, top_p, limit, extraction_policy, grader_mode, "
                                                 "judge_model, judge_max_tokens}. In a PATCH, an entry keeps the "
                                                 "stored settings of its benchmark that it omits.")

    class Meta:
        model = BenchmarkSuite
        fields = ("id", "project", "name", "description", "benchmarks", "created_at")

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if "benchmarks" in attrs:
            project = attrs.get("project") or self.instance.project
            attrs["benchmarks"], errors = suite_judge_changes(project.pk, self.resolved_benchmarks(attrs["benchmarks"]))
            if errors:
                raise serializers.ValidationError({name: [reason] for name, reason in errors.items()})
        return attrs

    def resolved_benchmarks(self, entries: Any) -> list[dict]:
        """Entries validated with defaults filled in; errors keyed "benchmarks[i].field", one level deep."""
        if self.partial and self.instance is not None:
            entries = patched_benchmarks(self.instance.benchmarks, entries)
        try:
            return [config_to_dict(settings) for settings in parse_suite(entries)]
        except ConfigError as error:
            raise as_validation_error(error) from None


def with_defaults(benchmarks: Any) -> Any:
    """Stored benchmarks with the settings added since they were stored filled in with their defaults."""
    try:
        return [config_to_dict(settings) for settings in parse_suite(benchmarks)]
    except ConfigError:
        return benchmarks


def refuse_changing_a_used_suite(suite: BenchmarkSuite, changes: dict) -> None:
    """409 when the benchmarks of a suite that evaluations or runs use would change (name, description may)."""
    if "benchmarks" not in changes or changes["benchmarks"] in (suite.benchmarks, with_defaults(suite.benchmarks)):
        return
    if usage := suite.usage():
        raise Conflict(f"suite '{suite.name}' is used by {usage}, so its benchmarks stay as they are and earlier "
                       f"scores stay comparable: create a new suite with your changes (POST /api/suites/)")


@extend_schema_view(**updates_refused(BenchmarkSuiteSerializer, "The suite is used by evaluations or runs, so its "
                                     "benchmarks cannot change; create a new suite."))
class BenchmarkSuiteViewSet(ScopedViewSet):
    """Benchmark suites; the benchmarks of a suite in use cannot change (409), its name and description can."""

    queryset = BenchmarkSuite.objects.all()
    serializer_class = BenchmarkSuiteSerializer
    filterset_fields = ("project",)

    def perform_update(self, serializer):
        refuse_changing_a_used_suite(serializer.instance, serializer.validated_data)
        super().perform_update(serializer)


MODEL_MAX_LENGTH = EvalRun._meta.get_field("model").max_length  # of the model as stored: a path resolved


def checkpoint_or_model_error(checkpoint, model: str) -> str | None:
    """An evaluation names exactly one of a checkpoint and a model (shared by this API and the page form)."""
    if checkpoint is None and not model:
        return "give a checkpoint or a model to evaluate (a preset such as 'tiny', a local folder or a hub id)"
    if checkpoint is not None and model:
        return "give a checkpoint or a model, not both"
    return None


class EvalRunSerializer(QueuedJobSerializerMixin, ProjectScopedSerializer):
    same_project_fields = ("suite", "checkpoint")
    job_noun = "evaluation"
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
        if error := checkpoint_or_model_error(checkpoint, model):
            raise serializers.ValidationError({"checkpoint": error})
        if attrs.get("checkpoint") is not None and (error := attrs["checkpoint"].files_removed_error()):
            raise serializers.ValidationError({"checkpoint": [error]})
        if attrs.get("model"):
            project = attrs.get("project") or self.instance.project
            try:
                attrs["model"] = checked_model(project.pk, attrs["model"], max_length=MODEL_MAX_LENGTH)
            except PathRefused as refused:
                raise serializers.ValidationError({refused.field: [refused.reason]}) from None
        return attrs

    def create(self, validated_data):
        try:
            return launch_evaluation(owner=self.context["request"].user, **validated_data)
        except PathRefused as refused:  # the checkpoint's files were removed since validate
            raise serializers.ValidationError({refused.field: [refused.reason]}) from None


class GraderAuditSerializer(serializers.ModelSerializer):
    owner = serializers.StringRelatedField()

    class Meta:
        model = GraderAudit
        fields = ("id", "eval_run", "grader", "summary", "owner", *JOB_FIELDS)
        read_only_fields = fields


class AuditRequestSerializer(StrictSerializer):
    """The second grader of an audit (evaluation.suite_config.AuditGrader); omitted knobs take their defaults."""

    grader_mode = serializers.CharField(required=False, help_text="rule, judge or rule_then_judge.")
    extraction_policy = serializers.CharField(required=False, help_text="flexible or boxed.")
    judge_model = serializers.CharField(required=False, allow_null=True, allow_blank=True,
                                        help_text="The judge model of modes judge and rule_then_judge.")
    judge_max_tokens = serializers.IntegerField(required=False)

    def validate(self, attrs):
        try:
            grader = audit_grader(attrs)
        except ConfigError as error:
            raise as_validation_error(error) from None
        if grader.get("judge_model"):  # the path rule of the audited evaluation's project
            try:
                grader["judge_model"] = checked_model(self.context["project"].pk, grader["judge_model"],
                                                      "judge_model")
            except PathRefused as refused:
                raise serializers.ValidationError({refused.field: [refused.reason]}) from None
        return grader


class LengthCurveQuerySerializer(serializers.Serializer):
    """Which benchmark's samples to bin, and how wide a bin is."""

    benchmark = serializers.CharField(required=False, max_length=200,
                                      help_text="Only this benchmark of the evaluation (default: every one).")
    bin_tokens = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000,
                                          help_text="Tokens per bin (default: the longest response / 16).")


class LengthBinSerializer(serializers.Serializer):
    bin_start = serializers.IntegerField(help_text="First token count of the bin.")
    samples = serializers.IntegerField()
    accuracy = serializers.FloatField(help_text="Correct samples in the bin / samples in the bin (0 to 1).")
    mean_tokens = serializers.FloatField()
    truncated = serializers.IntegerField(help_text="Samples of the bin cut off at max_tokens.")


class LengthCurveSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    bin_tokens = serializers.IntegerField()
    bins = LengthBinSerializer(many=True, help_text="Bins holding samples, by length (empty bins left out).")


class LengthCurvesSerializer(serializers.Serializer):
    curves = LengthCurveSerializer(many=True, help_text="One per benchmark with samples, by name.")


@extend_schema_view(cancel=cancel_schema(EvalRunSerializer))
class EvalRunViewSet(CancelMixin, ScopedViewSet):
    queryset = EvalRun.objects.select_related("owner")
    serializer_class = EvalRunSerializer
    filterset_fields = ("project", "suite", "checkpoint", "status")

    @extend_schema(methods=["GET"], filters=False, responses=GraderAuditSerializer(many=True))
    @extend_schema(methods=["POST"], request=AuditRequestSerializer, responses={
        201: GraderAuditSerializer, 409: error("The evaluation has not succeeded: only final samples are audited.")})
    @action(detail=True, methods=["get", "post"], pagination_class=None)
    def audits(self, request, pk=None):
        """GET: this evaluation's grader audits, newest first. POST: grade its stored samples again with a second
        grader (another extraction policy, or the CoT judge), without regenerating; 409 unless it succeeded."""
        eval_run = self.get_object()
        if request.method == "GET":
            return Response(GraderAuditSerializer(eval_run.audits.select_related("owner"), many=True).data)
        grader = AuditRequestSerializer(data=request.data, context={"project": eval_run.project})
        grader.is_valid(raise_exception=True)
        if reason := audit_refusal(eval_run):
            raise Conflict(reason)
        audit = launch_audit(eval_run, grader.validated_data, owner=request.user)
        return Response(GraderAuditSerializer(audit).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[LengthCurveQuerySerializer], filters=False, responses={
        200: LengthCurvesSerializer,
        400: OpenApiResponse(OpenApiTypes.OBJECT, description="A parameter is invalid, or the evaluation has no "
                                                              "such benchmark; the body names it.")})
    @action(detail=True, methods=["get"], url_path="length-curve", pagination_class=None)
    def length_curve(self, request, pk=None):
        """Accuracy by response length: each benchmark's samples binned by response tokens (report figure 5's
        question: where does accuracy fall as responses grow?); `benchmark` picks one."""
        eval_run = self.get_object()
        query = LengthCurveQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        benchmarks = sorted(set(eval_run.samples.values_list("benchmark", flat=True).distinct()))
        chosen = query.validated_data.get("benchmark")
        if chosen is not None and chosen not in benchmarks:
            raise serializers.ValidationError({"benchmark": [f"evaluation {eval_run.pk} has no samples of "
                                                             f"{chosen!r}; it has: {', '.join(benchmarks) or 'none'}"]})
        curves = length_curves(eval_run.pk, [chosen] if chosen else benchmarks, query.validated_data.get("bin_tokens"))
        return Response({"curves": curves})


class BenchmarkResultSerializer(serializers.ModelSerializer):
    extraction_policy = serializers.CharField(read_only=True, help_text="How final answers were extracted; empty "
                                                                        "where none are.")
    audit_disagreement_rate = serializers.FloatField(
        read_only=True, allow_null=True, help_text="The latest grader audit: disagreements / audited samples.")

    class Meta:
        model = BenchmarkResult
        fields = ("id", "eval_run", "benchmark", "score", "ci_low", "ci_high", "mean_response_tokens",
                  "num_problems", "samples_per_problem", "metrics", "extraction_policy", "audit", "audit_samples",
                  "audit_disagreements", "audit_disagreement_rate")


class BenchmarkResultViewSet(ReadOnlyScopedViewSet):
    """Per-benchmark scores, written by evaluation workers."""

    queryset = BenchmarkResult.objects.all()
    serializer_class = BenchmarkResultSerializer
    filterset_fields = ("eval_run", "benchmark")


class SampleResultSerializer(serializers.ModelSerializer):
    audit_disagrees = serializers.BooleanField(read_only=True, help_text="The latest audit's verdict differs.")

    class Meta:
        model = SampleResult
        fields = ("id", "eval_run", "benchmark", "problem_id", "sample_index", "response", "response_tokens",
                  "correct", "truncated", "extracted_answer", "reference_answer", "detail", "extraction_policy",
                  "graded_by", "judge_verdict", "judge_reasoning", "audit_correct", "audit_answer", "audit_detail",
                  "audit_disagrees")


class SampleResultFilter(ResponseLengthFilter):
    audit_disagrees = StrictBooleanFilter(method="filter_audit_disagrees",
                                                   label="Only samples where the latest audit disagrees (true).")

    class Meta:
        model = SampleResult
        fields = ("eval_run", "benchmark", "problem_id", "correct", "truncated", "graded_by", "judge_verdict",
                  "audit_correct")

    def filter_audit_disagrees(self, queryset, name, value):
        disagreeing_samples = disagreeing(queryset)
        return disagreeing_samples if value else queryset.exclude(pk__in=disagreeing_samples.values("pk"))


class SampleResultViewSet(ReadOnlyScopedViewSet):
    """Per-sample rows; filter by run, benchmark, correctness, truncation and length."""

    queryset = SampleResult.objects.all()
    serializer_class = SampleResultSerializer
    filterset_class = SampleResultFilter


TABLE_SELECTORS = ("evaluations", "suite", "project")


class IdListField(serializers.CharField):
    """Comma-separated positive ids ("3,1,2"), or the parameter repeated; order kept, repeats dropped."""

    default_error_messages = {
        "not_an_id": "'{value}' is not an id: give positive whole numbers separated by commas.",
        "no_ids": "Give at least one id.",
    }

    def __init__(self, **kwargs):
        super().__init__(allow_blank=True, **kwargs)

    def get_value(self, dictionary):
        if hasattr(dictionary, "getlist") and self.field_name in dictionary:
            return ",".join(dictionary.getlist(self.field_name))
        return super().get_value(dictionary)

    def to_internal_value(self, data):
        try:
            ids = parse_id_list(super().to_internal_value(data))
        except NotAnId as error:
            self.fail("not_an_id", value=error.part)
        if not ids:
            self.fail("no_ids")
        return ids


class BenchmarkTableQuerySerializer(serializers.Serializer):
    """The table's rows (at most one of evaluations, suite, project; none: every evaluation you can see)."""

    evaluations = IdListField(required=False, help_text="Evaluation ids, comma-separated, in row order.")
    suite = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID,
                                     help_text="Every evaluation of this suite, oldest first.")
    project = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID,
                                       help_text="Every evaluation of this project, oldest first.")
    include_unfinished = serializers.BooleanField(
        default=False, help_text="Also evaluations that have not succeeded (queued, running, failed, cancelled).")
    tokens = serializers.BooleanField(default=False,
                                      help_text="Markdown and LaTeX: a mean-response-tokens column per benchmark.")

    def validate(self, attrs):
        chosen = [name for name in TABLE_SELECTORS if name in attrs]
        if len(chosen) > 1:
            raise serializers.ValidationError({name: "give only one of evaluations, suite or project"
                                               for name in chosen})
        return attrs


class BenchmarkTableCellSerializer(serializers.Serializer):
    """Describes one cell of tables.table_to_json for the OpenAPI schema."""

    score = serializers.FloatField(help_text="Pass@1 in percent, one decimal (77.5); in `unit` where that is not "
                                             "percent (an lm-eval metric on its own scale: BLEU, a perplexity).")
    ci_low = serializers.FloatField(allow_null=True, help_text="95% confidence interval, low end, in `unit`.")
    ci_high = serializers.FloatField(allow_null=True, help_text="95% confidence interval, high end, in `unit`.")
    mean_tokens = serializers.IntegerField(allow_null=True, help_text="Mean response length, tokens.")
    num_problems = serializers.IntegerField()
    samples_per_problem = serializers.IntegerField()
    best = serializers.BooleanField(help_text="The column's best score (the lowest where lower is better; ties "
                                              "included; needs two scores or more).")
    extraction_policy = serializers.CharField(help_text="How final answers were extracted; empty where none are.")
    audit_samples = serializers.IntegerField(allow_null=True, help_text="The latest grader audit's samples.")
    audit_disagreements = serializers.IntegerField(allow_null=True, help_text="Of them, those it graded otherwise.")
    audit_disagreement = serializers.FloatField(allow_null=True, help_text="Disagreements in percent of audited "
                                                                           "samples, one decimal.")
    unit = serializers.CharField(help_text="'percent', or the lm-eval metric a raw score is a value of ('bleu_max').")


class BenchmarkTableRowSerializer(serializers.Serializer):
    evaluation = serializers.IntegerField(help_text="Evaluation id.")
    label = serializers.CharField(help_text="Checkpoint's run and iteration ('run-1 @ 40'), else the model.")
    status = serializers.CharField()
    cells = serializers.DictField(child=BenchmarkTableCellSerializer(),
                                  help_text="By benchmark name; a benchmark without a result is left out.")


@extend_schema_serializer(many=False)
class BenchmarkTableSerializer(serializers.Serializer):
    """Describes tables.table_to_json (the JSON format) for the OpenAPI schema."""

    suite = serializers.IntegerField(allow_null=True, help_text="The suite every row shares, else null.")
    columns = serializers.ListField(child=serializers.CharField(), help_text="Benchmark names.")
    rows = BenchmarkTableRowSerializer(many=True)


def text_file(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=OpenApiTypes.STR, description=description)


class BenchmarkTableViewSet(viewsets.ViewSet):
    """Models by benchmark (like the Kimi k1.5 report's tables 2 and 3) as JSON, CSV, Markdown or LaTeX.

    Pick the format with ?format=json|csv|md|latex or the Accept header. Only succeeded evaluations
    count unless include_unfinished=1; scores and intervals are percentages with one decimal.
    """

    renderer_classes = [TableJSONRenderer, BrowsableAPIRenderer, TableCSVRenderer, TableMarkdownRenderer,
                        TableLatexRenderer]
    table_options: dict = {}  # read by the text renderers

    @extend_schema(
        parameters=[BenchmarkTableQuerySerializer,
                    OpenApiParameter("format", str, enum=list(TABLE_FORMATS), description="Output format "
                                     "(else chosen by the Accept header; JSON by default).")],
        responses={
            (200, TableJSONRenderer.media_type): BenchmarkTableSerializer,
            (200, TableCSVRenderer.media_type): text_file("One header row; per benchmark: score, ci_low, ci_high, "
                                                          "mean_tokens, num_problems, samples_per_problem, "
                                                          "extraction_policy, audit_disagreement."),
            (200, TableMarkdownRenderer.media_type): text_file("A pipe table; cells '77.5 [70.1, 84.2]'."),
            (200, TableLatexRenderer.media_type): text_file("A booktabs tabular, the best score per column bold."),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="A parameter is invalid; the body names it."),
            404: error("An evaluation, suite or project you cannot see."),
        },
    )
    def list(self, request):
        query = BenchmarkTableQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        options = query.validated_data
        self.table_options = {"tokens": options["tokens"]}
        table = load_table(request.user, evaluation_ids=options.get("evaluations"), suite_id=options.get("suite"),
                           project_id=options.get("project"), include_unfinished=options["include_unfinished"])
        return Response(table)

    def perform_content_negotiation(self, request, force=False):
        """An unknown ?format= is a 400 naming the parameter (DRF's default answers 404)."""
        try:
            return super().perform_content_negotiation(request, force)
        except Http404:
            raise serializers.ValidationError(
                {"format": f"unknown format; choose one of {', '.join(TABLE_FORMATS)}"}) from None

    def finalize_response(self, request, response, *args, **kwargs):
        """Errors answer in JSON whatever format was asked; a table download gets its file name."""
        if getattr(response, "exception", False) and isinstance(getattr(request, "accepted_renderer", None),
                                                                TableTextRenderer):
            request.accepted_renderer, request.accepted_media_type = TableJSONRenderer(), TableJSONRenderer.media_type
        response = super().finalize_response(request, response, *args, **kwargs)
        renderer = getattr(response, "accepted_renderer", None)
        if isinstance(renderer, TableRendererMixin) and isinstance(getattr(response, "data", None), BenchmarkTable):
            response["Content-Disposition"] = renderer.content_disposition(response.data)
        return response
