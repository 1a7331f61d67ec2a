"""Retrieval quality on two labelled lakes, a working notebook and a conversation: recall@10,
MRR@10, nDCG@10 and the provenance share of the top 10, per search mode and per question class,
with latency and answer size, then the targets (hybrid at least the better of its halves in every
class; on average 3 points above each and 10 above plain pgvector). The whole run is made once per
embedder: the local semantic model and the hashing fallback. Prints figures; asserts nothing about
them.

    .venv/bin/python -m pytest tests/bench/bench_retrieval.py -s -q -o python_files='bench_*.py'
    RETRIEVAL_BENCH_SCALE=3 ...       # three times the notes per episode and between episodes
    RETRIEVAL_BENCH_TOPICS=20 ...     # fewer topics (at most 40) for a quicker run
    RETRIEVAL_BENCH_EMBEDDERS=hashing:hashing-v3 ...   # one embedder only

The conversation (`retrieval_conversation.py`): months of chat between two friends, a delta a
turn, with single-hop, paraphrased, multi-hop (two turns of different sessions) and temporal
questions (answered by the turns' dates); and chat-typo: each single-hop question again, as typed
in a hurry (`mistyped`, below).

The notebook is generated, deterministically: 40 topics (a project, a hobby,
a chore), each with its own nouns; notes written from a few sentence shapes with a person, a verb in
any of its forms, two of the topic's nouns, a measured detail and the small words people write. Each
topic has three episodes (runs of notes on two of its nouns) and the notes between them. The
provenance is made the way the product makes it: `proposal_draft` of a `provenance` proposal,
auto-approved by the gate at L1 (the episodes) and L2 (a topic over its episodes), so the centroids
are the real ones.

Questions, with graded gold ids (2 = the delta that answers, 1 = relevant):
- fact: one note, asked with its nouns and its person (another form of the verb) or its measured
  detail, and small words;
- fact-log: the same kind of question about one line of a day's log (a long note of 6 to 9 such
  lines, 2 a topic, written beside the notes): the words that answer are a few of the log's
  many, which is where a vector of the whole text loses them and full text does not;
- typo: a fact question about another note, as typed in a hurry (`mistyped`): one or two of its
  content words of four letters or more have one slip each (two letters swapped, one dropped,
  one doubled, or one struck on the key beside it; never the first letter), so full text, which
  matches whole words, no longer finds those words;
- paraphrase: one note, asked with synonyms for its verb and some of its nouns;
- episode: an episode (2) and its constituents (1);
- topic: the L2 topic (2), its episodes and every note of the topic (1);
- absent (not scored for recall): small words only, nonsense words, or a subject the lake does not
  hold; the share of these that return no hit at all is reported as `none`.

Modes: the product's `hybrid` (the default), `vector` and `text`, each through `deltas_search`
(what POST /v1/search calls) at the default depth; `pgvector` is the plain baseline, the 10
nearest rows by `embedding <=> query` (no centroid, no text, no rerank). The follow-up step's
own time (`lake/search/follow.py`, in hybrid and text mode) is printed beside the latencies.

Delta ids are drawn from the seed as well (rankings break ties by id), so a run is repeatable.

recall@10 = relevant ids among the top 10 hits / min(relevant ids, 10); MRR@10 and nDCG@10
(gain 2^grade - 1) over the same list; prov@10 = provenance rows among all top-10 hit slots."""

import json
import math
import os
import random
import re
import statistics
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

import lake.search
from fathom.models import Workspace
from lake.embedders import get_embedder
from lake.models import Delta
from lake.search import deltas_search
from lake.services import deltas_create, deltas_embed
from lake.words import STOPWORDS
from proposals.services import proposal_draft
from tests.bench.retrieval_conversation import CLASSES as CHAT_CLASSES
from tests.bench.retrieval_conversation import SESSIONS, SPEAKERS, conversation

SCALE = float(os.environ.get("RETRIEVAL_BENCH_SCALE", "1"))
TOPIC_COUNT = int(os.environ.get("RETRIEVAL_BENCH_TOPICS", "40"))
SEED = int(os.environ.get("RETRIEVAL_BENCH_SEED", "21"))
# The embedders the whole run is repeated with: the local semantic model and the hashing fallback.
EMBEDDERS = os.environ.get("RETRIEVAL_BENCH_EMBEDDERS", "local:all-MiniLM-L6-v2,hashing:hashing-v3").split(",")
K = 10
MODES = ("hybrid", "vector", "text", "pgvector")
CLASSES = ("fact", "fact-log", "typo", "paraphrase", "episode", "topic")
TYPO_CLASSES = ("typo", "chat-typo")  # the means are printed with and without them
KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")

