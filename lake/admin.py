"""Deltas in admin: searchable by tag (`tag:kind:note`) and by content; nothing of a moment can be
edited (deltas are immutable except for their embeddings)."""

from django.contrib import admin, messages

from fathom.admin_scoping import ReadOnlyAdmin, WorkspaceScopedAdmin
from lake.models import Delta, IdempotentWrite, Media
from lake.tasks import reembed_deltas


class KindFilter(admin.SimpleListFilter):
    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        kinds = ["note", "provenance", "qa-marker", "sediment", "proposal", "harness-turn"]
        return [(kind, kind) for kind in kinds]

    def queryset(self, request, queryset):
        return queryset.filter(tags__contains=[f"kind:{self.value()}"]) if self.value() else queryset


class EmbeddedFilter(admin.SimpleListFilter):
    title = "embedded"
    parameter_name = "embedded"

    def lookups(self, request, model_admin):
        return [("yes", "yes"), ("no", "waiting")]

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(embedding__isnull=self.value() == "no")
        return queryset


@admin.register(Delta)
class DeltaAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "created_at", "workspace", "source", "kinds_shown", "title_shown", "embedded"]
    list_filter = [KindFilter, EmbeddedFilter, "workspace"]
    search_fields = ["id", "content"]
    search_help_text = "Words of the content, an id prefix, or tag:<tag> (e.g. tag:kind:provenance)."
    date_hierarchy = "created_at"
    fields = ["id", "workspace", "created_at", "source", "tags", "content", "media_hash", "embedding_model"]
    readonly_fields = fields
    actions = ["reembed"]
    list_per_page = 50

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("workspace").defer("provenance_embedding", "search_vector")

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if term.startswith("tag:"):
            tags = [tag for tag in term.removeprefix("tag:").split() if tag]
            return queryset.filter(tags__contains=tags), False
        return super().get_search_results(request, queryset, search_term)

    def has_add_permission(self, request):
        return False  # deltas are written through the API and the services

    @admin.display(description="kinds")
    def kinds_shown(self, delta):
        return ", ".join(delta.kinds)

    @admin.display(description="content")
    def title_shown(self, delta):
        return delta.title[:100]

    @admin.display(boolean=True)
    def embedded(self, delta):
        return delta.embedding is not None

    @admin.action(description="Embed selected deltas again (in the background)")
    def reembed(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        for start in range(0, len(ids), 100):
            reembed_deltas.delay(ids[start:start + 100])
        self.message_user(request, f"Queued {len(ids)} delta(s) for embedding.", messages.INFO)


@admin.register(IdempotentWrite)
class IdempotentWriteAdmin(WorkspaceScopedAdmin):
    list_display = ["key", "workspace", "created_at", "count"]
    search_fields = ["key"]
    readonly_fields = ["workspace", "key", "request_hash", "delta_ids", "created_at"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="deltas")
    def count(self, record):
        return len(record.delta_ids)


@admin.register(Media)
class MediaAdmin(ReadOnlyAdmin):
    """Uploaded images, read-only: deltas name them by hash; the bytes are served at /v1/media/<hash>."""

    list_display = ("hash", "media_type", "size", "workspace", "created_at")
    list_filter = (("workspace", admin.RelatedOnlyFieldListFilter), "media_type")
    search_fields = ("hash",)
    exclude = ("data",)
    readonly_fields = ("workspace", "hash", "media_type", "size", "created_at")
