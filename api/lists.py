"""What every API view reads the same way: pages of a list, its filters, a request body."""

from __future__ import annotations

from typing import Any

from rest_framework import pagination, serializers
from rest_framework.request import Request


class CursorPages(pagination.CursorPagination):
    """Stable pages under concurrent writes; the view's `ordering` (or `?ordering=`) sets the order."""

    page_size_query_param = "page_size"
    max_page_size = 500


class NewestFirst(CursorPages):
    """The logs' order (messages, dead letters): newest first."""

    ordering = ("-created_at", "-id")


def read_filters(filters: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """Return the query parameters `filters` declares, or raise 400 naming the bad ones."""
    return read_fields(filters, request.query_params)


def read_fields(fields: type[serializers.Serializer], data: object) -> dict[str, Any]:
    """Return `data` (a body, a query string) as `fields` validates it, or raise 400 naming the bad fields."""
    given = fields(data=data)
    given.is_valid(raise_exception=True)
    return dict(given.validated_data)
