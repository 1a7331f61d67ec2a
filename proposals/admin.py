"""The operator's proposals pane: pending first, filters by tool, level and status, the payload
rendered readably, approve / deny / edit-and-approve on one proposal or many, the decision history
inline. Deciding needs the `decide_proposal` permission and, for non-superusers, an owner or
operator membership in the proposal's workspace; staff see only their workspaces' proposals."""

import json

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme

from fathom.admin_scoping import ReadOnlyAdmin, WorkspaceScopedAdmin
from fathom.auth import may_operate, request_actor
from fathom.errors import ApplicationError
from proposals import helper_jobs, scheduled_routines, selectors, services
from proposals.handlers import get_handler
from proposals.models import (
    Decision,
    HelperHost,
    HelperJob,
    Proposal,
    ProposalPolicy,
    ProposalStatus,
    Routine,
    RoutineRun,
)

_STATUS_COLOURS = {
    ProposalStatus.PENDING: "#b26b00",
    ProposalStatus.APPROVED: "#1a7f37",
    ProposalStatus.DENIED: "#6e7781",
    ProposalStatus.FAILED: "#cf222e",
}


class DecisionInline(admin.TabularInline):
    model = Decision
    fk_name = "proposal"
    extra = 0
    can_delete = False
    ordering = ["-created_at", "-id"]
    fields = ["created_at", "action", "decided_by", "reason", "result_ref", "error", "payload_pretty"]
    readonly_fields = fields
    verbose_name_plural = "decision history"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="payload as decided")
    def payload_pretty(self, decision):
        return format_html("<pre style='margin:0;white-space:pre-wrap'>{}</pre>", _pretty(decision.payload))


