"""What the dashboard's tests set up: users with a role in a workspace, proposals at L1 and L3, a
Festinger conflict, a fire that called tools."""

from django.contrib.auth.models import User

from fathom.models import Membership
from harness.runtime.background import task_create
from harness.runtime.services import session_create
from lake.services import delta_create
from proposals.services import proposal_draft
from tests.harness.tool_fire import run_tools

PASSWORD = "a long passphrase"


def member(workspace, *, username: str = "operator@example.com", role: str = "owner") -> User:
    user = User.objects.filter(username=username).first() or User.objects.create_user(
        username=username, email=username, password=PASSWORD)
    Membership.objects.create(user=user, workspace=workspace, role=role)
    return user


def provenance_proposal(workspace, *, level: int, title: str = "The rover era"):
    """A provenance proposal over two fresh moments: L1/L2 approve at draft time, L3 waits."""
    moments = [delta_create(workspace=workspace, content=f"rover note {n}", tags=["kind:note"]) for n in (1, 2)]
    return proposal_draft(workspace=workspace, tool="provenance", title=title, producer="script:test",
                          rationale="they belong together", payload={"from_ids": [m.pk for m in moments],
                                                                     "level": level})


def fire_with_tools(script, workspace, *, question: str = "what about the rover?"):
    """A finished fire whose first turn planned and searched: two tool calls with arguments and results."""
    fire, _ = run_tools(script, workspace, [
        ("p1", "plan", {"question": question, "steps": ["find the notes", "summarise"]}),
        ("s1", "state", {"action": "pending_intents"}),
    ], respond={"body": "The rover went north."}, question=question, mode="reactive")
    return fire


def background_task(workspace, fire):
    """A pending background task the fire started (in a session of its own)."""
    session = session_create(workspace=workspace, title="tasks")
    return task_create(session=session, tool="fs_list", arguments={"path": "fs://notes"}, fire=fire,
                       idempotency_key=f"{fire.pk}:1:t1")
