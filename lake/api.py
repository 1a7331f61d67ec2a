"""REST for the lake: write deltas (one or a batch), list and read them, search, statistics.
Thin: validate, call a service or selector, serialise."""

from django.conf import settings
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.api.params import idempotency_key_clean
from fathom.api.schema import Error, OneOrMany
from fathom.models import Role
from lake.media import media_get, media_store
from lake.models import Delta
from lake.search import DEPTHS, MAX_BUDGET, MAX_LIMIT, MIN_BUDGET
from lake.search import MODES as SEARCH_MODES
from lake.search.budget import ROLES as SEARCH_ROW_ROLES
from lake.selectors import (
    delta_get,
    deltas_list,
    deltas_search,
    lake_stats,
    provenance_children,
    provenance_parents,
)
from lake.services import MAX_BATCH, deltas_create


class DeltaIn(serializers.Serializer):
    content = serializers.CharField(allow_blank=True, default="", trim_whitespace=False)
    tags = serializers.ListField(child=serializers.CharField(max_length=200), default=list, max_length=200)
    source = serializers.CharField(max_length=200, allow_blank=True, default="")
    created_at = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                           help_text="the moment it happened; now when absent (set it on import)")
    media_hash = serializers.CharField(max_length=128, allow_blank=True, default="",
                                       help_text="the hash POST /v1/media answered for an image this workspace "
                                                 "uploaded")


class DeltaOut(serializers.ModelSerializer):
    kinds = serializers.ListField(child=serializers.CharField(), read_only=True)
    level = serializers.IntegerField(read_only=True, allow_null=True)
    embedded = serializers.SerializerMethodField()

    class Meta:
        model = Delta
        fields = ["id", "created_at", "source", "tags", "content", "media_hash", "kinds", "level", "embedded",
                  "embedding_model"]

    def get_embedded(self, delta) -> bool:
        if hasattr(delta, "has_embedding"):
            return delta.has_embedding
        return delta.embedding is not None


class DeltaRef(serializers.Serializer):
    """A neighbour in the provenance graph, in short."""

    id = serializers.CharField()
    created_at = serializers.DateTimeField()
    source = serializers.CharField()
    title = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    level = serializers.IntegerField(allow_null=True)


class DeltaDetailOut(DeltaOut):
    parents = serializers.SerializerMethodField()
    children = serializers.SerializerMethodField()

    class Meta(DeltaOut.Meta):
        fields = DeltaOut.Meta.fields + ["parents", "children"]

    def get_parents(self, delta) -> list[dict]:
        return DeltaRef(self.context["parents"], many=True).data

    def get_children(self, delta) -> list[dict]:
        return DeltaRef(self.context["children"], many=True).data


class DeltaListCreateView(generics.ListAPIView):
    """`GET`: this workspace's deltas, newest first, by cursor. `POST`: write one delta (an object)
    or up to 1,000 (a list) in one transaction; send `Idempotency-Key` to make a retry safe."""

    serializer_class = DeltaOut

    class Params(serializers.Serializer):
        tags = serializers.CharField(required=False, default="", help_text="comma-separated; all must be present")
        kind = serializers.CharField(required=False, default="")
        source = serializers.CharField(required=False, default="")
        since = serializers.DateTimeField(required=False, default=None)
        until = serializers.DateTimeField(required=False, default=None)

    def get_queryset(self):
        params = self.Params(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        tags = [tag.strip() for tag in data["tags"].split(",") if tag.strip()]
        return deltas_list(workspace=self.request.workspace, tags=tags, kind=data["kind"], source=data["source"],
                           since=data["since"], until=data["until"]).annotate(
            has_embedding=ExpressionWrapper(Q(embedding__isnull=False), output_field=BooleanField()))

    @extend_schema(parameters=[OpenApiParameter(name, str, description=help_) for name, help_ in (
        ("tags", "comma-separated tags, all required"), ("kind", "kind:<kind> tag"), ("source", "exact source"),
        ("since", "created_at >= (ISO 8601)"), ("until", "created_at < (ISO 8601)"))])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(request=OneOrMany(DeltaIn, max_items=MAX_BATCH),
                   responses={201: OneOrMany(DeltaOut), 200: OneOrMany(DeltaOut), 422: Error},
                   parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER,
                                                description="a retry with the same key and body writes nothing")],
                   summary="Write one delta, or a list of up to 1,000")
    def post(self, request):
        many = isinstance(request.data, list)
        if many:
            if len(request.data) > MAX_BATCH:
                raise serializers.ValidationError({"items": [f"at most {MAX_BATCH} deltas per request, "
                                                             f"got {len(request.data)}"]})
            data = DeltaIn(data=request.data, many=True)
            if not data.is_valid():
                errors = data.errors  # per item; DRF may key them by index
                if isinstance(errors, dict):
                    errors = [errors.get(index, errors.get(str(index), {})) for index in range(len(request.data))]
                raise serializers.ValidationError({"items": errors})
            items = data.validated_data
        else:
            data = DeltaIn(data=request.data)
            data.is_valid(raise_exception=True)
            items = [data.validated_data]
        key = idempotency_key_clean(request.headers.get("Idempotency-Key", ""))
        written = deltas_create(workspace=request.workspace, items=items, idempotency_key=key)
        body = DeltaOut(written.deltas, many=True).data if many else DeltaOut(written.deltas[0]).data
        headers = {"Idempotent-Replayed": "true"} if written.replayed else {}
        return Response(body, status=status.HTTP_200_OK if written.replayed else status.HTTP_201_CREATED,
                        headers=headers)


