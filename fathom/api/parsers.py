"""The API's only body parser: JSON, bounded in size (FATHOM_API_MAX_BODY_BYTES, 413 beyond it) and
in nesting (MAX_JSON_DEPTH, checked by scanning the text before the recursive decoder runs), with
every string checked for unstorable text (fathom.api.text)."""

import json
import re

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser

from fathom.api.text import REASON, unstorable_in_json

MAX_JSON_DEPTH = 64
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = "the request body is too large"


def body_too_large_message() -> str:
    return f"the request body is larger than {settings.FATHOM_API_MAX_BODY_BYTES:,} bytes (FATHOM_API_MAX_BODY_BYTES)"


class JSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.FATHOM_API_MAX_BODY_BYTES
        if _declared_length(parser_context) > limit:  # refused before reading what will not be kept
            raise RequestTooLarge(body_too_large_message())
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(body_too_large_message())
        try:
            text = raw.decode((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET)
        except UnicodeDecodeError as error:
            raise ParseError(f"JSON parse error: the body is not UTF-8 ({error.reason} at byte {error.start})") from None
        if nested_too_deep(text):
            raise ParseError(f"JSON parse error: nested deeper than {MAX_JSON_DEPTH} levels")
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except ValueError as error:
            raise ParseError(f"JSON parse error: {error}") from None
        except RecursionError:  # cannot happen after the scan above; kept so that it never is a 500
            raise ParseError(f"JSON parse error: nested deeper than {MAX_JSON_DEPTH} levels") from None
        if (where := unstorable_in_json(text, data)) is not None:
            raise ParseError(f"text at {where} {REASON}")
        return data


def nested_too_deep(text: str) -> bool:
    """Whether a JSON text nests arrays and objects deeper than MAX_JSON_DEPTH, found without decoding it:
    escapes dropped, the text split at its quotes leaves what is outside strings at the even places.
    A text that is not JSON may be misread after its first error, where the decoder stops anyway."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False  # it cannot nest deeper than the number of brackets it opens
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    depth = 0
    for bracket in _NOT_BRACKET.sub("", "".join(text.split('"')[::2])):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def _declared_length(parser_context) -> int:
    request = (parser_context or {}).get("request")
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
    except ValueError:
        return 0


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")
