"""Input limits checked before any work: request body size (a middleware) and prompt-set contents."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse

from common.sizes import decimal_size


class RequestSizeLimitMiddleware:
    """413 for a request whose declared body is over MAX_REQUEST_BYTES, before anything reads it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"detail": "Content-Length is not a number"}, status=400)
        if length > settings.MAX_REQUEST_BYTES:
            return JsonResponse({"detail": f"the request body ({decimal_size(length)}) is over the limit of "
                                           f"{decimal_size(settings.MAX_REQUEST_BYTES)} (MIRRORLAB_MAX_REQUEST_BYTES)"},
                                status=413)
        return self.get_response(request)


def upload_size_error(size: int) -> str | None:
    """Why an uploaded file is refused for its size, or None."""
    if size > settings.MAX_UPLOAD_BYTES:
        return (f"the file ({decimal_size(size)}) is over the upload limit of "
                f"{decimal_size(settings.MAX_UPLOAD_BYTES)} (MIRRORLAB_MAX_UPLOAD_BYTES); import larger datasets from "
                "the hub or an import root")
    return None
