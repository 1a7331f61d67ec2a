from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination


class StrictCursorPagination(CursorPagination):
    """DRF's cursor pages, except that a bad `?cursor=` or `?page_size=` is the caller's error (400)
    instead of a 404 or a silent default. A page size above the maximum is cut to it."""

    page_size_query_param = "page_size"

    def decode_cursor(self, request):
        try:
            return super().decode_cursor(request)
        except NotFound:
            raise ValidationError({self.cursor_query_param: ["not a cursor this API returned"]}) from None

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if size < 1:
            raise ValidationError({self.page_size_query_param: [f"must be an integer from 1 to {self.max_page_size}"]})
        return min(size, self.max_page_size)


class CreatedCursorPagination(StrictCursorPagination):
    """Newest first, stable under inserts; `?page_size=` up to 500."""

    ordering = ("-created_at", "-id")
    max_page_size = 500


def page_of(queryset, *, pagination: StrictCursorPagination, request, view) -> dict:
    """The page of `queryset` that the request's `?cursor=` and `?page_size=` ask for, in the list
    endpoints' shape ({"next", "previous", "results"}), for an answer that holds a list beside other
    things."""
    results = pagination.paginate_queryset(queryset, request, view=view)
    return {"next": pagination.get_next_link(), "previous": pagination.get_previous_link(), "results": results}
