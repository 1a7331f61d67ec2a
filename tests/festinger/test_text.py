"""The tokeniser and cue scanner against the seed's rules and every row of its pattern tables, each test
run twice: with the C loops (festinger/_words.c, when built) and with the same loops in Python
(festinger/_words_python.py)."""

import os
import re
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from festinger import _words_python, text
from festinger.text import PATTERNS, Triple, canonical, cues, tokenize
from tests.festinger.loops import compiled_loops, loops_in_use, loops_named


@pytest.fixture(scope="module", autouse=True, params=["c", "python"])
def implementation(request):
    """festinger.text running on one implementation of the loops (module-scoped: hypothesis runs many
    examples per test, and a function-scoped fixture would not be reset between them)."""
    with loops_in_use(loops_named(request.param)) as loops:
        yield loops


_CHOSEN = """
import sys
if sys.argv[1] == "unbuilt":
    sys.modules["festinger._words"] = None  # as after an install without a compiler: the import fails
from festinger import text, wordscan
print(wordscan.implementation.__name__, text.tokenize("Glitch University runs on Docker, 2026"))
"""


@pytest.mark.parametrize(("pure_python", "extension", "chosen"), [
    ("1", "built", "festinger._words_python"),
    ("0", "unbuilt", "festinger._words_python"),
    ("0", "built", "festinger._words"),
])
def test_the_c_loops_are_used_when_built_unless_python_is_asked_for(pure_python, extension, chosen):
    if chosen == "festinger._words" and compiled_loops() is None:
        pytest.skip("the C extension festinger._words was not built (installed without a compiler)")
    env = {**os.environ, "FATHOM_PURE_PYTHON": pure_python}
    ran = subprocess.run([sys.executable, "-c", _CHOSEN, extension], env=env, capture_output=True, text=True,
                         check=True)
    assert ran.stdout.split()[0] == chosen
    assert "('glitch_university', 'runs', 'on', 'docker')" in ran.stdout


@given(st.text(max_size=80))
def test_both_loops_shape_and_make_ascii_alike(sample):
    compiled = compiled_loops()
    if compiled is None:
        return
    assert _words_python.shape(sample) == compiled.shape(sample)
    assert _words_python.as_ascii(sample) == compiled.as_ascii(sample)


# --- tokens ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("given_text", "tokens"), [
    # the seed's examples
    ("gnommoweb is a repo of Glitch University", ["gnommoweb", "is", "a", "repo", "of", "glitch_university"]),
    ("Please update gnommoweb to use FastAPI instead",
     ["please", "update", "gnommoweb", "to", "use", "fastapi", "instead"]),
    ("Agent Zero", ["agent_zero"]),
    ("New York City", ["new_york_city"]),
    ("the Glitch University", ["the", "glitch_university"]),
    ("The Glitch University", ["the", "glitch_university"]),  # a leading article stays outside the run
    ("An Apple Product", ["an", "apple_product"]),
    # a lowercase word, punctuation, a line break or a one-letter word breaks a run
    ("Glitch the University", ["glitch", "the", "university"]),
    ("Glitch University, Agent Zero.", ["glitch_university", "agent_zero"]),
    ("Glitch\nUniversity", ["glitch", "university"]),
    ("Glitch\t University", ["glitch_university"]),
    ("A Glitch University", ["a", "glitch_university"]),
    ("I Robot", ["i", "robot"]),
    # the cue keywords are never part of a run
    ("Michigan ISA State", ["michigan", "isa", "state"]),
    ("Gnommoweb ISPART Glitch University", ["gnommoweb", "ispart", "glitch_university"]),
    # joiners inside a token stay, punctuation around it goes
    ("runs-on glitch.university agent0_stack v1.2", ["runs-on", "glitch.university", "agent0_stack", "v1.2"]),
    ("(gnommoweb), 'repo'; \"docker\"! end.", ["gnommoweb", "repo", "docker", "end"]),
    ("__init__ -flag- ...dots... a--b", ["init", "flag", "dots", "a--b"]),
    ("gnommoweb's repo", ["gnommoweb", "s", "repo"]),
    # no minimum length; numbers alone are not tokens
    ("a b c 2026 42x 3.14", ["a", "b", "c", "42x"]),
    # letters beyond ASCII take the same rules
    ("Straße München Stadt — “gnommoweb”", ["straße_münchen_stadt", "gnommoweb"]),
    ("", []),
    ("  ...  ", []),
])
def test_tokenize_follows_the_seed_rules(given_text, tokens):
    assert list(tokenize(given_text)) == tokens