pytestmark = pytest.mark.slow

# A topic: its name, then its nouns; "a/b" gives a noun a synonym that paraphrases use.
TOPICS = """
rover navigation | wheel/tyre encoder odometry gyroscope lidar/scanner chassis motor/drive waypoint map battery
sourdough baking | starter/leaven flour dough crumb crust oven/stove proofing basket hydration rye
garden allotment | tomato seedling/sprout compost trellis hose/pipe slug bed soil mulch greenhouse
tax paperwork | invoice/bill receipt deduction ledger/register accountant pension spreadsheet deadline refund vat
bass guitar | string/wire fretboard pickup amplifier/amp bridge tuner strap pedal cable neck
espresso machine | grinder/mill portafilter boiler/kettle gasket shower basket tamper pressure descaler steam
home network | router/modem switch firewall cable/wire vlan printer camera dns wifi laptop
kitchen renovation | cabinet/cupboard countertop/worktop tile sink faucet/tap plumber drawer hinge grout splashback
marathon training | interval/sprint tempo shoe/trainer hamstring/thigh pace heartrate hill recovery stretching mileage
beekeeping | hive/colony queen frame honey/nectar smoker varroa comb swarm feeder brood
astronomy | telescope/scope eyepiece mount nebula/cloud filter camera galaxy comet tripod finder
woodworking | chisel/blade plane dovetail/joint walnut clamp sander workbench glue drawer lathe
car maintenance | brake/pads tyre/wheel coolant oil clutch/pedal alternator battery exhaust filter wiper
podcast production | microphone/mic mixer episode guest/interviewee intro audio transcript sponsor headphones editing
language learning | vocabulary/words grammar flashcard/card tutor/teacher verb pronunciation podcast exam notebook conjugation
chess study | opening/gambit endgame bishop/piece knight rook tournament/contest puzzle clock engine blunder
aquarium | filter/pump heater shrimp/prawn algae gravel plant ammonia thermometer tank guppy
photography darkroom | enlarger developer/chemical negative/film fixer paper tray timer safelight contact print
bicycle repair | derailleur/shifter chain/drivetrain spoke cassette tube/tyre saddle brake hub pedal crank
wedding planning | venue/hall caterer/cook invitation/invite florist dress photographer seating cake playlist budget
server migration | database/db replica backup/snapshot kernel container/docker certificate load latency cluster disk
novel writing | chapter/section manuscript/draft character plot editor outline villain dialogue prologue agent
choir rehearsal | soprano/singer tenor anthem/hymn conductor score harmony alto organ rehearsal concert
solar panels | inverter/converter panel/module roof battery meter installer/fitter cable shading tariff bracket
knitting | yarn/wool needle/pin sweater/jumper sleeve pattern cable gauge stitch scarf collar
birdwatching | warbler/songbird heron binoculars/glasses nest feeder hide estuary finch owl plumage
3d printing | nozzle/extruder filament bed/plate slicer stepper hotend warping support resin enclosure
piano lessons | scale/arpeggio sonata metronome/clicker pedal chord keyboard teacher recital sight etude
family history | census/register ancestor/forebear archive parish letter photograph will grave emigrant diary
pottery studio | glaze/coating kiln/furnace wheel clay/earth trimming bisque slip mug teapot handle
beer brewing | hops/hop mash/grain yeast fermenter/vessel airlock wort bottling gravity malt keg
drone flying | propeller/rotor gimbal controller/remote battery firmware compass footage landing frame permit
climbing gym | harness/belt rope/line carabiner belay boulder chalk crimp overhang shoe route
data dashboard | chart/graph query/request metric filter widget dataset legend alert pipeline export
rowing club | oar/paddle shell rigger coxswain/cox erg stroke regatta catch seat crew
mushroom foraging | chanterelle/mushroom spore cap/head gill forest/woods basket knife puffball morel guidebook
sailing course | jib/sail tiller/helm mainsheet knot buoy dinghy capsize mooring/anchor gust harbour
synth patching | oscillator/vco envelope filter sequencer/arpeggiator patch module cable clock reverb voltage
roof leak | gutter/drain shingle/slate flashing/seal rafter attic joist membrane ladder downpipe chimney
quantum homework | qubit/bit hamiltonian eigenstate/state operator entanglement/coupling spin measurement basis circuit lattice
""".strip().splitlines()

