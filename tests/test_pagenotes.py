"""The notes beside the page files (rules/files/pagenotes.py): lines, torn and foreign ones, files; whether a
page's answer says what was noted of it."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.files.pagenotes import (
    CANONICAL,
    CHARSETS,
    FOLLOW,
    FOLLOWED,
    HTML,
    INDEX,
    NO_CHARSET,
    NOFOLLOW,
    NOINDEX,
    PDF,
    ROBOTS,
    TYPES,
    NotedPages,
    PageNotes,
    differing_notes,
    note_line,
    noted_value,
    notes_said,
    parse_note_lines,
    read_charsets,
    read_noindex,
    read_page_notes,
)


@pytest.mark.parametrize(
    ("url", "charset", "line"),
    [
        ("http://a.test/ja.html", "cp932", b"http://a.test/ja.html\tcp932\n"),
        ("http://a.test/é", " utf-8 ", "http://a.test/é\tutf-8\n".encode()),
        ("http://a.test/\udcff", "latin-1", b"http://a.test/\xff\tlatin-1\n"),  # a URL line that is not UTF-8
        ("http://a.test/x", "", None),
        ("http://a.test/x\ty", "utf-8", None),
        ("http://a.test/x", "utf\n-8", None),
        ("http://a.test/x", "x" * 41, None),
        ("http://a.test/x", "utf-8\udd00", None),  # a label is an ASCII name
        ("http://a.test/\ud800", "utf-8", None),  # a URL no page file could hold
        ("http://a.test/" + "x" * 9000, "utf-8", None),
    ],
)
def test_note_line(url, charset, line):
    assert note_line(url, charset) == line


def test_parse_skips_what_is_not_a_line_and_keeps_the_last_of_a_url():
    data = b"".join(
        [
            b"http://a.test/1\tcp932\n",
            b"no tab at all\n",
            b"two\ttabs\there\n",
            b"http://a.test/2\t" + b"x" * 50 + b"\n",  # a label no charset has
            b"\tcp1252\n",
            b"http://a.test/1\teuc_jp\n",
            b"http://a.test/3\tutf-8",  # torn: no newline
        ]
    )
    assert parse_note_lines(data) == {"http://a.test/1": "euc_jp"}


def test_notes_of_several_processes_are_read_together(tmp_path):
    first, second = PageNotes(tmp_path, CHARSETS, "crawl"), PageNotes(tmp_path, CHARSETS, "host-123")
    first.note("http://a.test/1", "cp932")
    second.note("http://a.test/2", "cp1251")
    first.note("http://a.test/3", "")  # nothing to note
    first.close()
    second.close()
    (tmp_path / CHARSETS / "README").write_text("not a notes file\tx\n")
    assert read_charsets(tmp_path) == {"http://a.test/1": "cp932", "http://a.test/2": "cp1251"}
    assert sorted(p.name for p in (tmp_path / CHARSETS).iterdir()) == ["README", "crawl.tsv", "host-123.tsv"]


def test_no_notes_is_no_charsets(tmp_path):
    assert read_charsets(tmp_path) == {}
    assert read_charsets(tmp_path / "missing") == {}
    assert read_noindex(tmp_path) == frozenset()


def test_noindex_notes(tmp_path):
    notes = PageNotes(tmp_path, ROBOTS, "crawl")
    notes.note("http://a.test/hidden", "noindex")
    notes.note("http://a.test/other", "something else")
    notes.close()
    assert read_noindex(tmp_path) == {"http://a.test/hidden"}


urls = st.text(st.characters(blacklist_characters="\t\n\r"), min_size=1, max_size=200)
labels = st.text(
    st.characters(blacklist_characters="\t\n\r", blacklist_categories=("Zs", "Cc")), min_size=1, max_size=40
)


@given(st.lists(st.tuples(urls, labels), max_size=20))
def test_lines_round_trip_the_last_of_each_url_kept(notes):
    data = b"".join(line for url, label in notes if (line := note_line(url, label)) is not None)
    expected = {}
    for url, label in notes:
        if note_line(url, label) is not None:
            expected[url] = label.strip()
    assert parse_note_lines(data) == expected


@given(st.binary(max_size=2000))
def test_any_bytes_parse(data):
    assert isinstance(parse_note_lines(data), dict)


BEFORE = NotedPages(
    charsets={"http://a.test/ru": "koi8-r"},
    noindex=frozenset({"http://a.test/hidden"}),
    pdfs=frozenset({"http://a.test/doc.pdf"}),
    canonicals={"http://a.test/copy": "http://a.test/original"},
    nofollow=frozenset({"http://a.test/closed"}),
)


# What a page's answer says now against what was noted of it: (URL, charset, noindex, PDF, canonical).
@pytest.mark.parametrize(
    ("now", "differing"),
    [
        (("http://a.test/plain", None, False, False, None), set()),
        (("http://a.test/plain", "utf-8", False, False, None), {CHARSETS}),  # a charset said now
        (("http://a.test/ru", " koi8-r ", False, False, None), set()),  # (as noted: stripped)
        (("http://a.test/ru", None, False, False, None), {CHARSETS}),  # a charset no longer said
        (("http://a.test/ru", "x" * 41, False, False, None), {CHARSETS}),  # one that cannot be noted: none
        (("http://a.test/plain", "x" * 41, False, False, None), set()),
        (("http://a.test/plain", "-", False, False, None), set()),  # ("-" notes none)
        # A URL too long for a note's line (9,000 bytes; a canonical's: 17,192) has none: it would differ
        # at every update.
        (("http://a.test/" + "x" * 9000, "utf-8", True, True, "http://a.test/original"), {CANONICAL}),
        (("http://a.test/" + "x" * 8975, "windows-1252", True, True, None), {ROBOTS, TYPES}),  # (9,003 bytes)
        (("http://a.test/ru", "-", False, False, None), {CHARSETS}),
        (("http://a.test/hidden", None, True, False, None), set()),
        (("http://a.test/hidden", None, False, False, None), {ROBOTS}),  # noindex no longer
        (("http://a.test/plain", None, True, False, None), {ROBOTS}),  # noindex now
        (("http://a.test/doc.pdf", None, False, True, None), set()),
        (("http://a.test/doc.pdf", None, False, False, None), {TYPES}),
        (("http://a.test/copy", None, False, False, "http://a.test/original"), set()),
        (("http://a.test/copy", None, False, False, "http://a.test/other"), {CANONICAL}),
        (("http://a.test/copy", None, False, False, None), {CANONICAL}),
        (("http://a.test/plain", "utf-8", True, True, "http://a.test/original"), {CHARSETS, ROBOTS, TYPES, CANONICAL}),
        # (... and nofollow, when given.)
        (("http://a.test/closed", None, False, False, None, True), set()),
        (("http://a.test/closed", None, False, False, None, False), {FOLLOW}),  # nofollow no longer
        (("http://a.test/closed", None, False, False, None), {FOLLOW}),
        (("http://a.test/plain", None, False, False, None, True), {FOLLOW}),  # nofollow now
        (("http://a.test/" + "x" * 8975, None, False, False, None, True), {FOLLOW}),
        (("http://a.test/" + "x" * 9000, None, False, False, None, True), set()),  # (no line: none)
    ],
)
def test_differing_notes(now, differing):
    assert differing_notes(BEFORE, *now) == differing


# The notes an answer's headers speak to (a 304 carries some of a 200's headers, or none).
@pytest.mark.parametrize(
    ("names", "said"),
    [
        ([], set()),
        (["ETag", "Last-Modified", "Date"], set()),
        (["X-Robots-Tag"], {ROBOTS, FOLLOW}),
        (["x-robots-tag", "X-Robots-Tag"], {ROBOTS, FOLLOW}),
        (["Link"], {CANONICAL}),
        (["Content-Type"], {CHARSETS, TYPES}),
        (["CONTENT-TYPE", "Link", "ETag"], {CHARSETS, TYPES, CANONICAL}),
    ],
)
def test_notes_said(names, said):
    assert notes_said(names) == said


@given(
    pages=st.lists(
        st.tuples(urls, st.one_of(st.none(), labels), st.booleans(), st.booleans(), st.none(), st.booleans()),
        max_size=8,
    )
)
def test_pages_noted_as_they_are_do_not_differ(pages, tmp_path_factory):
    # Notes written as a crawl writes them (the last of a URL wins), read back: the same pages do not differ.
    directory = tmp_path_factory.mktemp("notes")
    notes = {kind: PageNotes(directory, kind, "crawl") for kind in (CHARSETS, ROBOTS, TYPES, FOLLOW)}
    for url, charset, noindex, pdf, _, nofollow in pages:
        if note_line(url, "x") is None:
            continue
        notes[CHARSETS].note(url, noted_value(url, charset) or NO_CHARSET)  # (as the crawl notes one it cannot)
        notes[ROBOTS].note(url, NOINDEX if noindex else INDEX)
        notes[TYPES].note(url, PDF if pdf else HTML)
        notes[FOLLOW].note(url, NOFOLLOW if nofollow else FOLLOWED)
    for kind in notes.values():
        kind.close()
    before = read_page_notes(directory)
    last = {page[0]: page for page in pages if note_line(page[0], "x") is not None}
    assert not any(differing_notes(before, *page) for page in last.values())
