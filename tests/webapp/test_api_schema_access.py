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
