"""The dashboard's views: thin. Each reads through an app's selectors or acts through its services,
then renders a page, or for an htmx request the fragment it replaces. Every form works without
JavaScript (a POST, then a redirect back with a message)."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpResponseRedirect
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from dashboard import forms, stream
from dashboard.access import current_set, current_switch, dashboard_view
from dashboard.feed import feed_page, fire_cards, proposal_row
from dashboard.festinger import loop_event_row, recollection_entry
from dashboard.filters import FeedFilterForm, feed_match
from dashboard.pages import proposal_tabs_oob
from dashboard.panels import side_panel_render, side_panels_render
from dashboard.sections import pretty, thinking_of
from dashboard.selectors import (
    conversation_get,
    onboarding_state,
    proposal_newest_id,
    proposals_newer,
)
from fathom.auth import request_actor
from fathom.errors import ApplicationError, NotFoundError
from fathom.llm.services import model_assign, model_create
from fathom.services import apikey_create, may_create_workspaces, workspace_create_owned
from festinger.resolution import conflict_apply
from festinger.selectors import conflict_get
from harness.autonomy.selectors import decisions_list
from harness.autonomy.services import INBOX_ACTIONS, autonomy_settings_update, inbox_mark
from harness.conductor.selectors import run_get
from harness.conductor.services import run_cancel
from harness.fires.selectors import (
    fire_calls_by_role,
    fire_citations,
    fire_get,
    fire_in_shared_trace,
    fire_trace,
    fire_with_journal_get,
    fires_progress,
)
from harness.quality.services import feedback_create
from harness.runtime import background
from harness.runtime.background import task_label
from harness.runtime.selectors import session_get, task_get
from harness.runtime.services import message_send, session_create
from harness.runtime.sse import event_stream_response
from lake.search import DEPTHS, MODES, deltas_search
from lake.selectors import delta_get, deltas_list, normalize_id, provenance_children, provenance_parents
from lake.services import delta_create
from proposals.selectors import proposal_get
from proposals.services import proposal_approve, proposal_deny

DASHBOARD_SESSIONS_KEY = "dashboard_sessions"
STREAM_SECONDS = 300
DECISION_ACTIONS = ("approve", "deny", "edit")


class LoginView(auth_views.LoginView):
    template_name = "dashboard/login.html"
    redirect_authenticated_user = True
    next_page = "dashboard:feed"


# --- The feed ---------------------------------------------------------------------------------------

@require_GET
@dashboard_view
def feed(request):
    current = request.dashboard
    before = _before(request)
    match = feed_match(request.GET)
    # Taken before the page is read: a fire or proposal a worker creates while it is read (a question
    # just asked) is newer, so the live feed sends it even though the page could not show it.
    read_at = timezone.now()
    stream_after = proposal_newest_id(workspace=current.workspace)
    page = feed_page(workspace=current.workspace, before=before, match=match)
    if request.headers.get("HX-Request") and before is not None:
        return render(request, "dashboard/partials/feed_page.html", {"page": page, "current": current,
                                                                     "match": match})
    return render(request, "dashboard/feed.html", {
        "current": current, "page": page, "before": before, "panels": side_panels_render(current),
        "ask_form": forms.AskForm(), "stream_after": stream_after,
        "read_at": read_at, "match": match, "filter_form": FeedFilterForm(request.GET),
    })


@require_GET
@dashboard_view
def feed_stream(request):
    """The live feed (SSE). The fires the page showed are known; whatever is newer or moved arrives."""
    current = request.dashboard
    workspace = current.workspace
    match = feed_match(request.GET)  # the page's filter: an entry it does not match is never sent
    csrf_token = get_token(request)
    states = _fire_states(workspace, match)
    cursor = stream.Cursor.parse(request.headers.get("Last-Event-ID", ""))
    shown = dict(item.partition("~")[::2] for item in request.GET.getlist("shown"))
    until = parse_datetime(request.GET.get("until", "").replace(" ", "+"))
    known = stream.known_fires(states, shown=shown, until=until, cursor=cursor)
    # The proposals the page showed though newer than its `proposals_after` (drafted as it was read): a
    # proposal is sent once, as new, so these never are, on a reconnect either (same URL).
    shown_proposals = {_int(raw, 0) for raw in request.GET.getlist("shown_proposal")}
    if cursor is None:
        cursor = stream.Cursor(fires_until=stream.newest_held(states, shown=shown, until=until),
                               proposal_id=_int(request.GET.get("proposals_after"), 0))

    def progress(proposal_id: int):
        if match.proposals is None:
            return _fire_states(workspace, match), []
        return _fire_states(workspace, match), proposals_newer(workspace=workspace, after=proposal_id,
                                                               match=match.proposals)

    def render_fire(fire_id: str) -> str:
        card = fire_cards(workspace, [fire_with_journal_get(workspace=workspace, fire_id=fire_id)])[0]
        # `live`: the card also takes its messages' "waiting" bubbles and the empty feed's note off the
        # page (htmx out-of-band)
        return render_to_string("dashboard/partials/card.html", {"entry": card, "current": current,
                                                                  "csrf_token": csrf_token, "live": True})

    def render_proposal(proposal_id: int) -> str:
        row = proposal_row(proposal_get(workspace=workspace, proposal_id=proposal_id))
        return render_to_string("dashboard/partials/proposal.html", {"entry": row, "current": current,
                                                                      "csrf_token": csrf_token, "live": True})

    return event_stream_response(
        stream.feed_stream(progress=progress, render_fire=render_fire, render_proposal=render_proposal, known=known,
                           shown_proposals=shown_proposals, cursor=cursor, max_seconds=STREAM_SECONDS))


@require_GET
@dashboard_view
def fire_card(request, fire_id):
    """One fire's card (the fragment the live feed swaps; also a page of its own without JavaScript)."""
    fire = fire_with_journal_get(workspace=request.dashboard.workspace, fire_id=fire_id)
    card = fire_cards(request.dashboard.workspace, [fire])[0]
    return render(request, "dashboard/partials/card.html", {"entry": card, "current": request.dashboard})


