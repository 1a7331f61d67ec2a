"""The tools that act, through fires: engage_feed, see_image, orient_shift, dispatch_helper and
mint_routine; each side effect keyed by (fire, turn, call), so a replayed call writes nothing twice."""

import json
import time

import pytest
from django.db import OperationalError

from fathom.llm.scripted import Script
from harness.fires.models import Fire, FireToolCall
from harness.fires.services import fire_create, fire_run
from harness.fires.tools import REGISTRY, ToolContext
from harness.fires.tools.orient_shift import orient_regenerate
from harness.runtime.services import message_send
from lake.media import media_store
from lake.models import Delta
from lake.services import delta_create
from proposals.models import HelperHost, HelperJob, Proposal, Routine
from proposals.services import proposal_approve
from tests.harness.support import session_tick
from tests.harness.tool_fire import received, run_tools

# The resolver the see_image tests configure (FATHOM_MEDIA_RESOLVER names `resolve_media`): the bytes it
# can read, so a test can lose an uploaded image's bytes by leaving it out.
MEDIA: dict[tuple[int, str], bytes] = {}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


def resolve_media(workspace_id: int, media_hash: str) -> tuple[bytes, str]:
    return MEDIA[(workspace_id, media_hash)], "image/png"


@pytest.fixture
def media_resolver(settings):
    settings.FATHOM_MEDIA_RESOLVER = f"{__name__}.resolve_media"
    yield MEDIA
    MEDIA.clear()


def uploaded(workspace, data: bytes = PNG) -> str:
    """The hash of an image uploaded to the workspace's media store, as a delta names it."""
    return media_store(workspace=workspace, data=data)[0].hash


def replay(fire, call_id: str, name: str, arguments: dict, turn: int = 1):
    """Run a recorded call again with its own (fire, turn, call) key, as a resumed fire would."""
    return REGISTRY[name].run(ToolContext(fire=fire, turn_number=turn, call_id=call_id), arguments)


# --- engage_feed ------------------------------------------------------------------------------------------

def test_engage_feed_writes_engagement_deltas_once_per_call(scripted_llm, session):
    workspace = session.workspace
    card = delta_create(workspace=workspace, content="a card about crypto prices", tags=["kind:card"])
    other = delta_create(workspace=workspace, content="a card about sailing", tags=["kind:card"])
    message_send(session=session, content="less crypto please, more sailing")
    less = {"kind": "less", "target_ids": [card.pk], "reason": "tired of crypto"}
    scripted_llm.reply(tool_calls=[
        {"id": "less", "name": "engage_feed", "arguments": less},
        {"id": "more", "name": "engage_feed", "arguments": {"kind": "engagement:more", "target_ids": [other.pk[:10]]}},
        {"id": "topic", "name": "engage_feed", "arguments": {"kind": "more", "reason": "anything about boats"}},
        {"id": "unknown", "name": "engage_feed", "arguments": {"kind": "less", "target_ids": ["0123456789abcdef"]}},
        {"id": "empty", "name": "engage_feed", "arguments": {"kind": "less"}},
    ])
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "noted"}}]).call_tool("skip")
    session_tick(session_id=session.pk)
    fire = Fire.objects.get(session=session)
    results = received(scripted_llm.sent[1])

    written = Delta.objects.filter(workspace=workspace, tags__contains=["kind:engagement"])
    assert written.count() == 3
    disliked = written.get(tags__contains=["engagement:less"])
    assert disliked.content == "tired of crypto"
    assert {f"target:{card.pk}", f"fire:{fire.pk}", session.tag} <= set(disliked.tags)
    liked = written.get(tags__contains=["engagement:more", f"target:{other.pk}"])
    assert liked.content == f"engagement:more for {other.pk}: a card about sailing"
    assert json.loads(results["less"]) == {"recorded": "engagement:less", "delta_ids": [disliked.pk],
                                           "target_ids": [card.pk]}
    assert written.get(content="anything about boats").tags[:2] == ["kind:engagement", "engagement:more"]
    assert results["unknown"] == "error: no delta '0123456789abcdef' in this workspace"
    assert results["empty"].startswith("error: say what the preference is about")
    # a replay of the same call (same fire, turn and call id) writes nothing more
    assert replay(fire, "less", "engage_feed", less)["delta_ids"] == [disliked.pk]
    assert written.count() == 3