# (base, third person, past, -ing) and a synonym's forms.
VERBS = [
    (("measure", "measures", "measured", "measuring"), ("gauge", "gauges", "gauged", "gauging")),
    (("fix", "fixes", "fixed", "fixing"), ("repair", "repairs", "repaired", "repairing")),
    (("replace", "replaces", "replaced", "replacing"), ("swap", "swaps", "swapped", "swapping")),
    (("test", "tests", "tested", "testing"), ("trial", "trials", "trialled", "trialling")),
    (("calibrate", "calibrates", "calibrated", "calibrating"), ("tune", "tunes", "tuned", "tuning")),
    (("inspect", "inspects", "inspected", "inspecting"), ("examine", "examines", "examined", "examining")),
    (("clean", "cleans", "cleaned", "cleaning"), ("scrub", "scrubs", "scrubbed", "scrubbing")),
    (("install", "installs", "installed", "installing"), ("mount", "mounts", "mounted", "mounting")),
    (("review", "reviews", "reviewed", "reviewing"), ("assess", "assesses", "assessed", "assessing")),
    (("adjust", "adjusts", "adjusted", "adjusting"), ("tweak", "tweaks", "tweaked", "tweaking")),
    (("order", "orders", "ordered", "ordering"), ("buy", "buys", "bought", "buying")),
    (("upgrade", "upgrades", "upgraded", "upgrading"), ("improve", "improves", "improved", "improving")),
    (("sketch", "sketches", "sketched", "sketching"), ("draft", "drafts", "drafted", "drafting")),
    (("photograph", "photographs", "photographed", "photographing"), ("shoot", "shoots", "shot", "shooting")),
]
PEOPLE = ["Priya", "Tomasz", "Ingrid", "Kwame", "Lucia", "Hiroshi", "Amara", "Dmitri", "Fatima", "Oskar",
          "Mei", "Rafael", "Siobhan", "Yusuf", "Greta", "Anselm", "Noor", "Bjorn", "Carmen", "Idris"]
UNITS = ["mm", "cm", "grams", "volts", "minutes", "hours", "percent", "degrees", "euros", "litres"]
FILLER = ["today", "again", "finally", "quickly", "this morning", "after lunch", "before the weekend",
          "for the second time", "with the new kit", "while waiting", "late at night", "first thing"]
EPISODE_WORDS = [("investigation", "enquiry"), ("overhaul", "rebuild"), ("trial run", "experiment"),
                 ("cleanup", "tidying"), ("sprint", "push"), ("audit", "check-up")]
# Subjects none of the topics hold, small words only, and nonsense.
ABSENT = ["what do we have and what does it", "is there anything about this or that", "the of and to in it",
          "zqxv blorf wug", "flim trabe quonk snarv", "glorp vesh tranq", "saxophone reed humidity",
          "volcano lava eruption forecast", "penguin huddle antarctic", "opera tickets in vienna"]


@dataclass
class Note:
    id: str = ""
    text: str = ""
    topic: int = 0
    episode: int | None = None
    person: str = ""
    verb: int = 0
    nouns: tuple = ()
    detail: str = ""


