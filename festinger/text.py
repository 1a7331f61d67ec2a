"""Festinger's tokeniser and relationship cue scanner (seed 002, "Tokenisation Rules" and
"Relationship Cue Patterns"). Pure functions, no database: they run on every model call.

Tokens:
1. Text splits on whitespace and punctuation; a token is a run of letters and digits that may hold
   `-`, `.` or `_` between them (`runs-on`, `glitch.university`, `agent0_stack`), so leading and
   trailing punctuation never belongs to it.
2. Compound rule: consecutive capitalised words, separated only by spaces or tabs, merge into one
   token joined by underscores (`Glitch University` -> `glitch_university`). A lowercase word, a
   punctuation mark, a line break, a one-letter word (`A`, `I`) or the cue keywords `ISA` /
   `ISPART` break the run, and a leading article stays outside it (`The Glitch University` -> `the`,
   `glitch_university`).
3. Everything is lowercased. There is no minimum length (the seed's resolved decision): common
   words are in the dictionary at saliency 0 and never surface. Numbers (`2026`, `3.14`: tokens
   without a letter) are dropped: they are never concepts and would flood the zero-hit block.

Cues: `{X} <pattern> {Y}` for every ISA and ISPART pattern of the seed's tables, longest pattern
first (`is a member of` wins over `is a`), an article before Y skipped, words separated by
whitespace only (punctuation ends a cue). An ISA cue followed by `of {Z}` takes Z as its dimension;
otherwise ISA defaults to `type` and ISPART to the seed dimension the pattern names (`runs on` ->
`runs-on`, `owned by` -> `owned-by`), else `membership`. Pronouns and other function words are
never X or Y (`this is a problem` states nothing about a concept).

The rules are written here as regexes (`_WORD`, `_RUN_RE`, `_CUE_RE`); the loops that run over a whole
prompt (words, the common-word Lexicon, where runs and cues may start) are C when the extension was built
(festinger/_words.c), else Python (festinger/_words_python.py; festinger/wordscan.py chooses), and the
property tests in tests/festinger/test_text.py check that both find what the regexes find.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from festinger.wordscan import Lexicon, as_ascii, shape, words

# --- tokens ---------------------------------------------------------------------------------------------

_CAP = "A-ZÀ-ÖØ-Þ"
_WORD = r"[^\W_]+(?:[-._]+[^\W_]+)*"
_END = r"(?![^\W_]|[-._]+[^\W_])"  # a word ends here: no letter or digit follows, nor joiners and one
# Capitalised words of two or more characters (not the cue keywords ISA / ISPART), separated by spaces
# or tabs. The capital comes first so the regex engine skips ahead to capitals.
_CAPWORD_TAIL = r"[^\W_]+(?:[-._]+[^\W_]+)*"
# A leading article stays outside the run ("The Glitch University" -> the, glitch_university).
_RUN_RE = re.compile(
    rf"[{_CAP}](?<![\w.\-].)(?!(?:SA|SPART)\b)(?!(?:he|HE|n|N)[ \t]){_CAPWORD_TAIL}"
    rf"(?:[ \t]+(?!(?:ISA|ISPART)\b)[{_CAP}]{_CAPWORD_TAIL})+{_END}"
)
# Where a compound run may start in `shape(text)` (festinger/wordscan.py: `A` a capital, `a` another word
# character, ` ` a space or tab): at a capital whose word is followed by spaces and another capital. Led
# by a literal, the engine skips from capital to capital in C.
_RUN_START_RE = re.compile(r"A(?=[Aa]*[ ]+A)")
_NUMBER_CHARS = "0123456789-._"
_SPACES_RE = re.compile(r"[ \t]+")


def tokenize(text: str) -> tuple[str, ...]:
    """The tokens of `text`, in order, lowercased, compound runs merged."""
    return _tokens(text)


def canonical(phrase: str) -> str:
    """One token for a phrase naming one concept (a fact's parent, a dimension, a writer's answer):
    its tokens joined by underscores, a leading article left out as the compound rule leaves it out
    of a run, so `The Glitch University`, `glitch university` and `glitch_university` are the same
    concept as the one a chat message names. Empty when the phrase has no token."""
    tokens = _tokens(phrase)
    if len(tokens) > 1 and tokens[0] in ARTICLES:
        tokens = tokens[1:]
    return "_".join(tokens)


def ordinary(token: str, dictionary) -> bool:
    """Whether `token` is an ordinary word: in `dictionary`, or a regular form of one of its words
    (`nightly` of `night`, `pools` of `pool`, `hiding` of `hide`). Such a word
    is no unknown concept to be taught. A compound (`glitch_university`) never is one."""
    if token in dictionary:
        return True
    if not token.isalpha():
        return False
    for suffix, endings in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            stem = token[: -len(suffix)]
            if any(stem + ending in dictionary for ending in endings):
                return True
            if stem[-1:] == stem[-2:-1] and stem[:-1] in dictionary:  # a doubled consonant: "running"
                return True
    return False


# Cached: a tool loop sends the same history messages on every call.
@lru_cache(maxsize=256)
def _tokens(text: str) -> tuple[str, ...]:
    return words(_merged(text))  # the words `_WORD` matches, numbers dropped


def normalise(text: str) -> str:
    """`text` with its compound runs merged, lowercased: what tokens and cues are read from."""
    return _merged(text)


@lru_cache(maxsize=256)
def _merged(text: str) -> str:
    text = as_ascii(text) or text  # dashes and curly quotes as commas: the same tokens, faster
    # The run pattern is tried only where the text's shape says a run may start (the pattern alone,
    # led by a class of capitals, makes the engine test every character).
    pieces, end = [], 0
    for start in _RUN_START_RE.finditer(shape(text)):
        run = _RUN_RE.match(text, start.start()) if start.start() >= end else None
        if run is not None:
            pieces += (text[end:run.start()], _join_run(run))
            end = run.end()
    return "".join((*pieces, text[end:])).lower() if pieces else text.lower()


def _join_run(match: re.Match) -> str:
    return _SPACES_RE.sub("_", match.group())


ARTICLES = frozenset({"the", "a", "an"})
# Regular English endings and what the word before them may have ended with ("happily" <- "happy").
_SUFFIXES = (("ly", ("", "le", "l")), ("ily", ("y",)), ("ness", ("",)), ("ment", ("", "e")), ("ments", ("", "e")),
             ("less", ("",)), ("ful", ("",)), ("ies", ("y",)), ("es", ("", "e")), ("s", ("",)), ("ied", ("y",)),
             ("ed", ("", "e")), ("ing", ("", "e")), ("ings", ("", "e")))


# --- cues -----------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Triple:
    """A fact a cue states: `concept` IN `parent` in `dimension` (all canonical tokens)."""

    concept: str
    parent: str
    dimension: str
    is_isa: bool
    confidence: float
    pattern: str


@dataclass(frozen=True, slots=True)
class Pattern:
    phrase: str          # the keywords, lowercased, single-spaced
    is_isa: bool
    confidence: float    # the seed: "exact keyword cues score higher than positional inference"
    dimension: str       # the default dimension (ISA's may be replaced by `of {Z}`)


EXACT, COPULAR, POSITIONAL = 0.9, 0.8, 0.7

# The seed's tables, in its order. ISA first, then ISPART.
PATTERNS: tuple[Pattern, ...] = (
    Pattern("is a", True, COPULAR, "type"),
    Pattern("is an", True, COPULAR, "type"),
    Pattern("isa", True, EXACT, "type"),
    Pattern("is a kind of", True, COPULAR, "type"),
    Pattern("is a type of", True, COPULAR, "type"),
    Pattern("is an instance of", True, COPULAR, "type"),
    Pattern("kind of", True, POSITIONAL, "type"),
    Pattern("type of", True, POSITIONAL, "type"),
    Pattern("instance of", True, POSITIONAL, "type"),
    Pattern("is part of", False, COPULAR, "membership"),
    Pattern("ispart", False, EXACT, "membership"),
    Pattern("part of", False, POSITIONAL, "membership"),
    Pattern("belongs to", False, COPULAR, "membership"),
    Pattern("is owned by", False, COPULAR, "owned-by"),
    Pattern("owned by", False, POSITIONAL, "owned-by"),
    Pattern("member of", False, POSITIONAL, "membership"),
    Pattern("is a member of", False, COPULAR, "membership"),
    Pattern("runs on", False, COPULAR, "runs-on"),
    Pattern("hosted by", False, COPULAR, "runs-on"),
    Pattern("deployed on", False, COPULAR, "runs-on"),
    Pattern("contained in", False, COPULAR, "membership"),
    # The same cues in the forms people write them (a fact stated with "is" is no less a fact).
    Pattern("is a part of", False, COPULAR, "membership"),
    Pattern("is hosted by", False, COPULAR, "runs-on"),
    Pattern("is hosted on", False, COPULAR, "runs-on"),
    Pattern("hosted on", False, COPULAR, "runs-on"),
    Pattern("is deployed on", False, COPULAR, "runs-on"),
    Pattern("is deployed to", False, COPULAR, "runs-on"),
    Pattern("deployed to", False, COPULAR, "runs-on"),
    Pattern("is contained in", False, COPULAR, "membership"),
)
_BY_PHRASE = {pattern.phrase: pattern for pattern in PATTERNS}

# Words that are never the subject or object of a cue: pronouns, articles, determiners, question
# words, auxiliaries, common prepositions and conjunctions.
STOP_WORDS = frozenset("""
a an the this that these those it its it's they them their there here he she him her his hers we us
our you your i me my mine who whom whose which what when where why how one ones each every any some
all both either neither none no not nothing something anything everything someone anyone everyone
is are was were be been being am do does did has have had will would shall should can could may
might must and or but nor so yet if then than as of in on at by to for from with about into onto
over under very also just only still even such same other another more most less least much many
few several own never nobody nothing nowhere
""".split())

# Words that describe rather than name: never a concept, skipped before the noun they describe ("a big
# repo" -> repo), and a positional cue whose subject is one states nothing ("a different type of approach").
ADJECTIVES = frozenset("""
big small large huge tiny little new old young different same similar various certain particular specific
special general common main major minor key core central good bad great best better worse worst nice fine
important simple complex complicated easy hard difficult fast slow quick long short high low full empty whole
real true false right wrong early late first last next previous final single double multiple entire massive
modern legacy internal external public private open closed free local remote global shared custom default
standard basic advanced popular famous known unknown typical strange weird odd interesting useful useless
powerful lightweight heavy light critical essential primary secondary experimental stable unstable official
proper actual current recent former future potential possible likely unique separate independent distinct
random total complete partial cool awesome terrible tiny whole brand huge dedicated separate cheap expensive
""".split())

# Words after which the object's noun phrase cannot go on: time and sentence adverbs.
_PHRASE_ENDS = frozenset("today now tomorrow yesterday again already too anymore though however instead "
                         "currently still yet soon later".split())

# The pattern's own nouns are never its object ("gnommoweb is a part of x" is not "is a part").
NOT_OBJECTS = frozenset({"kind", "type", "instance", "part", "member", "sort"})

_SP = r"[ \t]+"  # cue words are separated by spaces only: punctuation and line breaks end a cue
_ARTICLE = rf"(?:(?:the|a|an){_SP})?"
_NAME = rf"{_WORD}{_END}"
_KEYWORDS = "|".join(re.escape(p.phrase).replace(r"\ ", _SP)
                     for p in sorted(PATTERNS, key=lambda p: -len(p.phrase)))
# Read from the merged, lowercased text. Led by the keywords, so the engine only tries at spaces
# followed by a keyword's first letter; the subject is read backwards from there.
_CUE_RE = re.compile(
    rf"[ \t](?=[{''.join(sorted({p.phrase[0] for p in PATTERNS}))}])(?P<kw>{_KEYWORDS}){_SP}{_ARTICLE}"
    rf"(?P<y>{_NAME})(?:{_SP}of{_SP}{_ARTICLE}(?P<z>{_NAME}))?"
)
# The subject: the word right before the keywords (not the tail of a contraction: "it's", "isn't"), or
# the name before an appositive ("dobby, the helper bot, is a member of ...").
_SUBJECT_RE = re.compile(rf"(?<![\w.\-']){_NAME}[ \t]*\Z")
_APPOSITIVE_RE = re.compile(
    rf"(?<![\w.\-'])(?P<name>{_NAME}),[ \t]+(?:the|a|an|our|my|your|their|its|his|her)[ \t][^,;:.!?\n]{{1,80}},[ \t]*\Z")
_NEGATED_RE = re.compile(r"(?:\b(?:not|no|never|cannot)|n't)[ \t]+\Z")
_DETERMINED_RE = re.compile(r"\b(?:the|a|an|this|that|these|those|some|any|each|every|which|what|whose|our|my|your"
                            r"|their|its|his|her|one|another)[ \t]+\Z")
_FIRST_WORD_RE = re.compile(_NAME)
_NEXT_WORD_RE = re.compile(rf"[ \t]+(?P<word>{_NAME})")
_OF_RE = re.compile(rf"[ \t]+of[ \t]+{_ARTICLE}(?=[^\W_])")
_COPULA_RE = re.compile(rf"(?<![\w.\-'])(?P<name>{_NAME})[ \t]+is[ \t]+an?[ \t]+\Z")
_PARTICIPLES = frozenset({"hosted by", "hosted on", "deployed on", "deployed to", "contained in", "owned by"})
_PHRASE_MAX = 5
_SUBJECT_WINDOW = 120
# Every cue starts with a space or tab and a pattern's first word.
_CUE_FIRST = frozenset(p.phrase.split()[0] for p in PATTERNS)
_CUE_FIRST_WORDS = Lexicon(_CUE_FIRST)


def cues(text: str) -> tuple[Triple, ...]:
    """The facts the cue patterns in `text` state, in order of appearance."""
    return _cues(text)


@lru_cache(maxsize=256)
def _cues(text: str) -> tuple[Triple, ...]:
    merged = _merged(text)
    found = []
    described = None  # (the subject, its ISA object, where that object ends) of the last ISA cue
    for match in _cue_matches(merged):
        pattern = _BY_PHRASE[" ".join(match["kw"].split())]
        concept = _subject(merged, match.start(), positional=pattern.confidence == POSITIONAL and pattern.is_isa)
        if concept is None:
            continue
        # "gnommoweb is a container deployed on Docker": the participle describes gnommoweb, not
        # the container (the ISA object it follows directly).
        if (described and pattern.phrase in _PARTICIPLES and concept == described[1]
                and not merged[described[2]:match.start()].strip()):
            concept = described[0]
        # The object is read again from where the regex found its first word: the noun a phrase of
        # describing words leads to ("a big repo" -> repo; ISA takes the phrase's last noun, "a Python
        # library" -> library; ISPART the first, "runs on Docker containers" -> docker).
        parent, end = _object(merged, match.start("y"), last_noun=pattern.is_isa)
        dimension = None
        if pattern.is_isa and (of := _OF_RE.match(merged, end)):
            dimension, _end = _object(merged, of.end(), last_noun=False)
        if parent is None or parent in NOT_OBJECTS or parent == concept:
            continue
        if not (dimension and dimension != parent):
            dimension = pattern.dimension
        found.append(Triple(concept=concept, parent=parent, dimension=dimension, is_isa=pattern.is_isa,
                            confidence=pattern.confidence, pattern=pattern.phrase))
        described = (concept, parent, end) if pattern.is_isa else None
    return tuple(found)


def _subject(merged: str, end: int, *, positional: bool) -> str | None:
    """The concept a cue ending its subject at `end` is about, or None: a function word, a describing
    word, a number, a negated statement ("no longer belongs to"), or for a positional ISA cue a noun
    phrase rather than a statement ("a different type of approach", "the kind of thing")."""
    window = max(0, end - _SUBJECT_WINDOW)
    found = _SUBJECT_RE.search(merged, window, end)
    if found is None:
        found = _APPOSITIVE_RE.search(merged, window, end)
        if found is None:
            return None
        start, concept = found.start(), found["name"]
    else:
        start, concept = found.start(), found.group().rstrip()
    before = merged[max(0, start - 24):start]
    if concept in ADJECTIVES and (copula := _COPULA_RE.search(before)):
        # "redis is a different kind of database": the describing word sits inside "is a ... kind of"
        start, concept = max(0, start - 24) + copula.start(), copula["name"]
        before = merged[max(0, start - 24):start]
    if concept in STOP_WORDS or concept in ADJECTIVES or _is_number(concept):
        return None
    if _NEGATED_RE.search(before) or (positional and _DETERMINED_RE.search(before)):
        return None
    return concept


def _object(merged: str, start: int, *, last_noun: bool) -> tuple[str | None, int]:
    """The noun of the phrase starting at `start` (describing words before it skipped) and where the
    phrase ends; None when the phrase names nothing (a function word, a number)."""
    first = _FIRST_WORD_RE.match(merged, start)
    words = [(first.group(), first.end())]
    while len(words) < _PHRASE_MAX and (following := _NEXT_WORD_RE.match(merged, words[-1][1])):
        word = following["word"]
        if word in STOP_WORDS or word in _PHRASE_ENDS or word in _CUE_FIRST or _is_number(word):
            break
        words.append((word, following.end()))
    at = 0
    while at < len(words) - 1 and _describes(words[at][0]):
        at += 1
    if last_noun:
        while at < len(words) - 1 and not _describes(words[at + 1][0], noun_before=True):
            at += 1
    word, end = words[at]
    if word in STOP_WORDS or word in ADJECTIVES or _is_number(word):
        return None, end
    return word, end


def _describes(word: str, *, noun_before: bool = False) -> bool:
    """Whether `word` describes rather than names: a describing word, an adverb, or a participle
    ("a dedicated server", "a fully managed service"; after a noun, "a container deployed on ...")."""
    if len(word) > 4 and word.endswith(("ed", "ing", "ly")):
        return True
    return not noun_before and word in ADJECTIVES


def _cue_matches(merged: str):
    """`_CUE_RE.finditer(merged)`, tried only where a cue's first word follows a space or tab (found in
    one C pass), not at every space."""
    end = 0
    for start in _CUE_FIRST_WORDS.starts(merged):
        if start > end and merged[start - 1] in " \t" and (match := _CUE_RE.match(merged, start - 1)):
            end = match.end()
            yield match


def _is_number(word: str) -> bool:
    return not word.lstrip(_NUMBER_CHARS)
