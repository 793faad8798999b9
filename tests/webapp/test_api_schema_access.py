"""The OpenAPI schema needs a login unless PUBLIC_API_SCHEMA (MIRRORLAB_PUBLIC_API_SCHEMA) is set."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_the_schema_needs_a_login_by_default(api_for, alice):
    assert APIClient().get("/api/schema/").status_code == 403
    assert api_for(alice).get("/api/schema/").status_code == 200


def test_the_schema_is_public_when_the_setting_says_so(settings):
    settings.PUBLIC_API_SCHEMA = True
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    assert b"openapi" in response.content


def test_the_docs_page_draws_the_schema_from_local_files(client_for, alice, settings):
    from django.contrib.staticfiles import finders

    assert APIClient().get("/api/docs/").status_code == 403
    page = client_for(alice).get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/api/schema/" in html and "SwaggerUIBundle" in html
    bundle = "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"
    assert bundle in html and "cdn" not in html  # an offline lab still gets the page
    assert finders.find(bundle.removeprefix("/static/")) is not None
    settings.PUBLIC_API_SCHEMA = True
    assert APIClient().get("/api/docs/").status_code == 200
