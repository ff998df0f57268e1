"""Character references (tse_scrapy/rules/web/entities): decoded as ``html.unescape`` decodes them, a
decimal one of more digits than ``int`` reads included (a page holding one stopped ``tse index``)."""

from __future__ import annotations

import html
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tse_scrapy.rules.text import pagefields, pagetext
from tse_scrapy.rules.web.entities import unescape

LONG = 5000  # digits: past int()'s 4,300

CASES = [
    ("a &amp; b &#65;&#x42; &#0; &#1;", "a & b AB \ufffd "),
    ("x &#" + "1" * LONG + "; y", "x \ufffd y"),
    ("x &#" + "0" * LONG + "65;y", "x Ay"),
    ("&#" + "0" * LONG, "\ufffd"),
    ("&#" + "0" * LONG + "1114109", "\U0010fffd"),
    ("&#" + "0" * LONG + "1114112", "\ufffd"),
    ("&#" + "9" * LONG + "&#x41;&#", "\ufffdA&#"),
]


@pytest.mark.parametrize(("text", "decoded"), CASES)
def test_unescape(text, decoded):
    assert unescape(text) == decoded


references = st.lists(
    st.one_of(
        st.sampled_from(["&#", "&#x", ";", "&", "amp", "0", "x", " "]),
        st.integers(0, 10**12).map(str),
        st.integers(0, 30).map(lambda zeros: "0" * zeros),
        st.sampled_from(["0" * LONG, "7" * LONG]),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(references)
def test_unescape_as_html_unescape_without_the_digit_limit(text):
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        expected = html.unescape(text)
    finally:
        sys.set_int_max_str_digits(limit)
    assert unescape(text) == expected


def test_a_page_holding_a_long_reference_is_read():
    # As the same page with the reference's value written short (U+FFFD: past U+10FFFF), not a traceback.
    def page(reference):
        return f"<title>T {reference}</title><p>x {reference} y</p><a href='b{reference}.html'>Bee</a>".encode()

    long, short = page("&#" + "1" * LONG + ";"), page("&#65533;")
    assert pagetext.visible_text(long) == pagetext.visible_text(short) == "x \ufffd y Bee"
    assert pagetext.page_title(long) == "T \ufffd"
    url = "http://127.0.0.1/a.html"
    assert pagefields.page_fields(url, long) == pagefields.page_fields(url, short)
    assert len(pagefields.page_fields(url, long).links) == 1


# The other readers of a page's references: a canonical link (the crawl and the index), the saved copy's
# own <base>, and a web archive's hrefs (tse import).  Each stopped with int()'s ValueError.
HUGE = "&#" + "1" * LONG + ";"


def test_a_canonical_link_holding_a_long_reference_is_read():
    from tse_scrapy.rules.web.duplicates import named_canonical

    body = f'<html><head><link rel="canonical" href="/a{HUGE}b.html"></head><body>x</body></html>'.encode()
    assert named_canonical([], body, "http://127.0.0.1/p.html") == "http://127.0.0.1/a%EF%BF%BDb.html"


def test_a_saved_copy_of_a_page_whose_base_holds_a_long_reference_is_made():
    from tse_scrapy.rules.web.savedcopy import with_base

    body = f'<html><head><base href="/d{HUGE}/"></head><body><a href="x">x</a></body></html>'.encode()
    copied = with_base(body, "http://127.0.0.1/p.html", "utf-8")
    assert b'<base href="http://127.0.0.1/d\xef\xbf\xbd/"' in copied


def test_an_archived_page_whose_href_holds_a_long_reference_gives_its_links():
    from tse_scrapy.rules.files.webarchive import page_links

    body = f'<html><body><a href="/e{HUGE}.html">e</a><a href="/f.html">f</a></body></html>'.encode()
    assert page_links(body, "http://127.0.0.1/p.html") == [
        "http://127.0.0.1/e\ufffd.html",
        "http://127.0.0.1/f.html",
    ]
