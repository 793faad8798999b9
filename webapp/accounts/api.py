"""The API's token login, throttled like the login page."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.response import Response

from webapp.accounts.lockout import LOCKOUT_REASON, seconds_until_unlocked
from webapp.api_schema import error


class ObtainAuthTokenView(ObtainAuthToken):
    """POST username and password, get the user's token. Failed logins count towards the same lockout as the
    login page (per username and per client address); a locked-out login answers 429 with Retry-After."""

    @extend_schema(
        responses={
            200: inline_serializer("AuthToken", {"token": serializers.CharField()}),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Wrong username or password, or a field is "
                                                                  "missing: {field: [reasons]}."),
            429: error("Too many failed logins; Retry-After says in how many seconds to try again."),
        },
        auth=[],
    )
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        valid = serializer.is_valid()
        if getattr(request, "axes_locked_out", False):  # set by django-axes while authenticating
            seconds = seconds_until_unlocked(request, getattr(request, "axes_credentials", None))
            raise Throttled(wait=seconds, detail=LOCKOUT_REASON)  # "... Expected available in N seconds."
        if not valid:
            raise ValidationError(serializer.errors)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})
