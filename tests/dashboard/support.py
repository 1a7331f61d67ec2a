"""What the dashboard's tests set up: users with a role in a workspace, proposals at L1 and L3, a
Festinger conflict, a concept Festinger recalls, an agent looping behind Festinger's proxy, a fire that
called tools."""

from django.contrib.auth.models import User

from fathom.models import Membership
from festinger import cache
from festinger.models import Concept
from festinger.services import insert_fact
from harness.runtime.background import task_create
from harness.runtime.services import session_create
from lake.services import delta_create
from proposals.services import proposal_draft
from tests.festinger.proxy_support import Agent
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


def known_concept(workspace):
    """Festinger's world knows gnommoweb (a repo, in the dimension type) and has seen it often: a prompt
    that names it receives a recollection."""
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    Concept.objects.filter(workspace=workspace, token="gnommoweb").update(encounter_count=50)
    cache.world_reload(workspace.pk)


STUCK = "I will list the files in /tmp to find the report."


def stuck_agent(proxy, fake_ollama, workspace, *, session: str = "agent-zero-1", turns: int = 7) -> Agent:
    """An agent behind Festinger's proxy whose model gives the same answer every turn: detected at the
    third, mitigated from the fourth, its circuit breaker open at the seventh."""
    fake_ollama.always_chat(STUCK)
    agent = Agent(proxy, workspace, session, task="Find the quarterly report of gnommoweb.")
    for _ in range(turns):
        agent.turn()
    return agent


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
