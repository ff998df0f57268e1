"""The links a page gives the search index (``pagefields.anchors``): those to its own host, with their
anchor text's terms; the characters ending a run of a bigram script (``pagefields.run_ends``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.text import analysis
from tse_scrapy.rules.text.pagefields import anchors, run_ends

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


# The characters ending a run of a bigram script (pagefields.run_ends): real text of the Debian
# reference (ja), the installation guide (zh_CN, ko).
@pytest.mark.parametrize(
    "text, ends",
    [
        ("目次 序章 1. 免責事項 2. Debian とはなにか", ["次", "章", "項", "か"]),
        ("开发了大量用于 Unix™ 的自由软件", ["于", "件"]),
        ("데비안 설치 안내서", ["안", "치", "서"]),
        ("序章序章", ["章"]),  # (章 starts 章序: it ends only the run)
        ("書 Debian", []),  # a run of one character is its own word
        ("Debian GNU/Linux", []),
    ],
)
def test_run_ends(text, ends):
    assert run_ends(analysis.words(text)) == ends


_SEGMENTED_TEXT = st.text(alphabet=st.sampled_from("日本語の章序目次テキスト한국어 .,a1-「」"), max_size=60)


@given(_SEGMENTED_TEXT)
def test_every_character_of_a_bigram_script_is_a_word_start_or_a_run_end(text):
    # What a query of one character finds: the words it starts ("c"*) and the run ends.
    words = analysis.words(text)
    found = {word[0] for word in words} | set(run_ends(words))
    assert all(character in found for character in text if analysis.is_segmented(character))