@admin.register(Proposal)
class ProposalAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "title", "tool", "level", "status_badge", "workspace", "producer", "created_at",
                    "latest_decision", "decide_buttons"]
    list_display_links = ["id", "title"]
    list_filter = ["status", "tool", "level", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["title", "rationale", "producer"]
    list_per_page = 50
    actions = ["approve_selected", "deny_selected"]
    inlines = [DecisionInline]
    fields = ["workspace", "tool", "title", "level", "status_badge", "producer", "created_at", "decided_at",
              "rationale", "result_ref", "failure_reason", "payload_rendered"]
    readonly_fields = fields
    change_form_template = "admin/proposals/proposal/change_form.html"

    # --- what the operator sees -----------------------------------------------------------------

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("workspace").prefetch_related("decisions")

    def get_ordering(self, request):
        return list(selectors.PENDING_FIRST)

    @admin.display(description="status", ordering="status")
    def status_badge(self, proposal):
        colour = _STATUS_COLOURS.get(proposal.status, "#000")
        return format_html("<strong style='color:{}'>{}</strong>", colour, proposal.get_status_display())

    @admin.display(description="latest decision")
    def latest_decision(self, proposal):
        decisions = sorted(proposal.decisions.all(), key=lambda d: (d.created_at, d.pk), reverse=True)
        if not decisions:
            return "—"
        decision = decisions[0]
        detail = decision.error or decision.reason or decision.result_ref
        return format_html("{} by {}<br><small>{}</small>", decision.get_action_display(), decision.decided_by,
                           detail)

    @admin.display(description="decide")
    def decide_buttons(self, proposal):
        if proposal.status not in (ProposalStatus.PENDING, ProposalStatus.FAILED):
            return ""
        decide_url = reverse("admin:proposals_proposal_decide", args=[proposal.pk])
        change_url = reverse("admin:proposals_proposal_change", args=[proposal.pk])
        # The buttons submit the changelist form (it carries the CSRF token) to the decide view.
        return format_html(
            '<button type="submit" class="button approve-button" formaction="{}" name="decision" value="approve"'
            ' data-proposal="{}">Approve</button> <a class="button" href="{}#decide">Edit / deny…</a>',
            decide_url, proposal.pk, change_url,
        )

    @admin.display(description="payload")
    def payload_rendered(self, proposal):
        try:
            summary = get_handler(proposal.tool).render_html(proposal=proposal, payload=proposal.payload)
        except ApplicationError:
            summary = ""
        return format_html("{}<details><summary>JSON</summary><pre>{}</pre></details>", summary,
                           _pretty(proposal.payload))

    # --- permissions ----------------------------------------------------------------------------

    def has_add_permission(self, request):
        return False  # producers draft through the service (REST, the harness, scripts)

    def has_change_permission(self, request, obj=None):
        return False  # a proposal changes only by a decision

    def has_delete_permission(self, request, obj=None):
        return False  # the record is kept after it is decided

    def has_decide_permission(self, request, obj=None):
        if not request.user.has_perm("proposals.decide_proposal"):
            return False
        return obj is None or may_operate(request.user, workspace_id=obj.workspace_id)

    # --- deciding -------------------------------------------------------------------------------

    def get_urls(self):
        decide = path("<path:object_id>/decide/", self.admin_site.admin_view(self.decide_view),
                      name="proposals_proposal_decide")
        return [decide, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        proposal = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if proposal is not None:
            context["can_decide"] = (proposal.status in (ProposalStatus.PENDING, ProposalStatus.FAILED)
                                     and self.has_decide_permission(request, proposal))
            context["decide_url"] = reverse("admin:proposals_proposal_decide", args=[proposal.pk])
            context["payload_json"] = _pretty(proposal.payload)
        return super().change_view(request, object_id, form_url, extra_context=context)

    def decide_view(self, request, object_id):
        """POST decision=approve|deny, with `payload` (JSON, optional: an edit) or `reason`."""
        proposal = get_object_or_404(self.get_queryset(request), pk=object_id)
        back = request.POST.get("next") or request.META.get("HTTP_REFERER") or reverse(
            "admin:proposals_proposal_changelist")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = reverse("admin:proposals_proposal_changelist")
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:proposals_proposal_change", args=[proposal.pk]))
        if not self.has_decide_permission(request, proposal):
            raise PermissionDenied
        decision = request.POST.get("decision")
        try:
            if decision == "approve":
                payload = _payload_from_form(request.POST.get("payload"), proposal)
                proposal = services.proposal_approve(proposal=proposal, decided_by=request_actor(request), payload=payload)
                self._report(request, proposal)
            elif decision == "deny":
                proposal = services.proposal_deny(proposal=proposal, decided_by=request_actor(request),
                                                  reason=request.POST.get("reason", ""))
                self.message_user(request, f"Proposal #{proposal.pk} denied.")
            else:
                self.message_user(request, "Choose approve or deny.", messages.ERROR)
        except (ApplicationError, ValidationError) as exc:
            self.message_user(request, f"Proposal #{proposal.pk}: {getattr(exc, 'message', exc)}", messages.ERROR)
        return HttpResponseRedirect(back)

    @admin.action(description="Approve selected proposals", permissions=["decide"])
    def approve_selected(self, request, queryset):
        counts = {"approved": 0, "failed": 0, "skipped": 0}
        for proposal in queryset:
            if proposal.status not in (ProposalStatus.PENDING, ProposalStatus.FAILED) or not \
                    self.has_decide_permission(request, proposal):
                counts["skipped"] += 1
                continue
            proposal = services.proposal_approve(proposal=proposal, decided_by=request_actor(request))
            if proposal.status == ProposalStatus.FAILED:
                counts["failed"] += 1
                self.message_user(request, f"Proposal #{proposal.pk} failed: {proposal.failure_reason}",
                                  messages.ERROR)
            else:
                counts["approved"] += 1
        self.message_user(request, "Approved {approved}, failed {failed}, skipped {skipped} "
                                   "(already decided or not yours to decide).".format(**counts))

    @admin.action(description="Deny selected proposals…", permissions=["decide"])
    def deny_selected(self, request, queryset):
        reason = request.POST.get("reason", "").strip()
        if request.POST.get("confirm") and reason:
            denied = skipped = 0
            for proposal in queryset:
                if proposal.status not in (ProposalStatus.PENDING, ProposalStatus.FAILED) or not \
                        self.has_decide_permission(request, proposal):
                    skipped += 1
                    continue
                services.proposal_deny(proposal=proposal, decided_by=request_actor(request), reason=reason)
                denied += 1
            self.message_user(request, f"Denied {denied}, skipped {skipped} (already decided or not yours to decide).")
            return None
        return TemplateResponse(request, "admin/proposals/proposal/deny_selected.html", {
            **self.admin_site.each_context(request),
            "title": "Deny proposals",
            "opts": self.model._meta,
            "proposals": queryset,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            "missing_reason": bool(request.POST.get("confirm")),
        })

    def _report(self, request, proposal):
        if proposal.status == ProposalStatus.FAILED:
            self.message_user(request, f"Proposal #{proposal.pk} failed: {proposal.failure_reason}", messages.ERROR)
        else:
            self.message_user(request, f"Proposal #{proposal.pk} approved: {proposal.result_ref or 'done'}.")


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    """The audit trail, read-only."""

    list_display = ["created_at", "proposal", "action", "decided_by", "result_ref", "error"]
    list_filter = ["action", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["decided_by", "reason", "result_ref"]
    list_select_related = ["proposal"]

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ProposalPolicy)
class ProposalPolicyAdmin(WorkspaceScopedAdmin):
    list_display = ["workspace", "auto_approve_max_level"]
    list_editable = ["auto_approve_max_level"]


class RoutineRunInline(admin.TabularInline):
    model = RoutineRun
    extra = 0
    can_delete = False
    fields = ["created_at", "status", "fire_ref", "error", "task_id"]
    readonly_fields = fields
    ordering = ["-created_at"]
    max_num = 0


@admin.register(Routine)
class RoutineAdmin(WorkspaceScopedAdmin):
    """Routines minted from proposals. Switch one off or change its schedule on its periodic task."""

    list_display = ["name", "workspace", "schedule", "timezone", "enabled", "route", "proposal", "created_at"]
    list_filter = [("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["name", "prompt"]
    readonly_fields = ["workspace", "name", "schedule", "timezone", "proposal", "periodic_task_link", "created_at"]
    fields = ["workspace", "name", "schedule", "timezone", "prompt", "route", "proposal", "periodic_task_link",
              "created_at"]
    inlines = [RoutineRunInline]

    def has_add_permission(self, request):
        return False  # routines are minted by approving a `routines` proposal

    def delete_model(self, request, obj):
        scheduled_routines.routine_delete(routine=obj)

    def delete_queryset(self, request, queryset):
        for routine in queryset:
            scheduled_routines.routine_delete(routine=routine)

    @admin.display(boolean=True)
    def enabled(self, routine):
        return bool(routine.periodic_task and routine.periodic_task.enabled)

    @admin.display(description="periodic task")
    def periodic_task_link(self, routine):
        if routine.periodic_task_id is None:
            return "—"
        url = reverse("admin:django_celery_beat_periodictask_change", args=[routine.periodic_task_id])
        return format_html('<a href="{}">{}</a>', url, routine.periodic_task.name)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("periodic_task", "workspace", "proposal")


@admin.register(HelperHost)
class HelperHostAdmin(WorkspaceScopedAdmin):
    list_display = ["name", "workspace", "executor", "enabled", "timeout_seconds", "description"]
    list_filter = [("workspace", admin.RelatedOnlyFieldListFilter), "executor", "enabled"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)

        class HostForm(form):
            def clean(self):
                cleaned = super().clean()
                host = helper_jobs.HostConfig(
                    name=cleaned.get("name") or "", executor=cleaned.get("executor") or "",
                    command=cleaned.get("command") if isinstance(cleaned.get("command"), list) else [],
                    timeout_seconds=cleaned.get("timeout_seconds") or 0,
                    pass_env=cleaned.get("pass_env") or [], config=cleaned.get("config") or {})
                try:
                    helper_jobs.helper_host_validate(host)
                except ApplicationError as exc:
                    raise ValidationError(exc.message) from None
                return cleaned

        return HostForm


@admin.register(HelperJob)
class HelperJobAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "title", "host", "status", "exit_code", "timed_out", "started_at", "finished_at",
                    "delta_id"]
    list_filter = ["status", "host", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["title", "task"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def _pretty(payload) -> str:
    return json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True)


def _payload_from_form(raw: str | None, proposal: Proposal):
    """None when the form's payload is absent or unchanged (a plain approval)."""
    if raw is None or not raw.strip():
        return None
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise ApplicationError(f"the edited payload is not valid JSON: {exc}") from None
    return None if payload == proposal.payload else payload