# --- see_image ----------------------------------------------------------------------------------------------

def test_see_image_attaches_the_image_to_the_next_model_call(scripted_llm, workspace, other_workspace,
                                                              media_resolver):
    harbour, lost = uploaded(workspace), uploaded(workspace, PNG + b"lost")
    theirs = uploaded(other_workspace, PNG + b"theirs")
    photo = delta_create(workspace=workspace, content="the harbour at dusk", media_hash=harbour)
    delta_create(workspace=other_workspace, content="theirs", media_hash=theirs)
    delta_create(workspace=workspace, content="bytes gone", media_hash=lost)
    media_resolver[(workspace.pk, harbour)] = PNG
    media_resolver[(other_workspace.pk, theirs)] = PNG
    fire, results = run_tools(scripted_llm, workspace, [
        ("see", "see_image", {"media_hash": f"[image {harbour}]"}),
        ("unknown", "see_image", {"media_hash": "sha256-nothing"}),
        ("theirs", "see_image", {"media_hash": theirs}),
        ("lost", "see_image", {"media_hash": lost}),
    ])
    opened = json.loads(results["see"])
    assert opened["media_hash"] == harbour and opened["media_type"] == "image/png"
    assert opened["size_bytes"] == len(PNG) and opened["in_deltas"][0]["id"] == photo.pk
    assert results["unknown"] == "error: no image with media hash 'sha256-nothing' in this lake"
    assert results["theirs"] == f"error: no image with media hash {theirs!r} in this lake"
    assert results["lost"].startswith(f"error: the media store could not load {lost!r}: KeyError")
    # the next call carries the one image that opened, after the turn's tool results
    after = scripted_llm.sent[1].messages
    with_images = [m for m in after if m.images]
    assert len(with_images) == 1 and with_images[0].role == "user"
    assert [(i.media_hash, i.media_type) for i in with_images[0].images] == [(harbour, "image/png")]
    assert after.index(with_images[0]) == max(i for i, m in enumerate(after) if m.role == "tool") + 1


def test_see_image_without_a_media_store_says_so(scripted_llm, workspace, settings):
    settings.FATHOM_MEDIA_RESOLVER = ""
    photo = uploaded(workspace)
    delta_create(workspace=workspace, content="a photo", media_hash=photo)
    _, results = run_tools(scripted_llm, workspace, [("see", "see_image", {"media_hash": photo})])
    assert "no media store is configured" in results["see"]
    assert not any(m.images for m in scripted_llm.sent[1].messages)


def resolve_media_blip(workspace_id: int, media_hash: str):
    raise OperationalError("the connection was reset")


def test_a_transient_error_of_the_media_store_is_raised_for_the_fires_retry_not_shown_to_the_model(
        scripted_llm, workspace, settings):
    settings.FATHOM_MEDIA_RESOLVER = f"{__name__}.resolve_media_blip"
    photo = uploaded(workspace)
    delta_create(workspace=workspace, content="a photo", media_hash=photo)

    with pytest.raises(OperationalError):
        run_tools(scripted_llm, workspace, [("see", "see_image", {"media_hash": photo})])

    assert len(scripted_llm.sent) == 1  # the model never read the blip as the tool's result


# --- orient_shift -------------------------------------------------------------------------------------------

def test_orient_shift_queues_the_regeneration_after_its_result_commits(
        scripted_llm, session, django_capture_on_commit_callbacks):
    from harness.fires import tasks

    queued = []
    message_send(session=session, content="I'm done with crypto; it's all robotics now")
    scripted_llm.call_tool("orient_shift", {"reason": "from crypto to robotics"}, id="o")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "shifting"}}]).call_tool("skip")
    original = tasks.orient_regenerate.apply_async  # what the tool's signature sends through
    tasks.orient_regenerate.apply_async = lambda args=(), kwargs=None, **options: queued.append(tuple(args))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            session_tick(session_id=session.pk)
    finally:
        tasks.orient_regenerate.apply_async = original
    fire = Fire.objects.get(session=session)
    assert received(scripted_llm.sent[1])["o"].startswith("orient regeneration queued")
    assert queued == [(str(fire.pk), f"{fire.pk}:1:o", "from crypto to robotics")]