@pytest.mark.parametrize(("phrase", "token"), [
    ("Glitch University", "glitch_university"),
    ("glitch university", "glitch_university"),
    ("glitch_university", "glitch_university"),
    ("  Docker. ", "docker"),
    ("deployment-type", "deployment-type"),
    ("!!", ""),
])
def test_canonical_makes_one_token_of_a_phrase(phrase, token):
    assert canonical(phrase) == token


_ascii_text = st.lists(st.sampled_from(list("abcXYZ019 \t\n.,-_'()!?:;") + ["ISA ", "Glitch "]),
                       max_size=60).map("".join)


WORD_RE = re.compile(text._WORD)  # the rule both implementations of the loops follow


def _by_regex(merged: str) -> list[str]:
    return [word for word in WORD_RE.findall(merged) if not text._is_number(word)]


@given(_ascii_text)
def test_tokens_are_the_regex_words_of_the_merged_text(sample):
    assert list(tokenize(sample)) == _by_regex(text._merged(sample))


@given(st.text(max_size=80))
def test_the_compiled_words_are_the_regex_words_of_any_text(sample):
    assert list(text.words(sample)) == _by_regex(sample)


def _first_seen_counts(tokens) -> list[tuple[str, int]]:
    return list(Counter(tokens).items())  # a Counter keeps the order of first occurrence


@given(st.text(st.characters(max_codepoint=0x2100), max_size=80),
       st.sets(st.sampled_from(["a", "b", "ab", "a.b", "x1", "café", "abcdefghij", "abcdefghi"])))
def test_a_lexicon_counts_its_words_and_returns_the_others(sample, held):
    lexicon = text.Lexicon(held)
    tokens = _by_regex(sample)
    others = lexicon.count(sample)
    assert list(others.items()) == _first_seen_counts(t for t in tokens if t not in held)
    assert lexicon.take() == Counter(t for t in tokens if t in held)
    assert lexicon.take() == {}  # taken once
    assert lexicon.starts(sample) == [m.start() for m in WORD_RE.finditer(sample) if m.group() in held]


def test_a_lexicon_holds_each_word_once_and_refuses_what_is_no_word():
    lexicon = text.Lexicon(["the", "a", "the"])
    assert len(lexicon) == 2 and lexicon.words == ("the", "a")
    many = text.Lexicon(f"w{i}" for i in range(100_000))  # grows past any first guess
    assert many.count("w99999 w5 w5 zz") == {"zz": 1} and many.take() == {"w99999": 1, "w5": 2}
    assert lexicon.count("the \ud800 a\udfff ok") == {"ok": 1}  # lone surrogates are no letters
    with pytest.raises(TypeError, match="str"):
        text.Lexicon(["a", 1])
    with pytest.raises(TypeError, match="str"):
        lexicon.count(b"the a")


@given(st.lists(st.sampled_from(["Glitch", "University", "ISA", "ISPART", "A", "I", "x", "Fast-API", "a.B", "_C",
                                  "3D", "New", "York", " ", "  ", "\t", "\n", ".", "-", "(", "'s", "É"]),
                max_size=30).map("".join))
def test_compound_runs_merge_as_the_run_pattern_says(sample):
    assert text._merged(sample) == text._RUN_RE.sub(text._join_run, sample).lower()


_punctuated_text = st.lists(st.sampled_from(["Glitch", "University", "gnommoweb", "is", "a", "repo", "x-", " ", "\t",
                                            "\n", "\u2014", "\u201c", "\u201d", "\u2026", "\xa0", "\U0001f600", "caf\xe9"]),
                           max_size=30).map("".join)


@given(_punctuated_text)
def test_letters_and_punctuation_beyond_ascii_read_as_the_regexes_read_them(sample):
    by_regex = text._RUN_RE.sub(text._join_run, sample).lower()
    assert list(tokenize(sample)) == _by_regex(by_regex)
    assert [m.span() for m in text._cue_matches(text._merged(sample))] == [
        m.span() for m in text._CUE_RE.finditer(by_regex)]


@given(st.text(max_size=60))
def test_any_text_tokenises_to_lowercase_words_without_edge_punctuation(sample):
    for token in tokenize(sample):
        assert token == token.lower() and token.strip() == token
        assert token[0].isalnum() and token[-1].isalnum()
        assert not text._is_number(token)