@dataclass
class Question:
    kind: str
    text: str
    gold: dict = field(default_factory=dict)  # id -> grade


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_retrieval_quality(transactional_db, monkeypatch, settings, embedder):
    settings.EMBEDDER, settings.EMBEDDING_MODEL = embedder.split(":")
    rng = random.Random(SEED)
    # Ids from the seed too: rankings break ties by id, so random ids moved a class by a question.
    ids = random.Random(SEED)
    monkeypatch.setattr(Delta._meta.get_field("id"), "default", lambda: f"{ids.getrandbits(64):016x}")
    workspace = Workspace.objects.create(slug="bench-retrieval", name="Retrieval benchmark")
    began = time.perf_counter()
    corpus = _Corpus(rng, topics=[_parse_topic(line) for line in TOPICS[:TOPIC_COUNT]])
    corpus.write(workspace)
    built_s = time.perf_counter() - began
    questions = corpus.questions(rng)
    absent = [Question("absent", text) for text in ABSENT]

    print(f"\n\nlabelled lake: {len(corpus.topics)} topics, {len(corpus.notes):,} notes and {len(corpus.logs)} logs, "
          f"{len(corpus.episode_ids)} L1 episodes and {len(corpus.topic_ids)} L2 topics (through proposals), "
          f"embedder {get_embedder().name}; {len(questions)} questions "
          f"({', '.join(f'{c} {sum(q.kind == c for q in questions)}' for c in CLASSES)}) and {len(absent)} absent; "
          f"built in {built_s:.1f} s; load average {os.getloadavg()[0]:.1f} (timings are noisy on a shared host)")

    follow_ups = _time_follow_ups(monkeypatch)
    results = {mode: _run(workspace, mode, questions + absent) for mode in MODES}
    recalls = _print_tables(results, questions, absent, corpus.provenance_ids, CLASSES)
    _print_follow_ups(follow_ups, len(questions + absent))

    chat = Workspace.objects.create(slug="bench-conversation", name="Conversation benchmark")
    turns, chat_questions = conversation(SEED)
    _write_conversation(chat, turns)
    questions = [Question(q.kind, q.text, {turn.id: 2 for turn in q.turns}) for q in chat_questions]
    typo_rng = random.Random(SEED + 4)  # its own generator: the other questions stay as they were
    questions += [Question("chat-typo", mistyped(typo_rng, q.text), q.gold) for q in questions if q.kind == "chat-single"]
    chat_classes = (*CHAT_CLASSES, "chat-typo")
    print(f"\nconversation: {len(turns)} turns of {SPEAKERS[0]} and {SPEAKERS[1]} in {SESSIONS} sessions; "
          f"{len(questions)} questions ({', '.join(f'{c} {sum(q.kind == c for q in questions)}' for c in chat_classes)})"
          f" and {len(absent)} absent")
    follow_ups.clear()
    results = {mode: _run(chat, mode, questions + absent) for mode in MODES}
    chat_recalls = _print_tables(results, questions, absent, set(), chat_classes)
    _print_follow_ups(follow_ups, len(questions + absent))
    recalls = {mode: recalls[mode] | chat_recalls[mode] for mode in MODES}
    _print_targets(get_embedder().name, recalls)


def _time_follow_ups(monkeypatch) -> list[tuple[float, bool]]:
    """Times every follow-up step (`lake.search.follow`) the searches run: (seconds, found rows)."""
    timed: list[tuple[float, bool]] = []
    follow_up = lake.search.follow_up

    def timed_follow_up(**kwargs):
        began = time.perf_counter()
        found = follow_up(**kwargs)
        timed.append((time.perf_counter() - began, found is not None))
        return found

    monkeypatch.setattr(lake.search, "follow_up", timed_follow_up)
    return timed


def _print_follow_ups(timed, searches_a_mode):
    """The follow-up step's own cost (one SQL statement), part of the hybrid and text p50 above."""
    if not timed:
        return
    ms = sorted(seconds * 1000 for seconds, _ in timed)
    print(f"follow-up step (hybrid and text, {searches_a_mode} searches each): ran {len(ms)} times, found rows "
          f"{sum(found for _, found in timed)} times; p50 {statistics.median(ms):.1f} ms, "
          f"p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms")


def _write_conversation(workspace, turns):
    """One delta a turn, "Speaker: text", at its session's time."""
    items = [{"content": turn.content, "tags": ["kind:chat", f"session:{turn.session}"], "source": "chat",
              "created_at": turn.at} for turn in turns]
    for turn, delta in zip(turns, deltas_create(workspace=workspace, items=items).deltas, strict=True):
        turn.id = delta.id
    deltas_embed(delta_ids=[turn.id for turn in turns])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE lake_delta")


def _print_targets(embedder, recalls):
    """The targets, per class: hybrid recall@10 at least that of text-only and of vector-only; on
    average over the classes, 3 points above each and 10 above plain pgvector."""
    classes = list(recalls["hybrid"])
    print(f"\ntargets with {embedder} (recall@10 x 100; hybrid - the better half per class):")
    for kind in classes:
        best = max(recalls["text"][kind], recalls["vector"][kind])
        print(f"  {kind:<16} hybrid {100 * recalls['hybrid'][kind]:5.1f}  text {100 * recalls['text'][kind]:5.1f}  "
              f"vector {100 * recalls['vector'][kind]:5.1f}  pgvector {100 * recalls['pgvector'][kind]:5.1f}  "
              f"{100 * (recalls['hybrid'][kind] - best):+5.1f} {'ok' if recalls['hybrid'][kind] >= best - 1e-9 else 'BELOW'}")
    for label, chosen in (("mean over classes", classes),
                          ("without the typo classes", [kind for kind in classes if kind not in TYPO_CLASSES])):
        mean = {mode: _mean(recalls[mode][kind] for kind in chosen) for mode in MODES}
        print(f"  {label}: hybrid {100 * mean['hybrid']:.1f}, {100 * (mean['hybrid'] - mean['text']):+.1f} "
              f"over text, {100 * (mean['hybrid'] - mean['vector']):+.1f} over vector, "
              f"{100 * (mean['hybrid'] - mean['pgvector']):+.1f} over pgvector (targets +3, +3, +10)")


