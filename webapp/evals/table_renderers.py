"""DRF renderers of benchmark tables: JSON, CSV, Markdown and LaTeX (chosen by ?format= or the Accept header)."""

from __future__ import annotations

import re

from rest_framework.renderers import BaseRenderer, JSONRenderer

from webapp.evals.tables import BenchmarkTable, table_to_csv, table_to_json, table_to_latex, table_to_markdown


UNSAFE_FILE_NAME_RUN = re.compile(r"[^A-Za-z0-9._-]+")
FILE_NAME_LENGTH = 150


def safe_file_name(name: str) -> str:
    """A name a header cannot be broken out of: ASCII letters, digits, '.', '_' and '-' ('x"; y' -> 'x-y')."""
    return UNSAFE_FILE_NAME_RUN.sub("-", name)[:FILE_NAME_LENGTH].strip(".-") or "benchmark-table"


class TableRendererMixin:
    """A renderer whose output is a file named after the table: `<table.name>.<extension>`."""

    extension = ""
    disposition = "attachment"  # the browser saves the file

    def content_disposition(self, table: BenchmarkTable) -> str:
        return f'{self.disposition}; filename="{safe_file_name(table.name)}.{self.extension}"'

    @staticmethod
    def table_options(renderer_context) -> dict:
        """Display options the view validated ({"tokens": bool}), empty when rendered elsewhere."""
        view = (renderer_context or {}).get("view")
        return getattr(view, "table_options", {})


class TableJSONRenderer(TableRendererMixin, JSONRenderer):
    """Renders a BenchmarkTable as structured JSON (tables.table_to_json); other data as plain JSON."""

    extension = "json"
    disposition = "inline"  # an API client reads it; a browser shows it

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, BenchmarkTable):
            data = table_to_json(data)
        return super().render(data, accepted_media_type, renderer_context)


class TableTextRenderer(TableRendererMixin, BaseRenderer):
    """Base of the text formats: renders only a BenchmarkTable (the view answers errors in JSON)."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if not isinstance(data, BenchmarkTable):
            raise TypeError(f"{type(self).__name__} renders a BenchmarkTable, not {type(data).__name__}")
        return self.render_table(data, **self.table_options(renderer_context))

    def render_table(self, table: BenchmarkTable, tokens: bool = False) -> str:
        raise NotImplementedError


class TableCSVRenderer(TableTextRenderer):
    media_type = "text/csv"
    format = "csv"
    extension = "csv"

    def render_table(self, table: BenchmarkTable, tokens: bool = False) -> str:
        return table_to_csv(table)  # always carries mean tokens


class TableMarkdownRenderer(TableTextRenderer):
    media_type = "text/markdown"
    format = "md"
    extension = "md"

    def render_table(self, table: BenchmarkTable, tokens: bool = False) -> str:
        return table_to_markdown(table, tokens=tokens)


class TableLatexRenderer(TableTextRenderer):
    media_type = "application/x-latex"
    format = "latex"
    extension = "tex"

    def render_table(self, table: BenchmarkTable, tokens: bool = False) -> str:
        return table_to_latex(table, tokens=tokens)


TABLE_FORMATS = {renderer.format: renderer for renderer in
                 (TableJSONRenderer, TableCSVRenderer, TableMarkdownRenderer, TableLatexRenderer)}
