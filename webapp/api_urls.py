"""The REST API router, the OpenAPI schema and token login."""

from django.conf import settings
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.routers import DefaultRouter

from webapp.accounts.api import ObtainAuthTokenView
from webapp.evals.api import (
    BenchmarkResultViewSet, BenchmarkSuiteViewSet, BenchmarkTableViewSet, EvalRunViewSet, SampleResultViewSet,
)
from webapp.long2short.api import Long2ShortRecordViewSet, Long2ShortVariantViewSet
from webapp.projects.api import ProjectViewSet
from webapp.prompts.api import PromptSetViewSet, PromptViewSet
from webapp.runs.api import CheckpointViewSet, IterationMetricViewSet, RLRunViewSet, TrainingSampleViewSet


def schema_permissions():
    """The schema and its docs page: for logged-in users, or anyone when settings.PUBLIC_API_SCHEMA."""
    return [AllowAny() if settings.PUBLIC_API_SCHEMA else IsAuthenticated()]


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema (YAML, or JSON with ?format=json)."""

    def get_permissions(self):
        return schema_permissions()


class DocsView(SpectacularSwaggerView):
    """The schema drawn by Swagger UI: every endpoint with its fields and answers, tried from the page with the
    session's login."""

    def get_permissions(self):
        return schema_permissions()


router = DefaultRouter()
router.register("projects", ProjectViewSet)
router.register("prompt-sets", PromptSetViewSet)
router.register("prompts", PromptViewSet)
router.register("runs", RLRunViewSet)
router.register("iteration-metrics", IterationMetricViewSet)
router.register("training-samples", TrainingSampleViewSet)
router.register("checkpoints", CheckpointViewSet)
router.register("suites", BenchmarkSuiteViewSet)
router.register("evaluations", EvalRunViewSet)
router.register("benchmark-results", BenchmarkResultViewSet)
router.register("samples", SampleResultViewSet)
router.register("benchmark-tables", BenchmarkTableViewSet, basename="benchmark-table")
router.register("variants", Long2ShortVariantViewSet)
router.register("variant-records", Long2ShortRecordViewSet)

urlpatterns = [
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("token/", ObtainAuthTokenView.as_view(), name="api-token"),
    path("", include(router.urls)),
]
