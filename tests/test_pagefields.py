"""The links a page gives the search index (``pagefields.anchors``): those to its own host, with their
anchor text's terms."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.text.pagefields import anchors

PAGE = "http://127.0.0.1:8080/docs/index.html"


@pytest.mark.parametrize(
    "href, target",
    [
        ("page.html", "http://127.0.0.1:8080/docs/page.html"),
        ("/top.html#part", "http://127.0.0.1:8080/top.html"),
        ("http://127.0.0.1:8080/docs/a.html", "http://127.0.0.1:8080/docs/a.html"),
        ("HTTP://127.0.0.1:8080/docs/a.html", "http://127.0.0.1:8080/docs/a.html"),  # urljoin's scheme
        ("  http://127.0.0.1:8080/docs/b.html  ", "http://127.0.0.1:8080/docs/b.html"),
        ("http://127.0.0.1:8080/docs/c&amp;d.html", "http://127.0.0.1:8080/docs/c&d.html"),
        ("http://127.0.0.1:80&#56;0/docs/e.html", "http://127.0.0.1:8080/docs/e.html"),  # a reference in the host
        ("http://127.0.0.1:8\t080/docs/f.html", "http://127.0.0.1:8080/docs/f.html"),  # a tab dropped inside
        ("http://en.wikipedia.org/wiki/Search", None),  # another host
        ("https://127.0.0.1:8080/docs/a.html", None),  # another scheme: another origin
        ("http://127.0.0.1:8081/docs/a.html", None),  # another port
        ("http://127.0.0.1:8080", None),  # the host without a path: not under its "/"
        ("mailto:someone@127.0.0.1", None),
        ("#top", None),
        ("index.html", None),  # the page itself
    ],
)
def test_links_to_the_pages_own_host_are_kept(href, target):
    found = anchors(f'<p><a class="x" href="{href}">Search <b>Engines</b></a></p>', PAGE, "en")
    assert found == ([(target, "search engin")] if target else [])


def test_a_target_is_kept_once_with_its_first_anchor_text():
    text = '<a href="a.html">First</a> <a href="/docs/a.html#x">Second</a> <a href=\'b.html\'>Third</a>'
    assert anchors(text, PAGE, None) == [
        ("http://127.0.0.1:8080/docs/a.html", "first"),
        ("http://127.0.0.1:8080/docs/b.html", "third"),
    ]


_HREFS = st.sampled_from(
    [
        "a.html",
        "/b.html",
        "http://127.0.0.1:8080/c.html",
        "http://127.0.0.1:8080/c.html#d",
        "http://other.example/e.html",
        "https://127.0.0.1:8080/f.html",
        "HTTP://127.0.0.1:8080/g.html",
        "http://127.0.0.1:8080/h&amp;i.html",
        "http://other.example/&#35;",
        " http://other.example/j.html",
    ]
)


@given(st.lists(_HREFS, max_size=8))
def test_every_link_to_the_host_is_kept_in_order(hrefs):
    # Each href alone, then all of them on one page: the page keeps each target it links to first.
    alone = [anchors(f'<a href="{href}">word</a>', PAGE, None) for href in hrefs]
    expected = {}
    for found in alone:
        for target, terms in found:
            expected.setdefault(target, terms)
    together = anchors("".join(f'<a href="{href}">word</a>' for href in hrefs), PAGE, None)
    assert together == list(expected.items())
