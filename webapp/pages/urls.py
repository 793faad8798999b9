"""Browser pages: login, home, project switcher, prompt sets, runs, suites, evaluations, compare, long2short, tables."""

from django.contrib.auth import views as auth_views
from django.urls import path

from webapp.pages import (
    compare_views, evaluation_views, long2short_views, project_views, prompt_set_views, run_views, table_views, views,
)

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("projects/switch/", views.switch_project, name="switch-project"),
    path("projects/new/", project_views.project_create, name="project-create"),
    path("projects/<int:pk>/members/", project_views.project_members, name="project-members"),
    path("prompt-sets/", prompt_set_views.prompt_set_list, name="prompt-set-list"),
    path("prompt-sets/upload/", prompt_set_views.prompt_set_upload, name="prompt-set-upload"),
    path("prompt-sets/<int:pk>/", prompt_set_views.prompt_set_detail, name="prompt-set-detail"),
    path("prompt-sets/import/", prompt_set_views.prompt_set_import, name="prompt-set-import"),
    path("prompt-sets/imports/<int:pk>/", prompt_set_views.prompt_set_import_detail, name="prompt-set-import-detail"),
    path("prompt-sets/imports/<int:pk>/cancel/", prompt_set_views.prompt_set_import_cancel,
         name="prompt-set-import-cancel"),
    path("runs/", run_views.run_list, name="run-list"),
    path("runs/launch/", run_views.run_launch, name="run-launch"),
    path("runs/<int:pk>/", run_views.run_detail, name="run-detail"),
    path("runs/<int:pk>/status/", run_views.run_status, name="run-status"),
    path("runs/<int:pk>/cancel/", run_views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/resume/", run_views.run_resume, name="run-resume"),
    path("runs/<int:pk>/samples/", run_views.run_samples, name="run-samples"),
    path("suites/", evaluation_views.suite_list, name="suite-list"),
    path("suites/<int:pk>/", evaluation_views.suite_detail, name="suite-detail"),
    path("suites/new/", evaluation_views.suite_create, name="suite-create"),
    path("suites/<int:pk>/edit/", evaluation_views.suite_edit, name="suite-edit"),
    path("evaluations/", evaluation_views.evaluation_list, name="evaluation-list"),
    path("evaluations/<int:pk>/", evaluation_views.evaluation_detail, name="evaluation-detail"),
    path("evaluations/new/", evaluation_views.evaluation_launch, name="evaluation-launch"),
    path("evaluations/<int:pk>/samples/", evaluation_views.evaluation_samples, name="evaluation-samples"),
    path("evaluations/<int:pk>/cancel/", evaluation_views.evaluation_cancel, name="evaluation-cancel"),
    path("compare/", compare_views.compare, name="compare"),
    path("compare/data/", compare_views.compare_data, name="compare-data"),
    path("long2short/", long2short_views.dashboard, name="long2short-dashboard"),
    path("long2short/variants/", long2short_views.variant_list, name="variant-list"),
    path("long2short/variants/launch/", long2short_views.variant_launch, name="variant-launch"),
    path("long2short/variants/<int:pk>/", long2short_views.variant_detail, name="variant-detail"),
    path("long2short/variants/<int:pk>/cancel/", long2short_views.variant_cancel, name="variant-cancel"),
    path("tables/", table_views.benchmark_tables, name="benchmark-tables"),
]