def test_orient_regeneration_writes_one_orient_per_call(scripted_llm, session):
    workspace = session.workspace
    first = delta_create(workspace=workspace, content="The operator follows crypto markets.",
                         tags=["kind:orient", session.tag])
    delta_create(workspace=workspace, content="boats!", tags=["kind:engagement", "engagement:more"])
    message_send(session=session, content="robots are what I care about now")
    fire = fire_create(workspace=workspace, mode="reactive", question="robots", session=session)
    scripted_llm.reply("The operator has turned to robotics; sailing is welcome, crypto is fading.")
    orient_id = orient_regenerate(fire_id=str(fire.pk), key=f"{fire.pk}:1:o", reason="crypto to robotics")
    orient = Delta.objects.get(pk=orient_id)
    assert orient.content.startswith("The operator has turned to robotics")
    assert set(orient.tags) == {"kind:orient", f"fire:{fire.pk}", session.tag, f"supersedes:{first.pk}"}
    brief = scripted_llm.sent[0].messages[-1].content
    assert "crypto to robotics" in brief and "follows crypto markets" in brief and "more: boats!" in brief
    assert "robots are what I care about now" in brief and scripted_llm.sent[0].role == "writer"
    # the same call again (a redelivered task) asks nothing and writes nothing
    assert orient_regenerate(fire_id=str(fire.pk), key=f"{fire.pk}:1:o", reason="again") == orient_id
    assert len(scripted_llm.sent) == 1
    assert Delta.objects.filter(workspace=workspace, tags__contains=["kind:orient"]).count() == 2


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_acting_tools_in_a_message_fire_run_by_a_worker(celery_worker, api, session):
    # given a message sent over REST, and a model that records a preference and shifts the orient
    workspace = session.workspace
    main = Script.install(workspace)
    writer = Script.install(workspace, roles=("writer",))
    judge = Script.install(workspace, roles=("classifier",))
    axes = json.dumps(dict.fromkeys(("salience", "novelty", "resonance", "confidence", "comfort"), 0.5))
    try:
        main.reply(tool_calls=[
            {"id": "e", "name": "engage_feed", "arguments": {"kind": "more", "reason": "more about the sea"}},
            {"id": "o", "name": "orient_shift", "arguments": {"reason": "toward the sea"}},
            {"id": "c", "name": "pattern", "arguments": {"action": "count_by", "by": "engagement"}},
        ])
        main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "noted"}}]).call_tool("skip")
        writer.reply("Oriented toward the sea.")
        judge.reply(axes).reply(axes)
        response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "I want the sea"}, format="json")
        assert response.status_code == 202
        # when the worker has run the turn and the orient task
        orient = wait_for(lambda: Delta.objects.filter(workspace=workspace, tags__contains=["kind:orient"]).first())
        fire = Fire.objects.get(session=session)
        # then the fire's record over REST shows each tool's result
        body = api.get(f"/v1/fires/{fire.pk}").json()
        calls = {c["call_id"]: c for turn in body["turns"] for c in turn["calls"]}
        assert json.loads(calls["e"]["result"])["recorded"] == "engagement:more"
        assert calls["o"]["result"].startswith("orient regeneration queued")
        assert "- more: 1" in calls["c"]["result"]
        assert orient.content == "Oriented toward the sea." and {session.tag, f"fire:{fire.pk}"} <= set(orient.tags)
        # and the next turn reads it in its system message and through the crystal lens
        main.call_tool("state", {"action": "crystal"}, id="s")
        main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "the sea"}}]).call_tool("skip")
        api.post(f"/v1/sessions/{session.pk}/messages", {"content": "where am I headed?"}, format="json")
        wait_for(lambda: Fire.objects.filter(session=session, status="finished").count() == 2)
        assert "Oriented toward the sea." in received(main.sent[-2])["s"]
        assert "# Current orient" in main.sent[-3].messages[0].content
        wait_for(lambda: Delta.objects.filter(workspace=workspace, tags__contains=["kind:judge-axes"]).count() == 2
                 and not Delta.objects.filter(workspace=workspace, embedding__isnull=True).exists())
    finally:
        for script in (main, writer, judge):
            script.reset()