@require_GET
@dashboard_view
def loop_view(request, fire_id):
    """One fire's substrate close up, turn by turn: the journal, the plan, the trace, its child fires."""
    workspace = request.dashboard.workspace
    fire = fire_with_journal_get(workspace=workspace, fire_id=fire_id)
    card = fire_cards(workspace, [fire])[0]
    thinking = next(section.ctx for section in card.sections if section.name == "thinking")
    work_set = dict(fire.work_set or {})
    return render(request, "dashboard/loop.html", {
        "current": request.dashboard, "fire": fire, "entry": card, "thinking": {**thinking, "open": True},
        "trace": fire_trace(fire=fire), "calls_by_role": fire_calls_by_role(fire=fire),
        "shared_trace": fire_in_shared_trace(fire),
        "messages_worked": work_set.pop("messages", []), "work_set": work_set,
        "response": {key: value for key, value in (fire.response or {}).items() if key not in ("body", "cards")},
        "children": list(fire.children.all()),
        "sections": [section for section in card.sections if section.name != "thinking"],
    })


@require_GET
@dashboard_view
def why_view(request, fire_id):
    """Why a card surfaced: the fire behind it, what it was asked, its tool calls and the moments it cited."""
    workspace = request.dashboard.workspace
    fire = fire_with_journal_get(workspace=workspace, fire_id=fire_id)
    return render(request, "dashboard/why.html", {
        "current": request.dashboard, "entry": fire_cards(workspace, [fire])[0], "thinking": thinking_of(fire),
        "citations": fire_citations(fire=fire),
    })


@require_POST
@dashboard_view(operate=True)
def ask(request):
    """Ask a question in the operator's dashboard session (made on first use, one per workspace)."""
    form = forms.AskForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Write a question first.")
        return redirect("dashboard:feed")
    session = _dashboard_session(request)
    message_send(session=session, content=form.cleaned_data["question"], author=request.user.get_username(),
                 source="dashboard")
    messages.success(request, "Asked. The answer appears in the feed as it is worked out.")
    return redirect("dashboard:feed")


