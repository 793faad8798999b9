"""URL map: pages, the REST API under /api/, the OpenAPI schema, admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("webapp.api_urls")),
    path("api/auth/", include("rest_framework.urls")),  # login for the browsable API
    path("", include("webapp.pages.urls")),
]