def wait_for(condition, timeout: float = 30, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(every)
    raise AssertionError("timed out waiting")


# --- dispatch_helper and mint_routine ------------------------------------------------------------------------

def test_dispatch_helper_drafts_a_proposal_that_waits_for_the_operator(scripted_llm, workspace):
    HelperHost.objects.create(workspace=workspace, name="studio", command=["true"])
    task = {"host": "studio", "task": "run the test suite and report", "title": "run the tests"}
    fire, results = run_tools(scripted_llm, workspace, [
        ("d", "dispatch_helper", task),
        ("nohost", "dispatch_helper", {**task, "host": "moon"}),
    ])
    proposal = Proposal.objects.get(workspace=workspace)
    assert (proposal.tool, proposal.status, proposal.title) == ("helper-dispatch", "pending", "run the tests")
    assert proposal.payload == {"host": "studio", "task": "run the test suite and report"}
    assert proposal.producer == f"harness:fire:{fire.pk}:1:d"
    assert json.loads(results["d"])["proposal_id"] == proposal.pk
    assert results["nohost"] == "error: unknown host 'moon'; configured hosts: studio"
    assert not HelperJob.objects.exists()  # nothing runs before approval
    assert replay(fire, "d", "dispatch_helper", task)["proposal_id"] == proposal.pk
    assert Proposal.objects.filter(workspace=workspace).count() == 1
    # the system message named the hosts
    assert "Helper hosts for dispatch_helper: studio." in scripted_llm.sent[0].messages[0].content


def test_mint_routine_drafts_a_routine_the_operator_approves(scripted_llm, workspace):
    routine = {"name": "morning-digest", "schedule": "0 7 * * 1-5", "prompt": "what happened overnight?",
               "route_to": "session:main", "title": "a weekday digest"}
    fire, results = run_tools(scripted_llm, workspace, [
        ("m", "mint_routine", routine),
        ("badcron", "mint_routine", {**routine, "name": "other", "schedule": "every morning"}),
        ("where", "mint_routine", {**routine, "workspace": "elsewhere"}),
    ])
    proposal = Proposal.objects.get(workspace=workspace)
    assert (proposal.tool, proposal.status) == ("routines", "pending")
    assert proposal.payload["route"] == "session:main" and proposal.payload["schedule"] == "0 7 * * 1-5"
    assert json.loads(results["m"])["status"] == "pending"
    assert results["badcron"].startswith("error: payload.schedule:")
    assert results["where"].startswith("error: malformed arguments for mint_routine")
    assert not Routine.objects.filter(workspace=workspace).exists()
    proposal_approve(proposal=proposal, decided_by="operator:test")
    assert Routine.objects.get(workspace=workspace).name == "morning-digest"
    assert replay(fire, "m", "mint_routine", routine)["proposal_id"] == proposal.pk


def test_an_introspective_child_cannot_dispatch_or_mint(scripted_llm, workspace):
    HelperHost.objects.create(workspace=workspace, name="studio", command=["true"])
    parent = fire_create(workspace=workspace, mode="reactive", question="should we automate?")
    scripted_llm.call_tool("introspect", {"question": "what would I automate?"}, id="i")
    scripted_llm.reply(tool_calls=[  # the child tries the side-effect tools
        {"id": "d", "name": "dispatch_helper", "arguments": {"host": "studio", "task": "x", "title": "x"}},
        {"id": "m", "name": "mint_routine", "arguments": {"name": "n", "schedule": "0 7 * * *", "prompt": "p",
                                                          "title": "t"}},
    ])
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "nothing yet"}}]).call_tool("skip")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "later"}}]).call_tool("skip")
    fire_run(fire_id=parent.pk)
    child_results = received(scripted_llm.sent[2])
    assert "unknown tool 'dispatch_helper'" in child_results["d"]
    assert "unknown tool 'mint_routine'" in child_results["m"]
    child_offered = {t["name"] for t in scripted_llm.sent[1].tools}
    assert not child_offered & {"introspect", "dispatch_helper", "mint_routine"}
    assert {"orient_shift", "engage_feed", "see_image", "state"} <= child_offered
    system = scripted_llm.sent[1].messages[0].content
    assert "Not available in this fire: dispatch_helper, introspect, mint_routine." in system
    assert "Helper hosts" not in system
    assert not Proposal.objects.exists()
    assert FireToolCall.objects.filter(name="dispatch_helper", ok=False).count() == 1


