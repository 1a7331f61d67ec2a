"""Mid-stream alerts (seed 001's StreamMonitor): cheap regex checks of an answer while it is being
written, at 500, 2,000 and 5,000 characters. No model call.

| checkpoint | check | alert |
|---|---|---|
| 500 | refusal / filler | critical on a refusal phrase ("I can't", "I cannot", "I don't have access", "Unfortunately", ...); else a warning for synthesis, recommendation and full_pipeline when the text opens with filler ("Sure,", "Of course,", "That's a great question", ...) |
| 2000 | structure | warning for synthesis, recommendation, full_pipeline and drafting without a header (#), a bullet (- or *) or a numbered item |
| 5000 | citations | warning for synthesis and full_pipeline without a citation marker ("according to", "[1]", a [delta id], quoted text, ...) |

Each checkpoint runs at most once per attempt and at most one alert comes of it. A check reads
exactly the first <checkpoint> characters, so however the text is chunked (tokens of a stream,
or a whole final answer at once) the same alerts come out. A text that never reaches a
checkpoint is not checked there."""

import re
from dataclasses import asdict, dataclass

from harness.quality.contracts import WorkflowType

WARNING, CRITICAL = "warning", "critical"
REFUSAL_CHECKPOINT, STRUCTURE_CHECKPOINT, CITATION_CHECKPOINT = 500, 2000, 5000

_APOSTROPHE = "['’]"
REFUSAL = re.compile(
    rf"\bI can{_APOSTROPHE}t\b|\bI cannot\b|\bI can not\b|\bI don{_APOSTROPHE}t have access\b|\bI do not have access\b"
    rf"|\bI{_APOSTROPHE}m (?:unable|not able)\b|\bI am (?:unable|not able)\b|\bUnfortunately\b|\bAs an AI\b"
    rf"|\bI apologi[sz]e\b", re.IGNORECASE)
FILLER_OPENING = re.compile(
    rf"^\s*(?:Sure[,!.]|Of course[,!.]|Certainly[,!.]|Absolutely[,!.]|Great question\b"
    rf"|That{_APOSTROPHE}s (?:a )?(?:great|good|excellent) question\b)", re.IGNORECASE)
STRUCTURE = re.compile(r"^\s{0,3}(?:#{1,6}\s|[-*+]\s|\d{1,3}[.)]\s)", re.MULTILINE)
CITATION = re.compile(
    r"\baccording to\b|\[\d{1,3}\]|\[[0-9a-fA-F]{8,32}\]|\"[^\"\n]{10,}\"|“[^”\n]{10,}”"
    r"|\b(?:as (?:stated|noted|reported) in|source:|cited in|per the)\b", re.IGNORECASE)

FILLER_WORKFLOWS = {WorkflowType.SYNTHESIS, WorkflowType.RECOMMENDATION, WorkflowType.FULL_PIPELINE}
STRUCTURE_WORKFLOWS = FILLER_WORKFLOWS | {WorkflowType.DRAFTING}
CITATION_WORKFLOWS = {WorkflowType.SYNTHESIS, WorkflowType.FULL_PIPELINE}


@dataclass(frozen=True)
class Alert:
    severity: str  # warning | critical
    checkpoint: int
    issue: str
    suggestion: str

    def as_event(self) -> dict:
        """The harness_stream_alert event's fields."""
        return asdict(self)


class StreamMonitor:
    def __init__(self, workflow_type: str):
        self.workflow_type = str(workflow_type).strip().lower()
        self.reset()

    def reset(self) -> None:
        """A new attempt: an empty buffer, every checkpoint armed again."""
        self.text = ""
        self.checked: set[int] = set()

    def feed(self, text_chunk: str) -> list[Alert]:
        """Add the next piece of the answer; the alerts of the checkpoints it reached, in order."""
        # only the first 5,000 characters are ever read: the rest of a long answer is not kept
        self.text += (text_chunk or "")[:max(0, CITATION_CHECKPOINT - len(self.text))]
        alerts = []
        for checkpoint, check in ((REFUSAL_CHECKPOINT, self._refusal_or_filler),
                                  (STRUCTURE_CHECKPOINT, self._structure), (CITATION_CHECKPOINT, self._citations)):
            if checkpoint in self.checked or len(self.text) < checkpoint:
                continue
            self.checked.add(checkpoint)
            alert = check(self.text[:checkpoint])
            if alert is not None:
                alerts.append(alert)
        return alerts

    def _refusal_or_filler(self, text: str) -> Alert | None:
        refusal = REFUSAL.search(text)
        if refusal:
            return Alert(CRITICAL, REFUSAL_CHECKPOINT, f'Possible refusal: "{refusal.group(0)}"',
                         "Answer from the sources the tools returned; if something is missing, say what and "
                         "answer the rest.")
        filler = FILLER_OPENING.search(text)
        if filler and self.workflow_type in FILLER_WORKFLOWS:
            return Alert(WARNING, REFUSAL_CHECKPOINT, f'Opens with filler: "{filler.group(0).strip()}"',
                         "Start with the substance: the first finding or recommendation.")
        return None

    def _structure(self, text: str) -> Alert | None:
        if self.workflow_type in STRUCTURE_WORKFLOWS and not STRUCTURE.search(text):
            return Alert(WARNING, STRUCTURE_CHECKPOINT, "No structure: no headers, bullets or numbered items",
                         "Organise the answer under headers with bullet points or numbered items.")
        return None

    def _citations(self, text: str) -> Alert | None:
        if self.workflow_type in CITATION_WORKFLOWS and not CITATION.search(text):
            return Alert(WARNING, CITATION_CHECKPOINT, "No citations or evidence markers",
                         "Cite the sources by their [id] and quote them directly.")
        return None