# --- running -----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    hits: list[str]
    seconds: float
    rows: int = 0
    rendered_chars: int = 0
    json_bytes: int = 0
    best_distance: float | None = None  # the best vector distance among the hits
    best_text_rank: float | None = None
    distances: dict = field(default_factory=dict)


def _run(workspace, mode, questions) -> list[Outcome]:
    _search(workspace, mode, questions[0].text)  # warm the connection and caches
    outcomes = []
    for question in questions:
        began = time.perf_counter()
        outcome = _search(workspace, mode, question.text)
        outcome.seconds = time.perf_counter() - began
        outcomes.append(outcome)
    return outcomes


def _search(workspace, mode, text) -> Outcome:
    if mode == "pgvector":
        return Outcome(hits=_plain_pgvector(workspace, text), seconds=0)
    result = deltas_search(workspace=workspace, query=text, limit=K, mode=mode)
    body = json.dumps(result.as_dict(), default=str)
    distances = [row.scores["distance"] for row in result.hits if row.scores["distance"] is not None]
    ranks = [row.scores["text_rank"] for row in result.hits if row.scores["text_rank"] is not None]
    return Outcome(hits=[row.id for row in result.hits], seconds=0, rows=len(result.rows),
                   rendered_chars=len(result.rendered), json_bytes=len(body),
                   best_distance=min(distances, default=None), best_text_rank=max(ranks, default=None),
                   distances={row.id: row.scores["distance"] for row in result.hits})


def _plain_pgvector(workspace, text) -> list[str]:
    vector = "[" + ",".join(repr(float(v)) for v in get_embedder().embed([text])[0]) + "]"
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', '100', false)")
        cursor.execute("SELECT id FROM lake_delta WHERE workspace_id = %s AND embedding IS NOT NULL "
                       "ORDER BY embedding <=> %s::vector LIMIT %s", [workspace.pk, vector, K])
        return [row[0] for row in cursor.fetchall()]


# --- scoring -----------------------------------------------------------------------------------------


def _scores(question: Question, hits: list[str]) -> tuple[float, float, float]:
    top = hits[:K]
    relevant = [delta_id for delta_id in top if question.gold.get(delta_id, 0) > 0]
    recall = len(relevant) / min(len(question.gold), K)
    rr = next((1 / rank for rank, delta_id in enumerate(top, 1) if question.gold.get(delta_id, 0) > 0), 0.0)
    dcg = sum((2 ** question.gold.get(delta_id, 0) - 1) / math.log2(rank + 1) for rank, delta_id in enumerate(top, 1))
    ideal = sorted(question.gold.values(), reverse=True)[:K]
    idcg = sum((2 ** grade - 1) / math.log2(rank + 1) for rank, grade in enumerate(ideal, 1))
    return recall, rr, dcg / idcg


