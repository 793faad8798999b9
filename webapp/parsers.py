"""The REST API's JSON parser: input a database or a worker would choke on is refused as bad input naming where.

Python's json module accepts NaN and Infinity (not JSON), recurses without a bound, and passes NUL
characters that Postgres cannot store; each of those used to end as a server error, or as a parse error
that named no field. The checks live in common.json_checks, which the prompt-file reader shares. Only this
parser reads API bodies, except the prompt-set endpoints' file uploads (multipart; webapp.prompts.api).
"""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from common.json_checks import NonFinite, first_bad_value, nesting_depth


class StrictJSONParser(JSONParser):
    """JSON bodies with finite numbers only, no NUL characters, and at most MAX_JSON_DEPTH levels of nesting."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        raw = stream.read(settings.MAX_JSON_BYTES + 1) if stream is not None else b""
        if len(raw) > settings.MAX_JSON_BYTES:
            raise ParseError(f"JSON body: over {settings.MAX_JSON_BYTES} bytes (MIRRORLAB_MAX_JSON_BYTES); send "
                             "files as multipart uploads")
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as error:
            raise ParseError(f"JSON body: not {encoding} text (byte {error.start})") from None
        depth = nesting_depth(text)
        if depth > settings.MAX_JSON_DEPTH:
            raise ParseError(f"JSON body: nested {depth} levels deep; at most {settings.MAX_JSON_DEPTH}")
        try:
            data = json.loads(text, parse_constant=NonFinite)
        except ValueError as error:
            raise ParseError(f"JSON parse error - {error}") from None
        if problem := first_bad_value(data):
            raise ParseError(problem)
        return data
