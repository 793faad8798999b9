"""Template helpers of the browser pages."""

from django import template
from django.template.defaultfilters import floatformat

from common.sizes import decimal_size
from webapp.evals import tables
from webapp.pages import job_waiting

register = template.Library()


@register.simple_tag(takes_context=True)
def active_when(context, *url_name_prefixes: str) -> str:
    """'active' when the current URL name starts with one of the prefixes (for the nav)."""
    match = getattr(context.get("request"), "resolver_match", None)
    url_name = (match.url_name or "") if match else ""
    return "active" if url_name.startswith(url_name_prefixes) else ""


@register.simple_tag
def no_worker_hint(job) -> str:
    """What to check when the job waits in its queue with no worker starting it; '' otherwise (job_waiting)."""
    return job_waiting.no_worker_hint(job)


@register.filter
def percent(fraction, digits: int = 1) -> str:
    """0.4567 -> '45.7%', rounded as the table exports round (halves up); empty for None (or a missing value,
    which templates give as '')."""
    if fraction is None or fraction == "":
        return ""
    value = tables.percent(float(fraction), int(digits))
    return "" if value is None else f"{value:.{digits}f}%"


@register.filter
def result_score(result, field: str = "score") -> str:
    """A benchmark result's score (or ci_low, ci_high) as tables show it: '45.7%' for a fraction, '25.6 bleu_max'
    for an lm-eval metric on its own scale; empty when missing."""
    value = tables.shown(result, getattr(result, field))
    if value is None:
        return ""
    return f"{value:.1f}%" if result.score_is_fraction else f"{value:.1f} {result.score_unit}"


@register.filter
def scientific(value, digits: int = 1) -> str:
    """0.000000213 -> '2.1e-07' (small values such as a sampler-trainer KL); empty for None or a missing value."""
    if value is None or value == "":
        return ""
    return f"{value:.{digits}e}"


@register.filter
def size(size_bytes) -> str:
    """6_900_000 -> '6.9 MB': decimal units, as the run log writes a checkpoint's size (common.sizes); empty for
    None or a missing value."""
    if size_bytes is None or size_bytes == "":
        return ""
    return decimal_size(size_bytes)


@register.filter
def metric_value(value) -> str:
    """A stored metric as text: a number with three decimals (a whole number as is), a string as is, a dict as
    `key=value` pairs (sampling settings: temperature=0.6, max_tokens=512), a list comma-separated; '—' for None."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return floatformat(value, 3)
    return setting_text(value)


def setting_text(value) -> str:
    """A value inside a metric as written in a config: 0.6, 512, greedy, key=value pairs, a list comma-separated."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{key}={setting_text(item)}" for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(setting_text(item) for item in value)
    return str(value)  # a string, a whole number, a boolean, None