# --- Workspaces ------------------------------------------------------------------------------------

@require_POST
@dashboard_view
def workspace_switch(request):
    workspace = current_switch(request, slug=request.POST.get("workspace", ""))
    messages.info(request, f"Now in {workspace.name or workspace.slug}.")
    return redirect("dashboard:feed")


# --- Proposals ---------------------------------------------------------------------------------------

@require_POST
@dashboard_view(operate=True)
def proposal_decide(request, proposal_id: int, action: str):
    """Approve, deny or edit-and-approve through proposals' services, decided by `operator:user:<name>`
    as in admin and REST."""
    workspace = request.dashboard.workspace
    if action not in DECISION_ACTIONS:
        raise NotFoundError(f"no action {action!r} on proposals")
    proposal = proposal_get(workspace=workspace, proposal_id=proposal_id)
    try:
        if action == "approve":
            proposal = proposal_approve(proposal=proposal, decided_by=request_actor(request))
        elif action == "edit":
            form = forms.ProposalEditForm(request.POST)
            if not form.is_valid():
                return _edit_refused(request, proposal, error=form.errors.get("payload", ["invalid payload"])[0])
            proposal = proposal_approve(proposal=proposal, decided_by=request_actor(request),
                                        payload=form.cleaned_data["payload"])
        else:
            proposal = proposal_deny(proposal=proposal, decided_by=request_actor(request),
                                     reason=request.POST.get("reason", ""))
    except ApplicationError as exc:
        messages.error(request, f"Proposal #{proposal.pk}: {exc.message}")
    else:
        done = {"approve": "approved", "edit": "approved as edited", "deny": "denied"}[action]
        if proposal.status == "failed":
            messages.error(request, f"Proposal #{proposal.pk} failed: {proposal.failure_reason}")
        else:
            messages.success(request, f"Proposal #{proposal.pk} {done}.")
    if request.headers.get("HX-Request"):
        row = proposal_row(proposal_get(workspace=workspace, proposal_id=proposal_id))
        notes = list(messages.get_messages(request))  # shown in the fragment, not on the next page
        response = render(request, "dashboard/partials/proposal.html", {"entry": row, "current": request.dashboard,
                                                                        "notes": notes})
        response.write(proposal_tabs_oob(request))  # the proposals page's counts follow the decision
        response["HX-Trigger"] = PROPOSALS_CHANGED  # "Waiting for you" reloads itself
        return response
    return _back(request)


PROPOSALS_CHANGED = "panel-proposals-changed"


def _edit_refused(request, proposal, *, error: str):
    """An edit that is not valid JSON: the operator's text comes back as typed, the edit open, the
    error beside it (in the feed's fragment, or on the proposal's page); nothing is decided."""
    edit = {"text": request.POST.get("payload", ""), "error": f"Not approved: the payload is not valid JSON ({error})"}
    if request.headers.get("HX-Request"):  # 200: htmx swaps no 4xx, and the fragment carries the error
        return render(request, "dashboard/partials/proposal.html", {
            "entry": proposal_row(proposal), "current": request.dashboard, "edit": edit})
    return render(request, "dashboard/proposal.html", {**_proposal_page(request, proposal), "edit": edit}, status=400)


@require_GET
@dashboard_view
def side_panel_view(request, name: str):
    """One side panel, rendered again (it reloads itself when what it shows changed)."""
    panel = side_panel_render(request.dashboard, name)
    return render(request, "dashboard/partials/side_panel.html", {"panel": panel, "name": name,
                                                                  "current": request.dashboard})


@require_GET
@dashboard_view
def proposal_view(request, proposal_id: int):
    """A proposal with its payload (editable before approval) and every decision: its audit."""
    proposal = proposal_get(workspace=request.dashboard.workspace, proposal_id=proposal_id)
    return render(request, "dashboard/proposal.html", _proposal_page(request, proposal))


