"""The crawl record's lines (rules/files/crawlrecord.py): parsed, refused with a reason, and formatted back."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tse_scrapy.rules.files.crawlrecord import (
    IGNORED_KINDS,
    MAX_LINE,
    MAX_TEXT,
    MAX_URL,
    OUTCOMES,
    RecordError,
    RequestRecord,
    format_record,
    parse_record,
)

SAVED_LINE = (
    '{"url":"http://h/a.html","doc":3,"depth":1,"host":"h","outcome":"saved","status":200,"failure":null,'
    '"bytes":5120,"start":1764522000.125,"end":1764522000.131,"wait":0.994,"worker":null,'
    '"links":["http://h/b.html"],"ignored":{"duplicate":2}}'
)

GOOD_LINES = [
    (
        SAVED_LINE,
        RequestRecord(
            url="http://h/a.html",
            outcome="saved",
            depth=1,
            host="h",
            doc=3,
            status=200,
            bytes=5120,
            start=1764522000.125,
            end=1764522000.131,
            wait=0.994,
            links=("http://h/b.html",),
            ignored={"duplicate": 2},
        ),
    ),
    # Only url and outcome are needed; the rest take their defaults.
    ('{"url":"http://h/","outcome":"robots"}', RequestRecord(url="http://h/", outcome="robots")),
    # A request refused before it was sent: no start, no end.
    (
        '{"url":"http://h/p","outcome":"failed","failure":"robots.txt","start":null,"end":null,"worker":"w2"}',
        RequestRecord(url="http://h/p", outcome="failed", failure="robots.txt", worker="w2"),
    ),
    # Whole-number times are seconds too, and bytes work like text.
    (
        b'{"url":"http://h/","outcome":"retried","status":503,"start":10,"end":12}',
        RequestRecord(url="http://h/", outcome="retried", status=503, start=10.0, end=12.0),
    ),
    # Not a request: a saved page given a freed docID at the end of a distributed crawl.
    (
        '{"url":"http://h/b","doc":2,"outcome":"moved","worker":"w1","moved_from":5}',
        RequestRecord(url="http://h/b", outcome="moved", doc=2, worker="w1", moved_from=5),
    ),
    # A sitemap file fetched for --sitemaps, answered 404: a sitemap line, not a failed page.
    (
        '{"url":"http://h/sitemap.xml","outcome":"sitemap","status":404,"start":10,"end":11}',
        RequestRecord(url="http://h/sitemap.xml", outcome="sitemap", status=404, start=10.0, end=11.0),
    ),
    # null optional counts take their defaults.
    (
        '{"url":"http://h/","outcome":"unsaved","depth":null,"bytes":null,"wait":null,"host":null}',
        RequestRecord(url="http://h/", outcome="unsaved"),
    ),
]


@pytest.mark.parametrize(("line", "record"), GOOD_LINES)
def test_good_lines(line, record):
    assert parse_record(line) == record


BAD_LINES = [
    ("", "not JSON"),
    ("garbage", "not JSON"),
    ('{"url":"http://h/","outcome":"saved"', "not JSON"),  # a torn line
    (b'{"url":"http://h/\xff","outcome":"saved"}', "not JSON"),  # not UTF-8
    ("[1, 2]", "not a JSON object"),
    ('"http://h/"', "not a JSON object"),
    ('{"outcome":"saved"}', "url must be a text"),
    ('{"url":"","outcome":"saved"}', "url must be a text"),
    ('{"url":7,"outcome":"saved"}', "url must be a text"),
    ('{"url":"' + "u" * (MAX_URL + 1) + '","outcome":"saved"}', "url must be a text"),
    ('{"url":"http://h/"}', "outcome must be one of"),
    ('{"url":"http://h/","outcome":"done"}', "outcome must be one of"),
    ('{"url":"http://h/","outcome":["saved"]}', "outcome must be one of"),
    ('{"url":"http://h/","outcome":"saved","bytes":-1}', "bytes must be a whole number"),
    ('{"url":"http://h/","outcome":"saved","bytes":1.5}', "bytes must be a whole number"),
    ('{"url":"http://h/","outcome":"saved","bytes":true}', "bytes must be a whole number"),
    ('{"url":"http://h/","outcome":"saved","depth":"1"}', "depth must be a whole number"),
    ('{"url":"http://h/","outcome":"saved","status":false}', "status must be a whole number"),
    ('{"url":"http://h/","outcome":"saved","doc":' + str(2**63) + "}", "doc must be a whole number"),
    ('{"url":"http://h/","outcome":"moved","doc":2,"moved_from":-1}', "moved_from must be a whole number"),
    ('{"url":"http://h/","outcome":"saved","start":NaN}', "start must be a number of seconds"),
    ('{"url":"http://h/","outcome":"saved","end":Infinity}', "end must be a number of seconds"),
    ('{"url":"http://h/","outcome":"saved","end":1e400}', "end must be a number of seconds"),  # inf once read
    ('{"url":"http://h/","outcome":"saved","start":-1}', "start must be a number of seconds"),
    ('{"url":"http://h/","outcome":"saved","start":true}', "start must be a number of seconds"),
    ('{"url":"http://h/","outcome":"saved","wait":"1"}', "wait must be a number of seconds"),
    ('{"url":"http://h/","outcome":"saved","links":"http://h/b"}', "links must be a list of URLs"),
    ('{"url":"http://h/","outcome":"saved","links":{"a":1}}', "links must be a list of URLs"),
    ('{"url":"http://h/","outcome":"saved","links":[1]}', "links must be a list of URLs"),
    ('{"url":"http://h/","outcome":"saved","ignored":{"offsite":1}}', "ignored must map external"),
    ('{"url":"http://h/","outcome":"saved","ignored":{"duplicate":-1}}', "ignored must map external"),
    ('{"url":"http://h/","outcome":"saved","ignored":{"duplicate":true}}', "ignored must map external"),
    ('{"url":"http://h/","outcome":"saved","ignored":[]}', "ignored must map external"),
    ('{"url":"http://h/","outcome":"saved","host":"' + "h" * (MAX_TEXT + 1) + '"}', "host must be a text"),
    ('{"url":"http://h/","outcome":"failed","failure":404}', "failure must be a text"),
    ('{"url":"http://h/","outcome":"saved","worker":["w1"]}', "worker must be a text"),
    ("[" * 100_000 + "]" * 100_000, "not"),  # too deep for the JSON reader: refused, not a crash
    ('{"url":"http://h/","outcome":"saved","pad":"' + "x" * MAX_LINE + '"}', "a line longer than"),
]


@pytest.mark.parametrize(("line", "reason"), BAD_LINES, ids=[line[:40] for line, _ in BAD_LINES])
def test_bad_lines_say_why(line, reason):
    with pytest.raises(RecordError) as refused:
        parse_record(line)
    assert str(refused.value).startswith(reason), str(refused.value)
    assert "\n" not in str(refused.value)


def test_format_record_writes_one_ascii_line_in_a_fixed_order():
    record = RequestRecord(
        url="http://h/é",
        outcome="saved",
        doc=1,
        start=1.0000004,
        end=2.5,
        links=("http://h/b",),
        ignored={"duplicate": 0, "denied": 2},
    )
    line = format_record(record)
    assert line.endswith("\n") and line.count("\n") == 1 and line.isascii()
    assert list(json.loads(line)) == [
        *("url", "doc", "depth", "host", "outcome", "status", "failure", "bytes", "start", "end", "wait", "worker"),
        *("links", "ignored"),
    ]
    # Times to the microsecond; counts of 0 and an empty list are left out.
    assert json.loads(line)["start"] == 1.0 and json.loads(line)["ignored"] == {"denied": 2}
    assert "links" not in format_record(RequestRecord(url="http://h/", outcome="robots"))


# Times are rounded to the microsecond in the strategy: format_record rounds them.
times = st.floats(min_value=0, max_value=4e9, allow_nan=False).map(lambda time: round(time, 6))
# Any text, lone surrogates too (a JSON "\ud800" escape reads back as one).
any_character = st.characters(exclude_categories=())
texts = st.text(any_character, max_size=30)
counts = st.integers(min_value=0, max_value=2**63 - 1)
records = st.builds(
    RequestRecord,
    url=st.text(any_character, min_size=1, max_size=60),
    outcome=st.sampled_from(OUTCOMES),
    depth=counts,
    host=texts,
    doc=st.none() | counts,
    status=st.none() | st.integers(min_value=100, max_value=599),
    failure=st.none() | texts,
    bytes=counts,
    start=st.none() | times,
    end=st.none() | times,
    wait=times,
    worker=st.none() | texts,
    links=st.lists(st.text(any_character, max_size=40), max_size=5).map(tuple),
    # A count of 0 is not written (format_record leaves it out), so none is generated.
    ignored=st.dictionaries(st.sampled_from(IGNORED_KINDS), st.integers(min_value=1, max_value=10**6)),
    moved_from=st.none() | counts,
)


@settings(max_examples=200)
@given(records)
def test_a_formatted_record_parses_back_to_itself(record):
    line = format_record(record)
    assert parse_record(line) == record
    assert parse_record(line.encode()) == record