# --- cues: every row of the seed's tables ---------------------------------------------------------------

ISA_ROWS = [
    ("gnommoweb is a repo", "is a", "gnommoweb", "repo"),
    ("gnommoweb is an API", "is an", "gnommoweb", "api"),
    ("gnommoweb ISA repo", "isa", "gnommoweb", "repo"),
    ("State is a kind of region", "is a kind of", "state", "region"),
    ("gnommoweb is a type of service", "is a type of", "gnommoweb", "service"),
    ("dobby is an instance of agent", "is an instance of", "dobby", "agent"),
    ("gnommoweb kind of repo", "kind of", "gnommoweb", "repo"),
    ("gnommoweb type of service", "type of", "gnommoweb", "service"),
    ("dobby instance of agent", "instance of", "dobby", "agent"),
]

ISPART_ROWS = [
    ("gnommoweb is part of Glitch University", "is part of", "gnommoweb", "glitch_university", "membership"),
    ("gnommoweb ISPART glitch_university", "ispart", "gnommoweb", "glitch_university", "membership"),
    ("gnommoweb part of Agent0", "part of", "gnommoweb", "agent0", "membership"),
    ("gnommoweb belongs to Glitch University", "belongs to", "gnommoweb", "glitch_university", "membership"),
    ("gnommoweb is owned by jenstandstad", "is owned by", "gnommoweb", "jenstandstad", "owned-by"),
    ("gnommoweb owned by jenstandstad", "owned by", "gnommoweb", "jenstandstad", "owned-by"),
    ("dobby member of agent_pool", "member of", "dobby", "agent_pool", "membership"),
    ("dobby is a member of agent_pool", "is a member of", "dobby", "agent_pool", "membership"),
    ("gnommoweb runs on Docker", "runs on", "gnommoweb", "docker", "runs-on"),
    ("gnommoweb hosted by ramanujan", "hosted by", "gnommoweb", "ramanujan", "runs-on"),
    ("gnommoweb deployed on Docker", "deployed on", "gnommoweb", "docker", "runs-on"),
    ("gnommoweb contained in agent0_stack", "contained in", "gnommoweb", "agent0_stack", "membership"),
    # the same cues with "is" (issue 17: they gave nothing, or `is` as the subject)
    ("gnommoweb is a part of Glitch University", "is a part of", "gnommoweb", "glitch_university", "membership"),
    ("gnommoweb is hosted by ramanujan", "is hosted by", "gnommoweb", "ramanujan", "runs-on"),
    ("gnommoweb is hosted on ramanujan", "is hosted on", "gnommoweb", "ramanujan", "runs-on"),
    ("gnommoweb hosted on ramanujan", "hosted on", "gnommoweb", "ramanujan", "runs-on"),
    ("gnommoweb is deployed on Docker", "is deployed on", "gnommoweb", "docker", "runs-on"),
    ("gnommoweb is deployed to Docker", "is deployed to", "gnommoweb", "docker", "runs-on"),
    ("gnommoweb deployed to Docker", "deployed to", "gnommoweb", "docker", "runs-on"),
    ("gnommoweb is contained in agent0_stack", "is contained in", "gnommoweb", "agent0_stack", "membership"),
]


def test_the_tables_cover_every_pattern_of_the_seed():
    assert {row[1] for row in ISA_ROWS} | {row[1] for row in ISPART_ROWS} == {p.phrase for p in PATTERNS}
    assert {p.phrase for p in PATTERNS if p.is_isa} == {row[1] for row in ISA_ROWS}


@pytest.mark.parametrize(("sentence", "phrase", "concept", "parent"), ISA_ROWS)
def test_every_isa_pattern_yields_an_isa_triple_in_type(sentence, phrase, concept, parent):
    (triple,) = cues(sentence)
    assert (triple.concept, triple.parent, triple.dimension, triple.is_isa, triple.pattern) == (
        concept, parent, "type", True, phrase)


@pytest.mark.parametrize(("sentence", "phrase", "concept", "parent", "dimension"), ISPART_ROWS)
def test_every_ispart_pattern_yields_an_ispart_triple_in_its_default_dimension(
        sentence, phrase, concept, parent, dimension):
    (triple,) = cues(sentence)
    assert (triple.concept, triple.parent, triple.dimension, triple.is_isa, triple.pattern) == (
        concept, parent, dimension, False, phrase)


