"""Pagination and filters of the API's lists."""

from __future__ import annotations

from typing import Any

from rest_framework import pagination, serializers
from rest_framework.request import Request


class CursorPages(pagination.CursorPagination):
    """Stable pages under concurrent writes; the view's `ordering` (or `?ordering=`) sets the order."""

    page_size_query_param = "page_size"
    max_page_size = 500


def read_filters(filters: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """Return the query parameters `filters` declares, or raise 400 naming the bad ones."""
    given = filters(data=request.query_params)
    given.is_valid(raise_exception=True)
    return dict(given.validated_data)
