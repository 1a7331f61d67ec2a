"""What "done" means per workflow type (seed 001's WorkflowContract), and the deterministic check of
a fire's answer against it (ContractEvaluator): pass/fail, a score (the fraction of checks passed)
and issues in the seed's wording.

A contract is the seed's base table, with the thresholds the workspace set for the workflow (admin,
REST or `fathom quality set`), then the workspace profile's quality multiplier (it scales
min_insights and min_output_chars, floored at 1 insight, where insights are required at all, and at
50 chars; half rounds up), then the classifier's ExpectedOutput: a per-query requirement replaces
the field it names as it is, unscaled, since it is this query's own bar.

Going beyond the seed, citations are checked against the lake, not by regex (`citations_check`):
every cited id exists in the workspace and was returned to this fire by a tool, and every quote is
found in the cited delta's content (whitespace and typographic quotes normalised; an ellipsis may
elide a stretch). Each unfounded citation is an issue of its own, and "every citation is founded"
is one more check of the score."""

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum

from fathom.models import Workspace
from harness.quality.selectors import deltas_by_prefix
from lake.models import ID_LENGTH, MIN_PREFIX_LENGTH

MIN_INSIGHTS_FLOOR = 1
MIN_OUTPUT_CHARS_FLOOR = 50
MAX_SOURCE_INSIGHTS = 10  # synthesis asks for one insight per source it used, up to this many
OWN_OUTPUT_SOURCE = "harness"  # the lake source of a fire's own writes ("harness", "harness-introspect"):
# never a source of an answer
QUOTE_SHOWN_CHARS = 60  # of an unfound quote, in its issue
HEALING_MARKER = "[SELF-CORRECTION:"  # opens the healing prompt's correction block (retry.FailureAnalyzer)


class WorkflowType(StrEnum):
    CHAT = "chat"
    SYNTHESIS = "synthesis"
    RECOMMENDATION = "recommendation"
    DRAFTING = "drafting"
    FULL_PIPELINE = "full_pipeline"


class Complexity(StrEnum):
    SIMPLE = "SIMPLE"
    MEDIUM = "MEDIUM"
    COMPLEX = "COMPLEX"


class ArtifactKind(StrEnum):
    """A card's kind, as its lake delta is tagged (`kind:insight`, ...)."""

    INSIGHT = "insight"
    RECOMMENDATION = "recommendation"
    DOCUMENT = "document"


@dataclass(frozen=True)
class ExpectedOutput:
    """Thresholds that replace a contract's: the classifier's per query, or a workspace's per workflow
    (QualitySettings.contracts); None leaves the contract's own value."""

    min_insights: int | None = None
    min_recommendations: int | None = None
    min_documents: int | None = None
    require_citations: bool | None = None
    min_output_chars: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping | None) -> "ExpectedOutput":
        """From the classifier's JSON: unknown keys ignored, a value of the wrong type (a negative or
        non-numeric count, a non-boolean flag) left out rather than trusted."""
        data = data if isinstance(data, Mapping) else {}
        counts = {name: _count(data.get(name))
                  for name in ("min_insights", "min_recommendations", "min_documents", "min_output_chars")}
        citations = data.get("require_citations")
        return cls(**counts, require_citations=citations if isinstance(citations, bool) else None)

    def as_dict(self) -> dict:
        return {name: value for name, value in asdict(self).items() if value is not None}


