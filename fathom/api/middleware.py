"""Checks on what every request carries before a view sees it: the path and the query string hold
no unstorable text (fathom.api.text), and the query string has no more fields than Django parses."""

from django.core.exceptions import TooManyFieldsSent

from fathom.api.errors import bad_request
from fathom.api.text import REASON, UNSTORABLE


class RejectUnstorableText:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if UNSTORABLE.search(request.path_info):
            return bad_request(request, ValueError(f"the path {REASON}"))
        try:
            query = request.GET
        except TooManyFieldsSent as error:
            return bad_request(request, error)
        for name, values in query.lists():
            if UNSTORABLE.search(name) or any(UNSTORABLE.search(value) for value in values):
                return bad_request(request, ValueError(f"the query parameter {name!r} {REASON}"))
        return self.get_response(request)