def _proposal_page(request, proposal) -> dict:
    """The proposal page's context: the payload as approved when it was (an edit's, not the draft's),
    and the audit with each decision's payload."""
    decisions = list(proposal.decisions_newest)
    approved = next((d for d in decisions if d.action in ("approve", "edit")), None)
    return {"current": request.dashboard, "entry": proposal_row(proposal), "approved": approved,
            "payload": pretty(approved.payload if approved else proposal.payload),
            "drafted": pretty(proposal.payload),
            "decisions": [{"decision": d, "payload": pretty(d.payload)} for d in decisions]}


@require_POST
@dashboard_view(operate=True)
def fire_feedback(request, fire_id):
    """Thumbs up or down on a fire's answer, through the quality harness's `feedback_create` (the
    feedback the verifier calibrates on)."""
    workspace = request.dashboard.workspace
    fire = fire_get(workspace=workspace, fire_id=fire_id)
    try:
        feedback_create(fire=fire, rating=request.POST.get("rating", ""), comment=request.POST.get("comment", ""),
                        author=request_actor(request))
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Thanks: the verifier calibrates on this.")
    if request.headers.get("HX-Request"):
        card = fire_cards(workspace, [fire_with_journal_get(workspace=workspace, fire_id=fire_id)])[0]
        notes = list(messages.get_messages(request))
        return render(request, "dashboard/partials/card.html", {"entry": card, "current": request.dashboard,
                                                                "notes": notes})
    return _back(request)


# --- Autonomy ----------------------------------------------------------------------------------------

@require_POST
@dashboard_view(operate=True)
def autonomy_mode(request):
    """The autonomy switch (off, observe, on), through autonomy's `autonomy_settings_update`."""
    try:
        settings = autonomy_settings_update(workspace=request.dashboard.workspace, mode=request.POST.get("mode", ""))
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Autonomy is {settings.mode}.")
    return _back(request)


@require_POST
@dashboard_view(operate=True)
def inbox_mark_view(request, delta_id: str, action: str):
    """Acknowledge, dismiss or act on an inbox item, through autonomy's `inbox_mark`."""
    if action not in INBOX_ACTIONS:
        raise NotFoundError(f"no action {action!r} on inbox items")
    mark = inbox_mark(workspace=request.dashboard.workspace, delta_id=_delta_id(delta_id), action=action,
                      actor=request_actor(request))
    messages.success(request, f"Inbox item {mark.delta_id}: {mark.get_state_display().lower()}.")
    return _back(request)


@require_POST
@dashboard_view(operate=True)
def conductor_run_cancel(request, run_id):
    """Stop a conductor run through the conductor's `run_cancel`."""
    run = run_cancel(run=run_get(workspace=request.dashboard.workspace, run_id=run_id))
    messages.success(request, f"Run {str(run.pk)[:8]} is {run.status}.")
    return _back(request)


# --- Background tasks ------------------------------------------------------------------------------

@require_POST
@dashboard_view(operate=True)
def task_cancel(request, task_id):
    """Cancel a background task through the runtime's `task_cancel`, by `operator:user:<name>`."""
    task = background.task_cancel(task=task_get(workspace=request.dashboard.workspace, task_id=task_id),
                                  by=request_actor(request))
    messages.success(request, f"Task {task_label(task)} is {task.get_state_display().lower()}.")
    return _back(request)


# --- Festinger -----------------------------------------------------------------------------------------

@require_POST
@dashboard_view(operate=True)
def conflict_override(request, conflict_id: int):
    """The operator's own decision on a pending conflict, through festinger's `conflict_apply`."""
    conflict = conflict_get(workspace=request.dashboard.workspace, conflict_id=conflict_id)
    form = forms.ConflictOverrideForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Conflict #{conflict.pk}: choose a decision.")
        return _back(request)
    decision = {name: value for name, value in form.cleaned_data.items() if value}
    try:
        conflict_apply(conflict_id=conflict.pk, decision=decision, actor=request_actor(request))
    except ApplicationError as exc:
        messages.error(request, f"Conflict #{conflict.pk}: {exc.message}")
    else:
        messages.success(request, f"Conflict #{conflict.pk}: {decision['decision']} applied.")
    return _back(request)