@pytest.mark.parametrize(("sentence", "phrase", "concept", "parent"), ISA_ROWS)
def test_every_isa_pattern_takes_of_z_as_its_dimension(sentence, phrase, concept, parent):
    (triple,) = cues(sentence + " of Glitch University")
    assert (triple.concept, triple.parent, triple.dimension, triple.is_isa) == (
        concept, parent, "glitch_university", True)


@pytest.mark.parametrize(("sentence", "phrase", "concept", "parent", "dimension"), ISPART_ROWS)
def test_of_z_does_not_change_an_ispart_dimension(sentence, phrase, concept, parent, dimension):
    (triple,) = cues(sentence + " of Glitch University")
    assert triple.dimension == dimension


@pytest.mark.parametrize(("sentence", "expected"), [
    ("gnommoweb is a repo of Glitch University",
     [Triple("gnommoweb", "repo", "glitch_university", True, text.COPULAR, "is a")]),
    ("Michigan is a state of USA", [Triple("michigan", "state", "usa", True, text.COPULAR, "is a")]),
    ("Michigan is a state of the USA", [Triple("michigan", "state", "usa", True, text.COPULAR, "is a")]),
    ("Michigan ISA State", [Triple("michigan", "state", "type", True, text.EXACT, "isa")]),
    ("dobby instance of agent", [Triple("dobby", "agent", "type", True, text.POSITIONAL, "instance of")]),
    # an article before the object is skipped; a compound run is one concept on either side
    ("gnommoweb is part of the Glitch University",
     [Triple("gnommoweb", "glitch_university", "membership", False, text.COPULAR, "is part of")]),
    ("Agent Zero is a framework", [Triple("agent_zero", "framework", "type", True, text.COPULAR, "is a")]),
    # keywords in any case and spacing; punctuation after the object ends it
    ("gnommoweb   IS A  repo.", [Triple("gnommoweb", "repo", "type", True, text.COPULAR, "is a")]),
    # two facts in one sentence: a participle after the ISA object describes the subject (seed Test B)
    ("gnommoweb is a container deployed on Docker", [
        Triple("gnommoweb", "container", "type", True, text.COPULAR, "is a"),
        Triple("gnommoweb", "docker", "runs-on", False, text.COPULAR, "deployed on")]),
    # issue 17: an appositive, describing words, a leading article outside the compound
    ("Dobby, the helper bot, is a member of agent_pool",
     [Triple("dobby", "agent_pool", "membership", False, text.COPULAR, "is a member of")]),
    ("X is a big repo", [Triple("x", "repo", "type", True, text.COPULAR, "is a")]),
    ("gnommoweb is part of The Glitch University",
     [Triple("gnommoweb", "glitch_university", "membership", False, text.COPULAR, "is part of")]),
])
def test_cue_examples(sentence, expected):
    assert list(cues(sentence)) == expected


@pytest.mark.parametrize("sentence", [
    "This is a problem",              # a pronoun is not a concept
    "it is an option",
    "what kind of database",
    "gnommoweb is a kind of",         # the pattern's own noun is not an object
    "A different type of approach",   # a noun phrase, not a statement (issue 17)
    "gnommoweb\nis a repo",           # a line break ends a cue
    "the repo, is a thing",           # so does punctuation
    "gnommoweb is a 2026",            # a number is not a concept
    "gnommoweb is",
    "Please update gnommoweb to use FastAPI instead",
    "",
])
def test_text_without_a_cue_states_no_fact(sentence):
    assert cues(sentence) == ()


def test_exact_keywords_score_above_copular_cues_above_positional_ones():
    assert text.EXACT > text.COPULAR > text.POSITIONAL
    assert cues("a1 ISA b1")[0].confidence > cues("a1 is a b1")[0].confidence > cues("a1 kind of b1")[0].confidence


_cue_text = st.lists(
    st.tuples(st.sampled_from([*{word for p in PATTERNS for word in p.phrase.split()}, "the", "of", "island", "types",
                               "Glitch", "University", "gnommoweb", "repo", "3.14", "x-y"]),
              st.sampled_from([" ", "  ", "\t", "\n", ". ", ", ", " \t"])),
    max_size=30).map(lambda pairs: "".join(word + separator for word, separator in pairs))


@given(_cue_text)
def test_the_cue_scan_finds_what_the_regex_finds_everywhere(sample):
    merged = text._merged(sample)
    assert [m.span() for m in text._cue_matches(merged)] == [
        m.span() for m in text._CUE_RE.finditer(merged)]