def test_the_orient_standing_when_a_fire_starts_is_in_its_system_message(scripted_llm, session):
    workspace = session.workspace
    delta_create(workspace=workspace, content="Oriented toward the sea.", tags=["kind:orient", session.tag])
    delta_create(workspace=workspace, content="Oriented toward other things.", tags=["kind:orient", "session:other"])
    fire = fire_create(workspace=workspace, mode="introspective", question="where to?")
    later = delta_create(workspace=workspace, content="Oriented toward the mountains.", tags=["kind:orient"])
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "the sea"}}]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    system = scripted_llm.sent[0].messages[0].content
    assert "# Current orient" in system and "Oriented toward other things." in system  # no river: the latest
    assert later.content not in system  # written after the fire started
    message_send(session=session, content="and now?")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "mountains"}}]).call_tool("skip")
    session_tick(session_id=session.pk)
    river_system = scripted_llm.sent[2].messages[0].content
    assert "Oriented toward the sea." in river_system and "other things" not in river_system  # the river's own


def test_a_crash_between_a_side_effect_and_its_record_writes_nothing_twice(
        scripted_llm, session, monkeypatch, django_capture_on_commit_callbacks):
    # given a fire whose process dies after each acting tool ran but before its result was recorded
    from harness.fires import loop, tasks

    workspace = session.workspace
    HelperHost.objects.create(workspace=workspace, name="studio", command=["true"])
    target = delta_create(workspace=workspace, content="a card about sailing", tags=["kind:card"])
    record, died, queued = loop._record, [], []

    def die_once(fire, turn, position, call, result, **kwargs):
        if call["id"] in "edmo" and call["id"] not in died:
            died.append(call["id"])
            raise SystemExit("killed")  # like kill -9: nothing after this point commits
        return record(fire, turn, position, call, result, **kwargs)

    monkeypatch.setattr(loop, "_record", die_once)
    monkeypatch.setattr(tasks.orient_regenerate, "apply_async",
                        lambda args=(), kwargs=None, **options: queued.append(tuple(args)))
    calls = [("e", "engage_feed", {"kind": "more", "target_ids": [target.pk]}),
             ("d", "dispatch_helper", {"host": "studio", "task": "t", "title": "t"}),
             ("m", "mint_routine", {"name": "n", "schedule": "0 7 * * *", "prompt": "p", "title": "t"}),
             ("o", "orient_shift", {"reason": "boats"})]
    fire = fire_create(workspace=workspace, mode="introspective", question="boats")
    scripted_llm.reply(tool_calls=[{"id": cid, "name": name, "arguments": args} for cid, name, args in calls])
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "ok"}}]).call_tool("skip")
    # when it is run, dies, and is resumed until it finishes
    with django_capture_on_commit_callbacks(execute=True):
        for _ in calls:
            with pytest.raises(SystemExit):
                fire_run(fire_id=fire.pk)
            Fire.objects.filter(pk=fire.pk).update(runner="gone:1:1", runner_heartbeat_at=None)
        fire = fire_run(fire_id=fire.pk)
    # then every side effect exists once, and the model was asked once per turn
    assert fire.status == "finished" and sorted(died) == ["d", "e", "m", "o"]
    assert Delta.objects.filter(workspace=workspace, tags__contains=["engagement:more"]).count() == 1
    assert sorted(Proposal.objects.filter(workspace=workspace).values_list("tool", flat=True)) == [
        "helper-dispatch", "routines"]
    assert queued == [(str(fire.pk), f"{fire.pk}:1:o", "boats")]
    assert fire.model_calls == 3 and FireToolCall.objects.filter(fire=fire, turn__number=1).count() == 4
