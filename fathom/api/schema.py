"""How the OpenAPI schema describes the API beyond what drf-spectacular infers: the Bearer key, the
error envelope on every operation's 4xx answers, and component names that stay unique when every
view calls its nested input serializer `Input`."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from rest_framework import serializers

BODY_METHODS = {"POST", "PUT", "PATCH"}


class ErrorDetail(serializers.Serializer):
    code = serializers.CharField(help_text="machine-readable: invalid, not_found, parse_error, too_large, ...")
    message = serializers.CharField(help_text="for a person: what was wrong, and where")
    details = serializers.DictField(child=serializers.JSONField(), help_text="per field, or other context")


class Error(serializers.Serializer):
    error = ErrorDetail()


class OneOrMany(serializers.Serializer):
    """For the schema only: one `item` object, or a list of them (as `POST /v1/deltas` takes and answers)."""

    def __init__(self, item, *, max_items: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.item, self.max_items = item, max_items


class OneOrManyScheme(OpenApiSerializerExtension):
    target_class = OneOrMany

    def get_name(self, auto_schema, direction):
        return f"{self.target.item.__name__}OneOrMany"

    def map_serializer(self, auto_schema, direction):
        item = auto_schema.resolve_serializer(self.target.item, direction).ref
        many = {"type": "array", "items": item, "minItems": 1}
        if self.target.max_items is not None:
            many["maxItems"] = self.target.max_items
        return {"oneOf": [item, many]}


class FathomAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer, direction):
        """`SearchView.Input` is named `SearchInput`: the view's name without `View`, then the class's."""
        outer, _, inner = type(serializer).__qualname__.rpartition(".")
        if not outer or "<locals>" in outer:
            return super().get_serializer_name(serializer, direction)
        return outer.split(".")[-1].removesuffix("View") + inner

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code in self._error_codes():
            responses.setdefault(code, self._get_response_for_code(Error, code, direction=direction))
        return responses

    def _error_codes(self) -> list[str]:
        """Every 4xx this operation can answer: 400 for any bad query string (and body), 401 and 403
        where a key is needed, 404 for an unknown object, 406 for an Accept header (or `?format=`) it
        cannot answer, 409 where a change meets a state that forbids it (decided already, closed,
        exists), 413 and 415 where a body is read."""
        codes = ["400"]
        if self.view.authentication_classes:
            codes += ["401", "403"]
        codes += ["404", "406"]
        if self.method in BODY_METHODS:
            codes += ["409", "413", "415"]
        return codes


class BearerKeyScheme(OpenApiAuthenticationExtension):
    target_class = "fathom.auth.ApiKeyAuthentication"
    name = "BearerKey"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="HTTP_AUTHORIZATION", token_prefix="Bearer")