def _print_tables(results, questions, absent, provenance_ids, classes) -> dict:
    """Prints the tables; returns recall@10 per mode and class."""
    n = len(questions)
    recalls: dict = {mode: {} for mode in MODES}
    header = f"{'mode':<9} {'class':<11} {'n':>4} {'recall@10':>9} {'MRR@10':>7} {'nDCG@10':>8} {'prov@10':>8}"
    print("\n" + header)
    print("-" * len(header))
    for mode in MODES:
        outcomes = results[mode][:n]
        for kind in (*classes, "all"):
            chosen = [(q, o) for q, o in zip(questions, outcomes, strict=True) if kind in ("all", q.kind)]
            scores = [_scores(q, o.hits) for q, o in chosen]
            recalls[mode][kind] = _mean(s[0] for s in scores)
            slots = sum(len(o.hits[:K]) for _, o in chosen)
            provenance = sum(1 for _, o in chosen for i in o.hits[:K] if i in provenance_ids)
            print(f"{mode:<9} {kind:<11} {len(chosen):>4} {_mean(s[0] for s in scores):>9.3f} "
                  f"{_mean(s[1] for s in scores):>7.3f} {_mean(s[2] for s in scores):>8.3f} "
                  f"{(provenance / slots if slots else 0):>8.1%}")
        print()
    header = (f"{'mode':<9} {'p50 ms':>7} {'p95 ms':>7} {'rows':>6} {'chars':>7} {'JSON KB':>8} "
              f"{'absent: none':>13} {'absent: hits':>13}")
    print(header)
    print("-" * len(header))
    for mode in MODES:
        outcomes = results[mode]
        timed = sorted(o.seconds * 1000 for o in outcomes)
        answered = outcomes[:n]
        missing = outcomes[n:]
        print(f"{mode:<9} {statistics.median(timed):>7.1f} {timed[int(0.95 * (len(timed) - 1))]:>7.1f} "
              f"{_mean(o.rows for o in answered):>6.1f} {_mean(o.rendered_chars for o in answered):>7.0f} "
              f"{_mean(o.json_bytes for o in answered) / 1024:>8.1f} "
              f"{sum(not o.hits for o in missing):>7}/{len(missing):<5} {_mean(len(o.hits) for o in missing):>13.1f}")
    _print_floor_calibration(results, questions, absent)
    print(f"\n(rows, chars, JSON KB: the mean answer to a labelled question at the default depth; absent: "
          f"{', '.join(repr(q.text) for q in absent[:4])}, ...)")
    return {mode: {kind: value for kind, value in by_kind.items() if kind != "all"} for mode, by_kind in recalls.items()}


def _print_floor_calibration(results, questions, absent):
    """What the relevance floors are calibrated on: the vector distance of the best relevant hit of
    each labelled question (vector mode) against the best hit of each absent query."""
    n = len(questions)
    outcomes = results["vector"]
    relevant = sorted(min((d for i, d in o.distances.items() if q.gold.get(i) and d is not None), default=9)
                      for q, o in zip(questions, outcomes[:n], strict=True))
    relevant = [d for d in relevant if d < 9]
    best_absent = sorted(o.best_distance for o in outcomes[n:] if o.best_distance is not None)
    if relevant:
        quantiles = ", ".join(f"p{p} {relevant[min(len(relevant) - 1, int(p / 100 * len(relevant)))]:.3f}"
                              for p in (50, 90, 95, 99))
        print(f"\nfloor calibration (vector mode, cosine distance): best relevant hit {quantiles}, "
              f"max {relevant[-1]:.3f} ({len(relevant)} of {n} questions); "
              f"best hit of absent queries: {', '.join(f'{d:.3f}' for d in best_absent) or 'none'}")


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


# --- the corpus --------------------------------------------------------------------------------------


@dataclass
class Topic:
    name: str
    nouns: list[str]
    synonyms: dict[str, str]


def _parse_topic(line: str) -> Topic:
    name, nouns = (part.strip() for part in line.split("|"))
    words, synonyms = [], {}
    for noun in nouns.split():
        word, _, synonym = noun.partition("/")
        words.append(word)
        if synonym:
            synonyms[word] = synonym
    return Topic(name=name, nouns=words, synonyms=synonyms)