@require_GET
@dashboard_view
def conversation_view(request, session):
    """One conversation as Festinger saw it: the loop detector's detections and mitigations, its circuit
    breaker now, and the recollections its prompts received."""
    found = conversation_get(workspace=request.dashboard.workspace, session=session)
    return render(request, "dashboard/conversation.html", {
        "current": request.dashboard, "session": session, "state": found["state"],
        "events": [loop_event_row(event) for event in found["events"]],
        "recollections": [recollection_entry(row) for row in found["recollections"]],
    })


# --- Onboarding ----------------------------------------------------------------------------------------

@dashboard_view(needs_workspace=False)
def onboarding(request):
    """The first run, step by step: a workspace, an API key (shown once), a model key, a first delta,
    a first question. Each step is a form of its own; the page says which are done."""
    current = request.dashboard
    issued_secret = None
    if request.method == "POST":
        step = request.POST.get("step", "")
        try:
            issued_secret = _onboarding_step(request, step, current)
        except ApplicationError as exc:
            messages.error(request, exc.message)
        if issued_secret is None:
            return redirect("dashboard:onboarding")
        current = request.dashboard
    return render(request, "dashboard/onboarding.html", {
        "current": current, "state": onboarding_state(current=current), "issued_secret": issued_secret,
        "may_create_workspaces": may_create_workspaces(request.user),
        "workspace_form": forms.WorkspaceForm(), "model_form": forms.ModelKeyForm(), "delta_form": forms.DeltaForm(),
        "ask_form": forms.AskForm(),
    })


def _onboarding_step(request, step: str, current) -> str | None:
    """Do one step; returns the API key's secret when that step issued one (shown once, never stored)."""
    if step == "workspace":
        form = forms.WorkspaceForm(request.POST)
        if not form.is_valid():
            raise ApplicationError("; ".join(e for errors in form.errors.values() for e in errors))
        workspace = workspace_create_owned(user=request.user, slug=form.cleaned_data["slug"],
                                           name=form.cleaned_data["name"])
        current_set(request, workspace=workspace)
        messages.success(request, f"Workspace {workspace.slug} created; you own it.")
        return None
    if current is None:
        raise ApplicationError("create a workspace first")
    if not current.may_operate:
        raise ApplicationError("your role in this workspace only reads")
    workspace = current.workspace
    if step == "apikey":
        issued = apikey_create(workspace=workspace, role="operator", name="dashboard onboarding",
                               created_by=request.user)
        messages.success(request, f"API key {issued.key.prefix}… created. Copy it now: it is shown only once.")
        return issued.secret
    if step == "model":
        form = forms.ModelKeyForm(request.POST)
        if not form.is_valid():
            raise ApplicationError("; ".join(e for errors in form.errors.values() for e in errors))
        data = form.cleaned_data
        row = model_create(workspace=workspace, name=f"main-{data['model']}"[:100], provider=data["provider"],
                           model=data["model"], base_url=data["base_url"], api_key=data["api_key"],
                           actor=request_actor(request))
        model_assign(workspace=workspace, role="main", model=row, actor=request_actor(request))
        messages.success(request, f"{row.name} answers the main role (its key is stored encrypted).")
        return None
    if step == "delta":
        form = forms.DeltaForm(request.POST)
        if not form.is_valid():
            raise ApplicationError("write something first")
        delta = delta_create(workspace=workspace, content=form.cleaned_data["content"],
                             tags=form.cleaned_data["tags"], source="dashboard")
        messages.success(request, f"Delta {delta.pk} written to the lake.")
        return None
    if step == "question":
        form = forms.AskForm(request.POST)
        if not form.is_valid():
            raise ApplicationError("write a question first")
        message_send(session=_dashboard_session(request), content=form.cleaned_data["question"],
                     author=request.user.get_username(), source="dashboard")
        messages.success(request, "Asked: the feed shows the answer as it is worked out.")
        return None
    raise ApplicationError(f"no onboarding step {step!r}")


# --- helpers ---------------------------------------------------------------------------------------------

