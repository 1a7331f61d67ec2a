"""The feed: a workspace's fires and proposals merged, newest first, a page at a time. A page costs the
same number of queries whatever its size (fires, their turns, their tool calls; proposals, their
decisions; plus what the card sections load for the whole page)."""

import json
from dataclasses import dataclass, field
from datetime import datetime

from dashboard.filters import FeedMatch
from dashboard.panels import card_sections_render
from dashboard.stream import fire_signature
from harness.conductor.selectors import research_calls_of_fires
from harness.fires.models import Fire
from harness.fires.selectors import fires_feed_page
from harness.runtime.selectors import messages_waiting
from proposals.models import Proposal
from proposals.selectors import latest_decision, proposals_list

PAGE_SIZE = 20
ORDINARY_SOURCES = ("", "api", "dashboard", "user_message")
AUTO_POLICY_PREFIX = "auto-policy"
EVERYTHING = FeedMatch()


@dataclass
class Bubble:
    """A message a fire worked on: the user's, or a pass-intent (a Sit's prompt to itself)."""

    content: str
    author: str
    is_self: bool
    sit_round: int | None = None
    sit_cap: int | None = None
    source: str = ""
    message_id: str = ""
    autonomous: bool = False  # a Sit that autonomy started (pressure or schedule), not the operator

    @property
    def origin(self) -> str:
        """Where the message came from when it is not a person at a client: sit, beat, cron, autonomy..."""
        return "" if self.source in ORDINARY_SOURCES else self.source


@dataclass
class FireCard:
    fire: Fire
    bubbles: list[Bubble]
    body: str
    cards: list
    sections: list = field(default_factory=list)
    research: object = None  # a conductor run's research fire: the run's CapabilityCall it works for

    kind = "fire"

    @property
    def at(self) -> datetime:
        return self.fire.created_at

    @property
    def signature(self) -> str:
        """The fire's state as this card shows it (the live feed sends the card again once it differs)."""
        return fire_signature(status=self.fire.status, phase=self.fire.phase, model_calls=self.fire.model_calls,
                              turns=len(self.fire.turns.all()))

    @property
    def is_sit(self) -> bool:
        return any(b.sit_round for b in self.bubbles)


@dataclass
class ProposalRow:
    proposal: Proposal
    decision: object

    kind = "proposal"

    @property
    def at(self) -> datetime:
        return self.proposal.created_at

    @property
    def auto_approved(self) -> bool:
        return bool(self.decision) and self.decision.decided_by.startswith(AUTO_POLICY_PREFIX)

    @property
    def payload_json(self) -> str:
        return json.dumps(self.proposal.payload, indent=2, sort_keys=True, ensure_ascii=False)

    @property
    def policy_tag(self) -> str:
        """`decided-by:auto-policy:level<=2`, the seed's tag of an auto-approval."""
        return f"decided-by:{self.decision.decided_by}" if self.auto_approved else ""


@dataclass
class FeedPage:
    entries: list
    next_before: datetime | None
    waiting: list = field(default_factory=list)  # user messages no fire has taken up yet (first page only)


def feed_page(*, workspace, before: datetime | None = None, limit: int = PAGE_SIZE,
              match: FeedMatch = EVERYTHING) -> FeedPage:
    """The entries `match` shows older than `before` (None: the newest), at most `limit`, and where the
    next page starts (None on the last). The messages still waiting for a turn only unfiltered."""
    fire_filter, proposal_filter = match.fires, match.proposals
    fires = [] if fire_filter is None else fires_feed_page(workspace=workspace, before=before, limit=limit + 1,
                                                           **fire_filter)
    proposals = [] if proposal_filter is None else proposals_list(workspace=workspace, **proposal_filter)
    if before is not None and proposal_filter is not None:
        proposals = proposals.filter(created_at__lt=before)
    if proposal_filter is not None:
        proposals = proposals.order_by("-created_at", "-id")[:limit + 1]
    entries = [*fire_cards(workspace, fires), *(proposal_row(p) for p in proposals)]
    entries.sort(key=lambda entry: entry.at, reverse=True)
    more = len(entries) > limit
    entries = entries[:limit]
    waiting = messages_waiting(workspace=workspace, limit=limit) if before is None and not match.active else []
    return FeedPage(entries=entries, next_before=entries[-1].at if more and entries else None, waiting=waiting)


def fire_cards(workspace, fires: list[Fire]) -> list[FireCard]:
    """The fires (turns and tool calls prefetched) as cards with their sections."""
    sections = card_sections_render(workspace, fires)
    research = research_calls_of_fires(workspace=workspace, fires=fires)
    return [FireCard(fire=fire, bubbles=bubbles_of(fire), body=(fire.response or {}).get("body", ""),
                     cards=(fire.response or {}).get("cards") or [], sections=sections.get(fire.pk, []),
                     research=research.get(fire.pk))
            for fire in fires]


def proposal_row(proposal: Proposal) -> ProposalRow:
    return ProposalRow(proposal=proposal, decision=latest_decision(proposal))


def bubbles_of(fire: Fire) -> list[Bubble]:
    bubbles = []
    for message in (fire.work_set or {}).get("messages", []):
        sit = message.get("sit") or {}
        bubbles.append(Bubble(content=message.get("content", ""), author=message.get("author") or "",
                              is_self=message.get("author") == "self" or message.get("source") == "sit",
                              sit_round=sit.get("round"), sit_cap=sit.get("cap"),
                              source=message.get("source") or "", message_id=str(message.get("id") or ""),
                              autonomous=bool(sit.get("autonomous"))))
    return bubbles