class _Corpus:
    EPISODES_PER_TOPIC = 3
    LOGS_PER_TOPIC = 2

    def __init__(self, rng: random.Random, *, topics: list[Topic]):
        self.rng = rng
        self.topics = topics
        self.notes: list[Note] = []
        self.logs: list[Note] = []  # long notes: a day's log of many lines
        self.episodes: list[dict] = []  # topic, focus nouns, word, notes, id
        self.topic_ids: dict[int, str] = {}
        self.episode_ids: list[str] = []
        self.provenance_ids: set[str] = set()
        self._seen: set = set()
        self._plan()
        self._plan_logs(random.Random(SEED + 1), self._seen)  # its own generator: the notes stay as they were

    def _plan(self):
        rng = self.rng
        per_episode = max(4, round(10 * SCALE))
        between = max(1, round(4 * SCALE))
        seen = self._seen
        for t, topic in enumerate(self.topics):
            focus_pairs = rng.sample([(a, b) for a in topic.nouns for b in topic.nouns if a < b], self.EPISODES_PER_TOPIC)
            for e, focus in enumerate(focus_pairs):
                episode = {"topic": t, "focus": focus, "word": EPISODE_WORDS[(t + e) % len(EPISODE_WORDS)],
                           "notes": []}
                self.episodes.append(episode)
                for _ in range(per_episode + rng.randint(-2, 3)):
                    episode["notes"].append(self._note(t, topic, focus, len(self.episodes) - 1, seen))
                for _ in range(between + rng.randint(0, 3)):
                    self._note(t, topic, None, None, seen)

    def _note(self, t, topic, focus, episode, seen) -> Note:
        note = self._sentence(self.rng, t, topic, focus, episode, seen)
        self.notes.append(note)
        return note

    def _plan_logs(self, rng: random.Random, seen):
        """Two day's logs a topic, each of 6 to 9 note-like lines, one of them the line asked about."""
        for t, topic in enumerate(self.topics):
            for _ in range(self.LOGS_PER_TOPIC):
                lines = [self._sentence(rng, t, topic, None, None, seen) for _ in range(rng.randint(6, 9))]
                asked = rng.choice(lines)
                text = "Log of the day. " + " ".join(line.text for line in lines)
                self.logs.append(Note(text=text, topic=t, person=asked.person, verb=asked.verb, nouns=asked.nouns,
                                      detail=asked.detail))

    @staticmethod
    def _sentence(rng, t, topic, focus, episode, seen) -> Note:
        while True:
            first = rng.choice(focus) if focus and rng.random() < 0.85 else rng.choice(topic.nouns)
            second = rng.choice([noun for noun in topic.nouns if noun != first])
            person = rng.choice(PEOPLE)
            if (person, first, second) not in seen:
                seen.add((person, first, second))
                break
        verb = rng.randrange(len(VERBS))
        forms = VERBS[verb][0]
        detail = f"{rng.choice(['it came out at', 'off by', 'roughly', 'now'])} {rng.randint(2, 400)} {rng.choice(UNITS)}"
        filler = rng.choice(FILLER)
        shape = rng.randrange(4)
        if shape == 0:
            text = f"{person} {forms[2]} the {first} {second} {filler}; {detail}."
        elif shape == 1:
            text = f"{filler.capitalize()}: {forms[3]} the {first} and the {second} for the {topic.name}, {detail}."
        elif shape == 2:
            text = f"Note to self: {forms[0]} the {first} on the {second} again. {person} says it is {detail}."
        else:
            text = f"The {first} {forms[1]} badly whenever the {second} is cold, so {person} {forms[2]} it ({detail})."
        if shape in (1,):
            text += f" With {person}."
        return Note(text=text, topic=t, episode=episode, person=person, verb=verb, nouns=(first, second), detail=detail)

    def write(self, workspace):
        start = datetime(2025, 6, 1, tzinfo=UTC)
        written = self.notes + self.logs
        items = [{"content": note.text, "tags": ["kind:note", f"topic:{note.topic}"], "source": "notebook",
                  "created_at": start + timedelta(hours=3 * index)} for index, note in enumerate(written)]
        ids = []
        for offset in range(0, len(items), 1000):
            ids += [delta.id for delta in deltas_create(workspace=workspace, items=items[offset:offset + 1000]).deltas]
        for note, delta_id in zip(written, ids, strict=True):
            note.id = delta_id
        for offset in range(0, len(ids), 500):
            deltas_embed(delta_ids=ids[offset:offset + 500])
        by_topic: dict[int, list[str]] = {}
        for episode in self.episodes:
            topic = self.topics[episode["topic"]]
            a, b = episode["focus"]
            title = f"{a.capitalize()} {b} {episode['word'][0]}"
            summary = (f"A stretch of the {topic.name} spent on the {a} and the {b}: "
                       f"{len(episode['notes'])} notes of work on them.")
            episode["id"] = self._approved(workspace, title, [note.id for note in episode["notes"]], summary, level=1)
            by_topic.setdefault(episode["topic"], []).append(episode["id"])
        for t, episode_ids in by_topic.items():
            topic = self.topics[t]
            titles = [episode["focus"] for episode in self.episodes if episode["topic"] == t]
            summary = f"Everything on the {topic.name}: " + "; ".join(f"the {a} and {b}" for a, b in titles) + "."
            self.topic_ids[t] = self._approved(workspace, topic.name.capitalize(), episode_ids, summary, level=2)
        self.episode_ids = [episode["id"] for episode in self.episodes]
        provenance = self.episode_ids + list(self.topic_ids.values())
        deltas_embed(delta_ids=provenance)
        self.provenance_ids = set(provenance)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE lake_delta")

    def _approved(self, workspace, title, from_ids, summary, *, level) -> str:
        proposal = proposal_draft(workspace=workspace, tool="provenance", title=title, producer="bench",
                                  payload={"from_ids": from_ids, "summary": summary, "level": level})
        assert proposal.status == "approved", proposal.failure_reason
        return proposal.result_ref.removeprefix("delta:")

    def questions(self, rng: random.Random) -> list[Question]:
        questions = []
        for t, topic in enumerate(self.topics):
            notes = [note for note in self.notes if note.topic == t]
            picked = rng.sample(notes, 4)
            for note in picked[:2]:
                questions.append(Question("fact", self._fact(rng, note), {note.id: 2}))
            for note in picked[2:]:
                questions.append(Question("paraphrase", self._paraphrase(rng, topic, note), {note.id: 2}))
            episodes = [episode for episode in self.episodes if episode["topic"] == t]
            for episode in rng.sample(episodes, 2):
                a, b = episode["focus"]
                word = episode["word"][rng.randrange(2)]
                text = rng.choice([f"what happened during the {a} and {b} {word}?",
                                   f"how did the {word} of the {b} and the {a} go",
                                   f"summarise our work on the {a} {b}"])
                gold = {episode["id"]: 2} | {note.id: 1 for note in episode["notes"]}
                questions.append(Question("episode", text, gold))
            logs = [log for log in self.logs if log.topic == t]
            gold = ({self.topic_ids[t]: 2} | {episode["id"]: 1 for episode in episodes} | {n.id: 1 for n in notes}
                    | {log.id: 1 for log in logs})
            text = rng.choice([f"give me an overview of the {topic.name}", f"what do we know about {topic.name}?",
                               f"where are we with the {topic.name}"])
            questions.append(Question("topic", text, gold))
        log_rng = random.Random(SEED + 2)  # its own generator: the other questions stay as they were
        questions += [Question("fact-log", self._fact(log_rng, log), {log.id: 2}) for log in self.logs]
        typo_rng = random.Random(SEED + 3)  # its own generator too
        for t in range(len(self.topics)):
            for note in typo_rng.sample([note for note in self.notes if note.topic == t], 2):
                questions.append(Question("typo", mistyped(typo_rng, self._fact(typo_rng, note)), {note.id: 2}))
        return questions

    def _fact(self, rng, note: Note) -> str:
        forms = VERBS[note.verb][0]
        first, second = note.nouns
        return rng.choice([
            f"what did {note.person} find when {forms[3]} the {first} {second}?",
            f"when was the {first} {second} {forms[2]} by {note.person}",
            f"did {note.person} {forms[0]} the {second} and the {first}?",
            f"which {second} {first} was {note.detail}?",
        ])

    def _paraphrase(self, rng, topic: Topic, note: Note) -> str:
        synonym = VERBS[note.verb][1]
        first, second = (topic.synonyms.get(noun, noun) for noun in note.nouns)
        return rng.choice([
            f"{note.person}'s {synonym[3]} of the {first} with the {second}: how did it turn out",
            f"has anyone {synonym[2]} that {first} near the {second}? I think it was {note.person}",
            f"the {second} {first} that {note.person} {synonym[1]}",
        ])