@dataclass(frozen=True)
class WorkflowContract:
    workflow_type: WorkflowType
    min_insights: int
    min_recommendations: int
    min_documents: int
    require_citations: bool
    require_artifacts: bool
    min_output_chars: int

    @classmethod
    def for_workflow(cls, workflow_type: str, *, source_count: int = 0, expected: ExpectedOutput | None = None,
                     quality_multiplier: float = 1.0, workspace: ExpectedOutput | None = None) -> "WorkflowContract":
        """The seed's base contract for this workflow (an unknown type is held to chat's) with the
        thresholds the workspace set for it (`workspace`, QualitySettings.contracts), scaled by the
        workspace's multiplier, then overridden by the query's ExpectedOutput."""
        contract = base_contract(workflow_type, source_count=source_count)
        if workspace is not None:
            contract = replace(contract, **workspace.as_dict())
        contract = contract.scaled(quality_multiplier)
        if expected is not None:
            contract = replace(contract, **expected.as_dict())
        return contract

    def scaled(self, multiplier: float) -> "WorkflowContract":
        insights = self.min_insights
        if insights > 0:
            insights = max(MIN_INSIGHTS_FLOOR, _round_half_up(insights * multiplier))
        chars = max(MIN_OUTPUT_CHARS_FLOOR, _round_half_up(self.min_output_chars * multiplier))
        return replace(self, min_insights=insights, min_output_chars=chars)

    def as_dict(self) -> dict:
        return {**asdict(self), "workflow_type": str(self.workflow_type)}


def base_contract(workflow_type: str, *, source_count: int = 0) -> WorkflowContract:
    """The seed's base contracts table."""
    per_source = max(1, min(source_count, MAX_SOURCE_INSIGHTS))
    kind = workflow_type_of(workflow_type)
    rows = {
        #                              insights  recs docs citations artifacts chars
        WorkflowType.SYNTHESIS:       (per_source, 0, 0, True, True, 100),
        WorkflowType.RECOMMENDATION:  (0, 1, 0, False, True, 100),
        WorkflowType.DRAFTING:        (0, 0, 1, False, True, 200),
        WorkflowType.FULL_PIPELINE:   (per_source, 1, 1, True, True, 200),
        WorkflowType.CHAT:            (0, 0, 0, False, False, 50),
    }
    return WorkflowContract(kind, *rows[kind])


def workflow_type_of(value: str) -> WorkflowType:
    """The WorkflowType named by `value`; chat for anything unknown."""
    try:
        return WorkflowType(str(value).strip().lower())
    except ValueError:
        return WorkflowType.CHAT


@dataclass(frozen=True)
class ArtifactCounts:
    insights: int = 0
    recommendations: int = 0
    documents: int = 0

    @classmethod
    def from_kinds(cls, kinds: Iterable[str]) -> "ArtifactCounts":
        """Counts from the artifacts' kinds ("insight", "kind:insight", ...); other kinds are ignored."""
        wanted = [str(kind).removeprefix("kind:") for kind in kinds]
        return cls(insights=wanted.count(ArtifactKind.INSIGHT), recommendations=wanted.count(ArtifactKind.RECOMMENDATION),
                   documents=wanted.count(ArtifactKind.DOCUMENT))

    @property
    def total(self) -> int:
        return self.insights + self.recommendations + self.documents

    def summary(self) -> str:
        """"3 insights, 1 document" (the verifier's artifact summary); "no artifacts" when none."""
        parts = [f"{count} {noun}{'s' * (count != 1)}" for count, noun in (
            (self.insights, "insight"), (self.recommendations, "recommendation"), (self.documents, "document"))
            if count]
        return ", ".join(parts) or "no artifacts"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Citation:
    """A cited lake id (full or a unique prefix of 8+ hex characters, brackets allowed) and the quote
    taken from it ("" when the citation quotes nothing)."""

    delta_id: str
    quote: str = ""


@dataclass(frozen=True)
class UnfoundedCitation:
    citation: Citation
    reason: str

    @property
    def issue(self) -> str:
        return f"Unfounded citation [{self.citation.delta_id}]: {self.reason}"


@dataclass(frozen=True)
class CitationCheck:
    citations: tuple[Citation, ...] = ()
    unfounded: tuple[UnfoundedCitation, ...] = ()
    sources_used: tuple[str, ...] = ()  # the distinct deltas founded citations name, the fires' own writes left out

    @property
    def source_count(self) -> int:
        return len(self.sources_used)

    @property
    def total(self) -> int:
        return len(self.citations)

    @property
    def founded(self) -> int:
        return self.total - len(self.unfounded)

    @property
    def issues(self) -> list[str]:
        return [item.issue for item in self.unfounded]

    def as_dict(self) -> dict:
        return {"total": self.total, "founded": self.founded, "unfounded": self.issues,
                "sources_used": list(self.sources_used)}


