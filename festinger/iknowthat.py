"""`iknowthat` (seed 002, T21, where it is `gutask iknowthat`): the manual write path, over REST
(`POST /v1/festinger/iknowthat`) and the shell (`fathom festinger iknowthat`). A fact such as
'gnommoweb -isa repo in context of glitch_university' goes into the graph at confidence 1.0 from
source gutask; a collision becomes a priority conflict."""

import re
from dataclasses import dataclass

from fathom.errors import ApplicationError
from festinger.bootstrap import DEFAULT_ISA_DIMENSION, DEFAULT_ISPART_DIMENSION
from festinger.models import Conflict, Edge, Source
from festinger.services import insert_fact, token_normalise

SYNTAX = ("'<concept> -isa <parent> in context of <dimension>' or "
          "'<concept> -ispart <system> in context of <dimension>'; 'in context of ...' is optional "
          f"(-isa defaults to {DEFAULT_ISA_DIMENSION}, -ispart to {DEFAULT_ISPART_DIMENSION}), e.g. "
          "'gnommoweb -isa repo in context of glitch_university'")

_FACT = re.compile(
    r"^(?P<concept>.+?)\s+-(?P<flag>isa|ispart)\s+(?P<parent>.+?)(?:\s+in\s+context\s+of\s+(?P<dimension>.+?))?$",
    re.IGNORECASE | re.DOTALL,
)
_QUOTES = "'\"` \t\r\n"


@dataclass(frozen=True)
class Fact:
    concept: str
    parent: str
    dimension: str
    is_isa: bool


def fact_parse(text: str) -> Fact:
    """The fact's tokens, or ApplicationError explaining the syntax."""
    body = " ".join(str(text or "").strip(_QUOTES).split())
    match = _FACT.match(body)
    if not body or not match:
        raise ApplicationError(f"cannot read the fact {text!r}: write {SYNTAX}", code="invalid_fact",
                               details={"syntax": SYNTAX})
    parts = match.groupdict()
    is_isa = parts["flag"].lower() == "isa"
    dimension = parts["dimension"] or (DEFAULT_ISA_DIMENSION if is_isa else DEFAULT_ISPART_DIMENSION)
    for value in (parts["concept"], parts["parent"], dimension):
        if re.search(r"(^|\s)-(isa|ispart)\b|\bin\s+context\s+of\b", value, re.IGNORECASE):
            raise ApplicationError(f"the fact {text!r} has more than one relation or context: write {SYNTAX}",
                                   code="invalid_fact", details={"syntax": SYNTAX})
    if any(ch in value for value in (parts["concept"], parts["parent"], dimension) for ch in "<>"):
        raise ApplicationError(f"replace the <placeholders> in {text!r} with real names: {SYNTAX}",
                               code="invalid_fact", details={"syntax": SYNTAX})
    return Fact(concept=token_normalise(parts["concept"]), parent=token_normalise(parts["parent"]),
                dimension=token_normalise(dimension), is_isa=is_isa)


def iknowthat(*, workspace, fact: str) -> Edge | Conflict:
    """Parse and insert a manual fact: confidence 1.0, source gutask, a collision queued with priority."""
    parsed = fact_parse(fact)
    return insert_fact(workspace=workspace, concept=parsed.concept, parent=parsed.parent,
                       dimension=parsed.dimension, is_isa=parsed.is_isa, confidence=1.0, source=Source.GUTASK,
                       priority=True)
