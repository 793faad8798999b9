"""The REST API's pagination (its own module: DRF imports it while loading its generic views)."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination

MAX_PAGE_SIZE = 500


class Pagination(PageNumberPagination):
    """?page= and ?page_size= (at most MAX_PAGE_SIZE; API_PAGE_SIZE when omitted)."""

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