class DeltaDetailView(APIView):
    @extend_schema(responses=DeltaDetailOut, summary="One delta by id or unique prefix (8+ hex), with its "
                                                     "provenance parents and children")
    def get(self, request, id_or_prefix: str):
        return Response(delta_detail(workspace=request.workspace, id_or_prefix=id_or_prefix))


def delta_detail(*, workspace, id_or_prefix: str) -> dict:
    """One delta of the workspace whole, with its provenance parents and children (DeltaDetailOut)."""
    delta = delta_get(workspace=workspace, id_or_prefix=id_or_prefix)
    parents = [ancestor.delta for ancestor in provenance_parents(workspace=workspace, delta_ids=[delta.id], max_levels=1)]
    children = provenance_children(workspace=workspace, delta=delta)
    return DeltaDetailOut(delta, context={"parents": parents, "children": children}).data


class SearchFiltersIn(serializers.Serializer):
    tags = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list,
                                 help_text="tags every hit carries")
    kind = serializers.CharField(required=False, default="", help_text="the kind:<kind> tag")
    source = serializers.CharField(required=False, default="")
    since = serializers.DateTimeField(required=False, default=None, help_text="created_at >= (ISO 8601)")
    until = serializers.DateTimeField(required=False, default=None, help_text="created_at < (ISO 8601)")


class SearchRequestIn(serializers.Serializer):
    query = serializers.CharField(max_length=4000)
    mode = serializers.ChoiceField(choices=list(SEARCH_MODES), default="hybrid",
                                   help_text="hybrid: vector and full text fused; vector or text: one ranking only")
    depth = serializers.ChoiceField(choices=list(DEPTHS), default="normal")
    limit = serializers.IntegerField(min_value=1, max_value=MAX_LIMIT, default=10, help_text="the most hits")
    budget = serializers.IntegerField(min_value=MIN_BUDGET, max_value=MAX_BUDGET, required=False, allow_null=True,
                                      default=None, help_text="characters of rendered recall the answer may take "
                                                              "(about 4 a token); FATHOM_SEARCH_BUDGET_CHARS when absent")
    filters = SearchFiltersIn(required=False, allow_null=True, default=dict)


class SearchScoresOut(serializers.Serializer):
    found_by = serializers.ListField(child=serializers.CharField(),
                                     help_text="vector, centroid, text, container (inherited from a matching "
                                               "provenance row), follow-up; or strip, expand-down, expand-up")
    summary_distance = serializers.FloatField(allow_null=True)
    centroid_distance = serializers.FloatField(allow_null=True)
    distance = serializers.FloatField(allow_null=True, help_text="the one the vector ranking used")
    matched_on = serializers.CharField(allow_null=True, help_text="summary or centroid")
    text_rank = serializers.FloatField(allow_null=True)
    vector_position = serializers.IntegerField(allow_null=True)
    text_position = serializers.IntegerField(allow_null=True)
    fused = serializers.FloatField(allow_null=True)
    rerank_factor = serializers.FloatField()
    reranked_distance = serializers.FloatField(allow_null=True)


class SearchRowOut(serializers.Serializer):
    id = serializers.CharField()
    role = serializers.ChoiceField(choices=list(SEARCH_ROW_ROLES))
    rank = serializers.IntegerField(allow_null=True, help_text="hits: 1 is best")
    anchor_id = serializers.CharField(allow_null=True, help_text="child or neighbour: the hit it hangs from")
    contains = serializers.ListField(child=serializers.CharField(), allow_null=True, help_text="container: what it holds")
    depth = serializers.IntegerField(allow_null=True, help_text="container: hops above a surfaced delta")
    level = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    source = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    content = serializers.CharField(allow_blank=True)
    media_hash = serializers.CharField(allow_blank=True)
    scores = SearchScoresOut()


