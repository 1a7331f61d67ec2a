"""Reads of the runtime, always scoped by workspace."""


from fathom.errors import NotFoundError
from fathom.selectors import workspace_row_get
from harness.runtime.models import (
    AgentProfile,
    ProfileFieldVersion,
    Session,
    SessionEvent,
    SessionSchedule,
    Task,
    Trigger,
    UserProfile,
)
from harness.runtime.profiles import DEFAULT_AGENT, DEFAULT_AGENT_SLUG


def session_get(*, workspace, session_id) -> Session:
    return workspace_row_get(Session, workspace=workspace, pk=session_id, noun="session")


def sessions_list(*, workspace):
    return Session.objects.filter(workspace=workspace)


def session_events_after(*, session_id, after: int = 0, limit: int = 200) -> list[SessionEvent]:
    """Events numbered above `after`, oldest first (the caller already checked the workspace)."""
    return list(SessionEvent.objects.filter(session_id=session_id, seq__gt=after).order_by("seq")[:limit])


def profiles_list(*, workspace, model: type[AgentProfile] | type[UserProfile]):
    """The workspace's stored agent or user profiles."""
    return model.objects.filter(workspace=workspace)


def session_messages(*, session: Session):
    return Trigger.objects.filter(session=session, kind=Trigger.Kind.USER_MESSAGE).order_by("created_at", "id")


def agent_profile_default_get(*, workspace) -> AgentProfile:
    """The workspace's default agent profile as it stands: stored once something used or changed
    it (a session, an edit), else unsaved, with the defaults. Reading never creates it."""
    stored = AgentProfile.objects.filter(workspace=workspace, slug=DEFAULT_AGENT_SLUG).first()
    return stored or AgentProfile(workspace=workspace, slug=DEFAULT_AGENT_SLUG, **DEFAULT_AGENT)


def agent_profile_show(*, workspace, slug: str) -> AgentProfile:
    """An agent profile by slug, the default one included before it is stored."""
    if slug == DEFAULT_AGENT_SLUG:
        return agent_profile_default_get(workspace=workspace)
    found = AgentProfile.objects.filter(workspace=workspace, slug=slug).first()
    if found is None:
        raise NotFoundError(f"no agent profile {slug!r} in this workspace")
    return found


def agent_profiles_with_default(*, workspace, profiles: list[AgentProfile]) -> list[AgentProfile]:
    """A first page of the workspace's agent profiles, with the default one in front while it is
    not stored (so listing shows it without creating it)."""
    if AgentProfile.objects.filter(workspace=workspace, slug=DEFAULT_AGENT_SLUG).exists():
        return profiles
    return [agent_profile_default_get(workspace=workspace), *profiles]


# --- background tasks and profile history ------------------------------------------------------------------

def task_get(*, workspace, task_id) -> Task:
    return workspace_row_get(Task, workspace=workspace, pk=task_id, noun="task")


def session_tasks(*, session: Session, state: str = ""):
    """The session's tasks (optionally in one state)."""
    tasks = Task.objects.filter(session=session)
    return tasks.filter(state=state) if state else tasks


def profile_history(*, profile, field: str = ""):
    """The values a profile's fields had before each write replaced them, newest first."""
    owner = {"agent_profile": profile} if isinstance(profile, AgentProfile) else {"user_profile": profile}
    versions = ProfileFieldVersion.objects.filter(**owner) if profile.pk else ProfileFieldVersion.objects.none()
    return versions.filter(field=field) if field else versions


# --- schedules ----------------------------------------------------------------------------------------------

def session_schedule_get(*, workspace, schedule_id) -> SessionSchedule:
    return workspace_row_get(SessionSchedule, workspace=workspace, pk=schedule_id, noun="schedule")


def session_schedules_list(*, session: Session):
    return SessionSchedule.objects.filter(session=session).select_related("periodic_task").order_by("created_at", "id")


# --- The operator dashboard's reads (dashboard) -----------------------------------------------

def tasks_of_fires(*, workspace, fire_ids) -> list[Task]:
    """The background tasks these fires started, oldest first, in one query."""
    return list(Task.objects.filter(workspace=workspace, fire_id__in=list(fire_ids)).order_by("created_at", "id"))


def tasks_active(*, workspace, limit: int) -> list[Task]:
    """The workspace's pending and running background tasks, oldest first (the next to run on top)."""
    return list(Task.objects.filter(workspace=workspace, state__in=[Task.State.PENDING, Task.State.RUNNING])
                .order_by("created_at", "id")[:limit])


def messages_waiting(*, workspace, limit: int) -> list[Trigger]:
    """The workspace's user messages that no turn has taken up yet, newest first."""
    return list(Trigger.objects.filter(workspace=workspace, kind=Trigger.Kind.USER_MESSAGE,
                                       state=Trigger.State.QUEUED).order_by("-created_at", "-id")[:limit])
