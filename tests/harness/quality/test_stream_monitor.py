import pytest

from harness.quality.stream_monitor import CRITICAL, WARNING, Alert, StreamMonitor

PLAIN = "The interviews point the same way on pricing and churn across teams. "  # no structure, no citation


def padded(opening: str, length: int, filler: str = PLAIN) -> str:
    text = opening
    while len(text) < length:
        text += filler
    return text[:length]


def feed_in_chunks(monitor: StreamMonitor, text: str, size: int) -> list[Alert]:
    alerts = []
    for start in range(0, len(text), size):
        alerts += monitor.feed(text[start:start + size])
    return alerts


def summary(alerts):
    return [(alert.checkpoint, alert.severity) for alert in alerts]


def test_a_plain_synthesis_gets_a_structure_and_a_citation_warning():
    alerts = StreamMonitor("synthesis").feed(padded("", 6000))
    assert summary(alerts) == [(2000, WARNING), (5000, WARNING)]
    assert alerts[0].issue == "No structure: no headers, bullets or numbered items"
    assert alerts[1].issue == "No citations or evidence markers"
    assert set(alerts[0].as_event()) == {"severity", "checkpoint", "issue", "suggestion"}


@pytest.mark.parametrize("size", [1, 7, 333, 499, 500, 501, 1999, 4096, 10_000])
def test_each_checkpoint_fires_at_most_once_whatever_the_chunk_sizes(size):
    text = padded("I can't see the data, but ", 7000)
    monitor = StreamMonitor("synthesis")
    alerts = feed_in_chunks(monitor, text, size) + monitor.feed(PLAIN * 50) + monitor.feed("")
    assert summary(alerts) == [(500, CRITICAL), (2000, WARNING), (5000, WARNING)]
    assert alerts[0].issue == 'Possible refusal: "I can\'t"'


def test_odd_chunks_that_cross_several_checkpoints_at_once_report_them_in_order():
    monitor = StreamMonitor("full_pipeline")
    assert monitor.feed(padded("", 499)) == []
    assert summary(monitor.feed(padded("", 5001))) == [(2000, WARNING), (5000, WARNING)]


def test_a_check_reads_only_the_text_up_to_its_checkpoint():
    # a refusal after character 500 is not the 500 checkpoint's business, nor a header after 2000
    text = padded("", 600) + "Unfortunately, no. " + padded("", 1500) + "\n# Findings\n" + padded("", 3000)
    assert summary(StreamMonitor("drafting").feed(text)) == [(2000, WARNING)]


def test_text_short_of_a_checkpoint_is_not_checked_there():
    monitor = StreamMonitor("synthesis")
    assert monitor.feed("I cannot help with that.") == []
    assert monitor.feed(padded("", 400)) == []


@pytest.mark.parametrize(("workflow", "opening", "expected"), [
    ("synthesis", "Sure, here is the synthesis. ", [(500, WARNING)]),
    ("recommendation", "Of course, let me help. ", [(500, WARNING)]),
    ("full_pipeline", "That's a great question! ", [(500, WARNING)]),
    ("chat", "Sure, here you go. ", []),  # filler is fine in a chat
    ("drafting", "Sure, a draft. ", []),
    ("chat", "Unfortunately I don't have access to that. ", [(500, CRITICAL)]),
    ("drafting", "I’m unable to open the file. ", [(500, CRITICAL)]),  # a typographic apostrophe
    ("synthesis", "Sure, but I cannot do that. ", [(500, CRITICAL)]),  # a refusal outranks filler
    ("synthesis", "Pricing is the main churn driver. ", []),
])
def test_refusal_and_filler_at_500(workflow, opening, expected):
    assert summary(StreamMonitor(workflow).feed(padded(opening, 1000))) == expected


@pytest.mark.parametrize(("workflow", "structure", "expected"), [
    ("synthesis", "", [(2000, WARNING)]),
    ("recommendation", "", [(2000, WARNING)]),
    ("drafting", "", [(2000, WARNING)]),
    ("chat", "", []),
    ("synthesis", "\n## Findings\n", []),
    ("synthesis", "\n- churn is up\n", []),
    ("synthesis", "\n* churn is up\n", []),
    ("synthesis", "\n1. churn is up\n", []),
    ("synthesis", "\n2) churn is up\n", []),
    ("synthesis", " a - dash mid-sentence or #hashtag ", [(2000, WARNING)]),
])
def test_structure_at_2000(workflow, structure, expected):
    text = padded("", 1000) + structure + padded("", 1500)
    alerts = [alert for alert in StreamMonitor(workflow).feed(text) if alert.checkpoint == 2000]
    assert summary(alerts) == expected


@pytest.mark.parametrize(("workflow", "marker", "expected"), [
    ("synthesis", "", [(5000, WARNING)]),
    ("full_pipeline", "", [(5000, WARNING)]),
    ("recommendation", "", []),
    ("drafting", "", []),
    ("synthesis", " according to the March survey ", []),
    ("synthesis", " as the survey shows [1] ", []),
    ("synthesis", " see [a1b2c3d4e5f60718] ", []),
    ("synthesis", ' one user said "we left because of the price" ', []),
    ("synthesis", " one user said “we left because of the price” ", []),
    ("synthesis", ' a "short" quote ', [(5000, WARNING)]),
])
def test_citations_at_5000(workflow, marker, expected):
    text = padded("", 3000) + marker + padded("", 3000)
    alerts = [alert for alert in StreamMonitor(workflow).feed(text) if alert.checkpoint == 5000]
    assert summary(alerts) == expected


def test_reset_arms_every_checkpoint_again_for_the_next_attempt():
    monitor = StreamMonitor("synthesis")
    first = monitor.feed(padded("Unfortunately ", 6000))
    assert monitor.feed(padded("", 6000)) == []
    monitor.reset()
    assert summary(monitor.feed(padded("Unfortunately ", 6000))) == summary(first) == [
        (500, CRITICAL), (2000, WARNING), (5000, WARNING)]
