"""Login throttling with django-axes: the client's address, how long a lockout lasts, the answer a locked-out
login gets (the login form with an error, or JSON for the API), always with Retry-After."""

from __future__ import annotations

import math

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off, get_failure_limit
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils import timezone


def client_ip_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or with LOGIN_TRUSTED_PROXIES = n > 0 the address the outermost of those n proxies saw
    (the n-th entry from the right of X-Forwarded-For; entries further left are the client's to forge)."""
    proxies = settings.LOGIN_TRUSTED_PROXIES
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if proxies and len(forwarded) >= proxies:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "")


def seconds_until_unlocked(request: HttpRequest, credentials: dict | None) -> int:
    """Seconds until every lockout (by username, by address) that holds this login has fewer failures than the
    limit inside the cool-off window. Axes keeps one row per (username, address, user agent) with its
    failure count and last failure time; a row leaves the window a cool-off after its last failure."""
    limit = get_failure_limit(request, credentials)
    cool_off = get_cool_off(request)
    unlocked_at = timezone.now()
    for attempts in AxesProxyHandler.get_implementation().get_user_attempts(request, credentials):
        failures = 0
        for attempt in attempts.order_by("-attempt_time"):
            failures += attempt.failures_since_start
            if failures >= limit:  # the window drops below the limit once this row (and older ones) leave it
                unlocked_at = max(unlocked_at, attempt.attempt_time + cool_off)
                break
    return max(1, math.ceil((unlocked_at - timezone.now()).total_seconds()))


LOCKOUT_REASON = "Too many failed logins for this username or from this address."


def lockout_message(seconds: int) -> str:
    minutes = math.ceil(seconds / 60)
    return f"{LOCKOUT_REASON} Try again in {minutes} minute{'s' if minutes != 1 else ''}."


def lockout_response(request: HttpRequest, original_response: HttpResponse | None,
                     credentials: dict | None) -> HttpResponse:
    """429 with Retry-After: a login page shows its form again with the lockout as the form's error; other
    callers (the API) get {"detail": ...}. Axes' middleware calls this for a locked-out login."""
    seconds = seconds_until_unlocked(request, credentials)
    message = lockout_message(seconds)
    form = (getattr(original_response, "context_data", None) or {}).get("form")
    if form is not None:
        form.errors.clear()  # "enter a correct username and password" would mislead: the password went unchecked
        form.add_error(None, message)
        response = TemplateResponse(request, original_response.template_name, original_response.context_data,
                                    status=429)
        response.render()
    else:
        response = JsonResponse({"detail": message}, status=429)
    response["Retry-After"] = str(seconds)
    return response