def _dashboard_session(request):
    """The user's dashboard conversation in the current workspace: one session, made on first use."""
    workspace = request.dashboard.workspace
    sessions = request.session.get(DASHBOARD_SESSIONS_KEY, {})
    session_id = sessions.get(str(workspace.pk))
    if session_id:
        try:
            session = session_get(workspace=workspace, session_id=session_id)
            if session.status == "open":
                return session
        except NotFoundError:
            pass
    session = session_create(workspace=workspace, title=f"Dashboard ({request.user.get_username()})")
    request.session[DASHBOARD_SESSIONS_KEY] = {**sessions, str(workspace.pk): str(session.pk)}
    return session


def _fire_states(workspace, match) -> dict:
    """{fire id: (created at, signature)} of the newest fires the live feed watches (those `match` shows)."""
    if match.fires is None:
        return {}
    return {str(fire_id): (created_at, stream.fire_signature(status=status, phase=phase, model_calls=calls,
                                                             turns=turns))
            for fire_id, created_at, status, phase, calls, turns in fires_progress(
                workspace=workspace, limit=stream.WATCHED_FIRES, **match.fires)}


def _before(request):
    raw = request.GET.get("before")
    if not raw:
        return None
    parsed = parse_datetime(raw.replace(" ", "+"))
    if parsed is None:
        raise NotFoundError(f"no feed page before {raw!r}")
    return parsed


def _int(raw, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def _back(request):
    target = request.POST.get("next") or reverse("dashboard:feed")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("dashboard:feed")
    return HttpResponseRedirect(target)


# --- The lake ---------------------------------------------------------------------------------------

@require_GET
@dashboard_view
def lake_view(request):
    """Search the lake (the search API's modes and depths); each hit links to its delta. Without a
    query: the newest deltas (the page refreshes them live)."""
    query, mode, depth = (request.GET.get(name, "").strip() for name in ("q", "mode", "depth"))
    result, error = None, ""
    if query:
        try:
            result = deltas_search(workspace=request.dashboard.workspace, query=query, mode=mode or "hybrid",
                                   depth=depth or "normal", limit=LAKE_HITS)
        except ApplicationError as exc:
            error = exc.message
    return render(request, "dashboard/lake.html", {
        "current": request.dashboard, "query": query, "mode": mode or "hybrid", "depth": depth or "normal",
        "modes": MODES, "depths": list(DEPTHS), "result": result, "error": error,
        "newest": [] if query else list(deltas_list(workspace=request.dashboard.workspace)[:LAKE_NEWEST]),
    }, status=400 if error else 200)


@require_GET
@dashboard_view
def delta_view(request, delta_id: str):
    """One delta with its provenance: what it is made of (down) and what holds it (up), all links."""
    workspace = request.dashboard.workspace
    delta = delta_get(workspace=workspace, id_or_prefix=_delta_id(delta_id))
    return render(request, "dashboard/delta.html", {
        "current": request.dashboard, "delta": delta, "down": provenance_children(workspace=workspace, delta=delta),
        "up": provenance_parents(workspace=workspace, delta_ids=[delta.pk]),
        "tags": [tag for tag in delta.tags if not tag.startswith("from:")]})


def _delta_id(raw: str) -> str:
    """A delta id from the URL, as the lake reads it. One that cannot be an id (not hex, too short) is
    not found, like an unknown one: a link to a delta is only ever wrong, never a bad request."""
    try:
        return normalize_id(raw)
    except ApplicationError:
        raise NotFoundError(f"no delta {raw!r} in this workspace") from None


LAKE_HITS = 20
LAKE_NEWEST = 20


# --- Autonomy ----------------------------------------------------------------------------------------

@require_GET
@dashboard_view
def autonomy_view(request):
    """Autonomy on a page of its own: the switch, pressure and why (the side panel), the latest
    decisions in words, the inbox and the crystal of directives."""
    current = request.dashboard
    return render(request, "dashboard/autonomy.html", {
        "current": current, "panels": [panel for name in ("pressure", "inbox", "directives")
                                       if (panel := side_panel_render(current, name))],
        "decisions": decisions_list(workspace=current.workspace)[:AUTONOMY_DECISIONS]})


AUTONOMY_DECISIONS = 50