class SearchBudgetOut(serializers.Serializer):
    characters = serializers.IntegerField(help_text="the budget")
    used = serializers.IntegerField(help_text="characters of `rendered`")
    rows_kept = serializers.IntegerField()
    left_out = serializers.DictField(child=serializers.IntegerField(),
                                     help_text="rows that did not fit, by role (hit, child, neighbour, container)")
    left_out_hits = serializers.ListField(child=serializers.CharField(), help_text="ids of the hits left out")


class SearchPlanStepOut(serializers.Serializer):
    query = serializers.CharField()
    mode = serializers.CharField()
    filters = serializers.DictField()


class SearchPlanOut(serializers.Serializer):
    source = serializers.CharField(help_text="default, planner or given")
    steps = SearchPlanStepOut(many=True)
    note = serializers.CharField(required=False, help_text="why the default plan was used")


class SearchResponseOut(serializers.Serializer):
    query = serializers.CharField()
    mode = serializers.CharField()
    depth = serializers.CharField()
    plan = SearchPlanOut()
    warnings = serializers.ListField(child=serializers.CharField())
    nothing_found = serializers.CharField(allow_null=True, help_text="why there are no hits (null when there are)")
    budget = SearchBudgetOut()
    rendered = serializers.CharField(allow_blank=True, help_text="the recall as a model reads it")
    rows = SearchRowOut(many=True)


class StatsOut(serializers.Serializer):
    deltas = serializers.IntegerField()
    embedded = serializers.IntegerField()
    awaiting_embedding = serializers.IntegerField(
        help_text="deltas without a vector yet (invisible to vector search until embedded): their embedding "
                  "task has not run, or waits for the provider; the beat entry memory.embed_missing queues "
                  "those older than FATHOM_EMBEDDING_SWEEP_GRACE_SECONDS again")
    provenance = serializers.IntegerField()
    provenance_with_centroid = serializers.IntegerField()
    provenance_by_level = serializers.DictField(child=serializers.IntegerField())
    kinds = serializers.DictField(child=serializers.IntegerField())
    sources = serializers.DictField(child=serializers.IntegerField())
    embedding_models = serializers.DictField(child=serializers.IntegerField())
    oldest = serializers.DateTimeField(allow_null=True)
    newest = serializers.DateTimeField(allow_null=True)
    embedder = serializers.DictField(child=serializers.JSONField(), help_text="name and dimensions")


class SearchView(APIView):
    """Recall: seed 000's retrieval stack. Any role may search."""

    write_role = Role.VIEWER

    @extend_schema(request=SearchRequestIn, responses=SearchResponseOut,
                   summary="Search: rendered recall text and structured rows, within a character budget")
    def post(self, request):
        data = SearchRequestIn(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        result = deltas_search(workspace=request.workspace, query=params["query"], mode=params["mode"],
                               depth=params["depth"], filters=params["filters"], limit=params["limit"],
                               budget=params["budget"])
        return Response(result.as_dict())


class StatsView(APIView):
    @extend_schema(responses=StatsOut, summary="Counts of this workspace's lake")
    def get(self, request):
        return Response(lake_stats(workspace=request.workspace))


class MediaOut(serializers.Serializer):
    hash = serializers.CharField(help_text="what deltas name as media_hash and see_image opens")
    media_type = serializers.CharField()
    size = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class MediaUploadView(APIView):
    """`POST` the raw bytes of a PNG, JPEG, GIF or WebP image (`curl --data-binary @photo.png`); the
    answer names it by the SHA-256 of its bytes. The same image again answers 200 with the same hash."""

    parser_classes = []  # the body is read raw, never parsed

    @extend_schema(request={"application/octet-stream": bytes}, responses={201: MediaOut, 200: MediaOut},
                   summary="Store an image; deltas name it by the returned hash")
    def post(self, request):
        stream = request.stream  # the raw body (None when empty), not .body: its limit is for forms
        data = stream.read(settings.FATHOM_MEDIA_MAX_BYTES + 1) if stream else b""
        media, created = media_store(workspace=request.workspace, data=data)
        return Response(MediaOut(media).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MediaDetailView(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): bytes}, summary="The image's bytes")
    def get(self, request, media_hash):
        media = media_get(workspace_id=request.workspace.pk, media_hash=media_hash)
        return HttpResponse(bytes(media.data), content_type=media.media_type,
                            headers={"Cache-Control": "private, max-age=31536000, immutable"})
