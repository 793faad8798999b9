"""Template helpers of the browser pages."""

from django import template

from webapp.evals import tables

register = template.Library()


@register.simple_tag(takes_context=True)
def active_when(context, *url_name_prefixes: str) -> str:
    """'active' when the current URL name starts with one of the prefixes (for the nav)."""
    match = getattr(context.get("request"), "resolver_match", None)
    url_name = (match.url_name or "") if match else ""
    return "active" if url_name.startswith(url_name_prefixes) else ""


@register.filter
def percent(fraction, digits: int = 1) -> str:
    """0.4567 -> '45.7%', rounded as the table exports round (halves up); empty for None (or a missing value,
    which templates give as '')."""
    if fraction is None or fraction == "":
        return ""
    value = tables.percent(float(fraction), int(digits))
    return "" if value is None else f"{value:.{digits}f}%"


@register.filter
def scientific(value, digits: int = 1) -> str:
    """0.000000213 -> '2.1e-07' (small values such as a sampler-trainer KL); empty for None or a missing value."""
    if value is None or value == "":
        return ""
    return f"{value:.{digits}e}"
