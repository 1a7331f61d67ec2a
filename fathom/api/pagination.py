from rest_framework.pagination import CursorPagination


class CreatedCursorPagination(CursorPagination):
    """Newest first, stable under inserts; `?page_size=` up to 500."""

    ordering = ("-created_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 500