@dataclass(frozen=True)
class ContractResult:
    passed: bool
    score: float  # the fraction of checks passed
    issues: list[str]
    artifact_counts: ArtifactCounts
    reasoning: str
    contract: WorkflowContract
    checks: dict[str, bool] = field(default_factory=dict)

    def as_event(self) -> dict:
        """The harness_contract event's fields."""
        return {"passed": self.passed, "score": self.score, "issues": list(self.issues),
                "artifact_counts": self.artifact_counts.as_dict(), "reasoning": self.reasoning}


class ContractEvaluator:
    """Checks an answer against its contract: deterministic, no model call, no query."""

    @staticmethod
    def evaluate(*, contract: WorkflowContract, output_text: str, artifacts: ArtifactCounts,
                 citations: CitationCheck | None = None) -> ContractResult:
        """Each applicable check passes or adds its issue; the score is the fraction that passed.
        Checks that apply: output length (always), insights / recommendations / documents (when the
        contract asks for at least one), a source cited (when citations are required: a founded
        citation of a delta that is not a fire's own write), at least one artifact (when required),
        and every citation founded (when any citation was given). An answer that repeats the
        harness's healing prompt fails one more check: the prompt is the harness's, never the user's."""
        citations = citations or CitationCheck()
        text_chars = len((output_text or "").strip())
        checks: dict[str, bool] = {}
        issues: list[str] = []

        def check(name: str, ok: bool, *problems: str) -> None:
            checks[name] = ok
            if not ok:
                issues.extend(problems)

        check("output_chars", text_chars >= contract.min_output_chars,
              f"Output too short: {text_chars} chars (minimum {contract.min_output_chars})")
        for name, noun, count, minimum in (
                ("insights", "insights", artifacts.insights, contract.min_insights),
                ("recommendations", "recommendations", artifacts.recommendations, contract.min_recommendations),
                ("documents", "documents", artifacts.documents, contract.min_documents)):
            if minimum > 0:
                check(name, count >= minimum, f"Insufficient {noun}: {count} created (minimum {minimum})")
        if contract.require_citations:
            check("citations", citations.source_count > 0,
                  "Citations required but none found — insights must include direct quotes from sources")
        if contract.require_artifacts:
            check("artifacts", artifacts.total > 0,
                  "No artifacts created — at least one insight, recommendation, or document is required")
        if citations.total:
            check("citations_founded", not citations.unfounded, *citations.issues)
        if HEALING_MARKER in (output_text or ""):
            check("no_healing_prompt", False, "The answer repeats the harness's healing prompt — answer the question "
                                              "itself")

        passed_count = sum(checks.values())
        score = round(passed_count / len(checks), 4) if checks else 1.0
        passed = all(checks.values())
        reasoning = (f"{passed_count}/{len(checks)} checks passed for {contract.workflow_type} "
                     f"({artifacts.summary()}, {text_chars} chars"
                     f"{f', {citations.founded}/{citations.total} citations founded' if citations.total else ''})")
        return ContractResult(passed=passed, score=score, issues=issues, artifact_counts=artifacts,
                              reasoning=reasoning, contract=contract, checks=checks)


