"""Browser pages: login, home, project switcher, prompt sets, runs, suites, evaluations."""

from django.contrib.auth import views as auth_views
from django.urls import path

from webapp.pages import evaluation_views, prompt_set_views, run_views, views

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("projects/switch/", views.switch_project, name="switch-project"),
    path("prompt-sets/", prompt_set_views.prompt_set_list, name="prompt-set-list"),
    path("prompt-sets/upload/", prompt_set_views.prompt_set_upload, name="prompt-set-upload"),
    path("prompt-sets/<int:pk>/", prompt_set_views.prompt_set_detail, name="prompt-set-detail"),
    path("runs/", run_views.run_list, name="run-list"),
    path("runs/launch/", run_views.run_launch, name="run-launch"),
    path("runs/<int:pk>/", run_views.run_detail, name="run-detail"),
    path("runs/<int:pk>/status/", run_views.run_status, name="run-status"),
    path("runs/<int:pk>/cancel/", run_views.run_cancel, name="run-cancel"),
    path("suites/", evaluation_views.suite_list, name="suite-list"),
    path("suites/<int:pk>/", evaluation_views.suite_detail, name="suite-detail"),
    path("evaluations/", evaluation_views.evaluation_list, name="evaluation-list"),
    path("evaluations/<int:pk>/", evaluation_views.evaluation_detail, name="evaluation-detail"),
    path("evaluations/<int:pk>/samples/", evaluation_views.evaluation_samples, name="evaluation-samples"),
    path("evaluations/<int:pk>/cancel/", evaluation_views.evaluation_cancel, name="evaluation-cancel"),
]
