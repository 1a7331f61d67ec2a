"""Festinger in Django admin: concepts, edges (removing one keeps it in history), the conflict queue
with accept / keep / ask-the-model actions, the per-workspace configuration (saving it moves the
resolution job's schedule), runs and history read-only, and the Festinger page: pending conflicts,
the last resolution run and "Run resolution now" per workspace.

Superusers see every workspace; other staff see the workspaces they belong to and may act only
where they are owner or operator."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from fathom.admin_scoping import ReadOnlyAdmin, WorkspaceScopedAdmin, workspaces_visible_to
from fathom.auth import may_operate, request_actor
from fathom.errors import ApplicationError
from fathom.models import Workspace
from festinger import selectors
from festinger.models import Concept, Conflict, ConflictStatus, Edge, EdgeHistory, ResolutionRun, WorldConfig
from festinger.resolution import allowed_decisions, conflict_apply
from festinger.services import config_update, config_validate, edge_remove
from festinger.tasks import conflicts_ask_request, resolution_request


class RecordAdmin(ReadOnlyAdmin):
    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Concept)
class ConceptAdmin(RecordAdmin):
    list_display = ["token", "workspace", "encounter_count", "saliency", "novelty", "is_common", "last_seen"]
    list_filter = ["is_common", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["token"]
    ordering = ["token"]
    show_full_result_count = False


@admin.register(Edge)
class EdgeAdmin(WorkspaceScopedAdmin):
    list_display = ["concept", "relation", "parent", "dimension", "confidence", "source", "last_confirmed", "workspace"]
    list_filter = ["source", "is_isa", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["concept__token", "parent__token", "dimension__token"]
    list_select_related = ["concept", "parent", "dimension", "workspace"]
    fields = ["workspace", "concept", "parent", "dimension", "is_isa", "confidence", "last_confirmed", "source",
              "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False  # facts enter through /iknowthat, the write path and the resolution job

    @admin.display(description="relation", ordering="is_isa")
    def relation(self, edge):
        return "root" if edge.is_root else ("ISA" if edge.is_isa else "ISPART")

    def has_change_permission(self, request, obj=None):
        return False  # a fact changes through /iknowthat, the write path or a conflict's resolution

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (
            obj is None or may_operate(request.user, workspace_id=obj.workspace_id))

    def delete_model(self, request, obj):
        edge_remove(edge=obj, reason="removed in admin", actor=request_actor(request))

    def delete_queryset(self, request, queryset):
        for edge in queryset.select_related("concept"):
            if may_operate(request.user, workspace_id=edge.workspace_id) and not edge.is_root:
                edge_remove(edge=edge, reason="removed in admin", actor=request_actor(request))


@admin.register(EdgeHistory)
class EdgeHistoryAdmin(RecordAdmin):
    list_display = ["created_at", "action", "concept", "parent", "dimension", "moved_to", "actor", "reason", "conflict"]
    list_filter = ["action", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["concept__token", "parent__token", "reason", "actor"]
    list_select_related = ["concept", "parent", "dimension", "moved_to", "conflict"]


class DecideForm(forms.Form):
    decision = forms.ChoiceField()
    existing_dimension = forms.CharField(required=False, help_text="decompose: where the existing fact stays")
    new_dimension = forms.CharField(required=False, help_text="decompose: where the incoming fact goes")
    dimension = forms.CharField(required=False, help_text="misclassification: the incoming fact's dimension")
    reasoning = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))

    def __init__(self, *args, collision_type: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["decision"].choices = [(d, d) for d in allowed_decisions(collision_type)]
        for field in self.fields.values():  # the inputs sit inside admin's own form
            field.widget.attrs["form"] = "decide-form"


@admin.register(Conflict)
class ConflictAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "status", "priority", "collision_type", "concept", "dimension", "existing_parent",
                    "incoming_parent", "incoming_source", "created_at", "resolved_by", "error"]
    list_display_links = ["id", "concept"]
    list_filter = ["status", "priority", "collision_type", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["concept__token", "existing_parent__token", "incoming_parent__token"]
    list_select_related = ["concept", "dimension", "existing_parent", "incoming_parent"]
    ordering = ["-priority", "-created_at", "-id"]
    actions = ["accept_incoming", "keep_existing", "ask_resolver"]
    readonly_fields = ["workspace", "concept", "dimension", "existing_parent", "existing_is_isa", "incoming_parent",
                       "incoming_is_isa", "incoming_confidence", "incoming_source", "collision_type", "status",
                       "priority", "resolution", "resolved_at", "resolved_by", "error", "attempts", "created_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # the queue is the record: dismiss instead

    change_form_template = "admin/festinger/conflict/change_form.html"

    def get_urls(self):
        return [path("overview/", self.admin_site.admin_view(self.overview_view), name="festinger_overview"),
                path("run/<int:workspace_id>/", self.admin_site.admin_view(self.run_view), name="festinger_run"),
                path("<int:conflict_id>/decide/", self.admin_site.admin_view(self.decide_view),
                     name="festinger_conflict_decide"),
                *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        conflict = self.get_object(request, object_id)
        decidable = (conflict is not None and conflict.status == ConflictStatus.PENDING
                     and may_operate(request.user, workspace_id=conflict.workspace_id))
        extra = {"decide_form": DecideForm(collision_type=conflict.collision_type) if decidable else None}
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def decide_view(self, request, conflict_id: int):
        """The operator's own decision from the conflict's page (decompose needs two dimension names)."""
        conflict = get_object_or_404(self.get_queryset(request), pk=conflict_id)
        back = reverse("admin:festinger_conflict_change", args=[conflict.pk])
        if request.method != "POST":
            return HttpResponseRedirect(back)
        if not may_operate(request.user, workspace_id=conflict.workspace_id):
            raise PermissionDenied
        form = DecideForm(request.POST, collision_type=conflict.collision_type)
        if not form.is_valid():
            self.message_user(request, f"Conflict #{conflict.pk}: choose a decision.", messages.ERROR)
            return HttpResponseRedirect(back)
        decision = {name: value for name, value in form.cleaned_data.items() if value}
        try:
            conflict_apply(conflict_id=conflict.pk, decision=decision, actor=request_actor(request))
            self.message_user(request, f"Conflict #{conflict.pk}: {decision['decision']} applied.")
        except ApplicationError as exc:
            self.message_user(request, f"Conflict #{conflict.pk}: {exc.message}", messages.ERROR)
        return HttpResponseRedirect(back)

    def _each_pending(self, request, queryset, apply):
        done = skipped = 0
        for conflict in queryset.filter(status=ConflictStatus.PENDING):
            if not may_operate(request.user, workspace_id=conflict.workspace_id):
                skipped += 1
                continue
            try:
                apply(conflict)
                done += 1
            except ApplicationError as exc:
                self.message_user(request, f"Conflict #{conflict.pk}: {exc.message}", messages.ERROR)
        return done, skipped

    @admin.action(description="Accept the incoming fact (update: the existing edge goes to history)")
    def accept_incoming(self, request, queryset):
        done, skipped = self._each_pending(request, queryset, lambda c: conflict_apply(
            conflict_id=c.pk, decision={"decision": "update", "reasoning": "accepted in admin"}, actor=request_actor(request)))
        self.message_user(request, f"Accepted {done} incoming fact(s); skipped {skipped}.")

    @admin.action(description="Keep the existing fact (dismiss)")
    def keep_existing(self, request, queryset):
        done, skipped = self._each_pending(request, queryset, lambda c: conflict_apply(
            conflict_id=c.pk, decision={"decision": "dismiss", "reasoning": "kept in admin"}, actor=request_actor(request)))
        self.message_user(request, f"Dismissed {done} conflict(s); skipped {skipped}.")

    @admin.action(description="Ask the resolver model now")
    def ask_resolver(self, request, queryset):
        """A model call per conflict is too slow for a request: a worker asks (memory queue)."""
        ids = []
        done, skipped = self._each_pending(request, queryset, lambda c: ids.append(c.pk))
        if ids:
            conflicts_ask_request(conflict_ids=ids)
        self.message_user(request, f"Queued {done} conflict(s) for the resolver model; skipped {skipped}. "
                                   "Their status changes once a worker has asked it.")

    def overview_view(self, request):
        rows = []
        for workspace in workspaces_visible_to(request).order_by("slug"):
            rows.append({"workspace": workspace, "pending": selectors.pending_count(workspace=workspace),
                         "last_run": selectors.last_run(workspace=workspace),
                         "config": WorldConfig.objects.filter(workspace=workspace).first(),
                         "may_run": may_operate(request.user, workspace_id=workspace.pk)})
        return TemplateResponse(request, "admin/festinger/overview.html", {
            **self.admin_site.each_context(request), "title": "Festinger", "rows": rows, "opts": self.model._meta})

    def run_view(self, request, workspace_id: int):
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:festinger_overview"))
        workspace = get_object_or_404(Workspace, pk=workspace_id)
        if not may_operate(request.user, workspace_id=workspace.pk):
            raise PermissionDenied
        run = resolution_request(workspace=workspace, trigger=request_actor(request))
        self.message_user(request, f"Resolution run #{run.pk} queued for {workspace.slug}.")
        return HttpResponseRedirect(reverse("admin:festinger_overview"))


@admin.register(ResolutionRun)
class ResolutionRunAdmin(RecordAdmin):
    list_display = ["id", "workspace", "trigger", "status", "created_at", "finished_at", "processed", "resolved",
                    "dismissed", "failed", "error"]
    list_filter = ["status", ("workspace", admin.RelatedOnlyFieldListFilter)]


class WorldConfigForm(forms.ModelForm):
    class Meta:
        model = WorldConfig
        fields = ["saliency_read_threshold", "saliency_write_threshold", "recollection_confidence_floor",
                  "recollection_recency_days", "recollection_max_concepts", "resolution_schedule",
                  "resolution_enabled", "writer_role", "resolver_role", "writer_max_calls",
                  "writer_calls_per_conversation", "writer_calls_per_hour", "saliency_half_life_days"]

    def clean(self):
        cleaned = super().clean()
        candidate = WorldConfig(**{f.name: getattr(self.instance, f.name) for f in WorldConfig._meta.concrete_fields})
        for name, value in cleaned.items():
            setattr(candidate, name, value)
        try:
            config_validate(candidate)
        except ApplicationError as exc:
            raise forms.ValidationError(exc.message) from None
        return cleaned


@admin.register(WorldConfig)
class WorldConfigAdmin(WorkspaceScopedAdmin):
    form = WorldConfigForm
    list_display = ["workspace", "saliency_read_threshold", "saliency_write_threshold",
                    "recollection_confidence_floor", "recollection_recency_days", "resolution_schedule",
                    "resolution_enabled", "writer_role", "resolver_role", "updated_at"]
    readonly_fields = ["workspace", "updated_at"]

    def has_add_permission(self, request):
        return False  # each workspace's row is created with its world

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (
            obj is None or may_operate(request.user, workspace_id=obj.workspace_id))

    def save_model(self, request, obj, form, change):
        config_update(config=obj, **{name: form.cleaned_data[name] for name in form.changed_data})


# The loop detector's and the proxy's admin live beside their code.
from festinger.loops import admin as loops_admin  # noqa: E402,F401
from festinger.proxy import admin as proxy_admin  # noqa: E402,F401