def citations_check(*, workspace: Workspace, citations: Sequence[Citation],
                    returned_ids: Collection[str]) -> CitationCheck:
    """Each citation checked against the lake (one query): its id names exactly one delta of this
    workspace, that delta was returned to this fire by a tool (`returned_ids`: full ids), and its
    quote, if any, is in the delta's content (see `quote_found`; whitespace and typographic quotes
    normalised, case kept). The sources used are the founded citations' deltas that are not a
    fire's own writes (lake source OWN_OUTPUT_SOURCE...)."""
    prefixes = sorted({cleaned for c in citations if (cleaned := cleaned_id(c.delta_id)) is not None})
    found = deltas_by_prefix(workspace=workspace, prefixes=prefixes) if prefixes else {}
    return citations_judge(citations, returned_ids=returned_ids,
                           contents={delta_id: content for delta_id, (content, _) in found.items()},
                           own_ids={delta_id for delta_id, (_, source) in found.items()
                                    if source.startswith(OWN_OUTPUT_SOURCE)})


def citations_judge(citations: Sequence[Citation], *, returned_ids: Collection[str],
                    contents: Mapping[str, str], own_ids: Collection[str] = ()) -> CitationCheck:
    """The check without the read: `contents` maps each candidate delta's full id to its content,
    `own_ids` names those that are a fire's own writes."""
    returned = {str(value).strip().strip("[]").lower() for value in returned_ids}
    unfounded, used = [], []
    for citation in citations:
        reason, delta_id = _unfounded_reason(citation, returned=returned, contents=contents)
        if reason:
            unfounded.append(UnfoundedCitation(citation, reason))
        elif delta_id not in own_ids and delta_id not in used:
            used.append(delta_id)
    return CitationCheck(citations=tuple(citations), unfounded=tuple(unfounded), sources_used=tuple(used))


def normalize_quote(text: str) -> str:
    """Whitespace collapsed to single spaces and typographic quotes and apostrophes made straight,
    so a quote that differs from its source only in line breaks or typography is still found."""
    return " ".join(str(text).translate(_TYPOGRAPHIC).split())


_HEX = re.compile(r"^[0-9a-f]+$")
_QUOTE_MARKS = "\"'«»"
_TYPOGRAPHIC = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'"})
_ELLIPSIS = re.compile(r"\[(?:\.\.\.|…)\]|\.\.\.|…")


def _unfounded_reason(citation: Citation, *, returned: set[str], contents: Mapping[str, str]) -> tuple[str, str]:
    """Why the citation is unfounded ("" when it is founded), and the full id it names."""
    wanted = cleaned_id(citation.delta_id)
    if wanted is None:
        return "not a delta id", ""
    matches = [delta_id for delta_id in contents if delta_id.startswith(wanted)]
    if not matches:
        return "no such delta in this workspace", ""
    if len(matches) > 1:
        return "the prefix matches more than one delta", ""
    if matches[0] not in returned:
        return "not returned to this fire by a tool", matches[0]
    quote = normalize_quote(citation.quote).strip(_QUOTE_MARKS + " ")
    if quote and not quote_found(quote, normalize_quote(contents[matches[0]])):
        shown = quote if len(quote) <= QUOTE_SHOWN_CHARS else quote[:QUOTE_SHOWN_CHARS] + "..."
        return f'quote not found in the delta ("{shown}")', matches[0]
    return "", matches[0]


def quote_found(quote: str, content: str) -> bool:
    """The quote's parts between ellipses ("..." or "…", the marks of an elided quote) are all in
    the content, in order."""
    position = 0
    for part in _ELLIPSIS.split(quote):
        part = part.strip(_QUOTE_MARKS + " ")
        if not part:
            continue
        found = content.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return True


def cleaned_id(value: str) -> str | None:
    """The lowercase hex id or prefix a citation names (brackets and spaces dropped); None when it is not one."""
    cleaned = str(value).strip().strip("[]").strip().lower()
    if not _HEX.match(cleaned) or not MIN_PREFIX_LENGTH <= len(cleaned) <= 2 * ID_LENGTH:
        return None
    return cleaned


def _count(value) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != int(value):
        return None
    return int(value)


def _round_half_up(value: float) -> int:
    # round(.., 6) first: 10 * 1.15 is 11.499999999999998 in floating point, and means 11.5
    return int(round(value, 6) + 0.5)