def mistyped(rng: random.Random, text: str) -> str:
    """`text` as typed in a hurry: one or two of its content words of four letters or more (not
    stopwords) with one slip each, of the four kinds most typing errors are (Damerau): two
    neighbouring letters swapped, a letter dropped, a letter doubled, a letter struck on the key
    beside it. The first letter is kept, as typists mostly keep it."""
    spans = [match.span() for match in re.finditer(r"[A-Za-z]+", text)
             if len(match.group()) >= 4 and match.group().lower() not in STOPWORDS]
    assert spans, f"no word to mistype in {text!r}: a typo question must hold a typo"
    for start, end in sorted(rng.sample(spans, min(len(spans), rng.choice((1, 2)))), reverse=True):
        text = text[:start] + _slip(rng, text[start:end]) + text[end:]
    return text


def _slip(rng: random.Random, word: str) -> str:
    while True:
        at = rng.randrange(1, len(word) - 1)
        kind = rng.randrange(4)
        if kind == 0:
            slipped = word[:at] + word[at + 1] + word[at] + word[at + 2:]
        elif kind == 1:
            slipped = word[:at] + word[at + 1:]
        elif kind == 2:
            slipped = word[:at] + word[at] + word[at:]
        else:
            row = next((row for row in KEYBOARD_ROWS if word[at].lower() in row), "")
            beside = [row[i] for i in (row.find(word[at].lower()) - 1, row.find(word[at].lower()) + 1)
                      if row and 0 <= i < len(row)]
            slipped = word[:at] + rng.choice(beside) + word[at + 1:] if beside else word
        if slipped.lower() != word.lower():
            return slipped
