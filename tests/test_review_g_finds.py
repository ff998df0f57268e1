"""The finds of review G (crawls that read the whole site: sitemaps, robots directives), mended: real
crawls of real files served on 127.0.0.1 (tse_scrapy/devtools/siteserver.py), indexed and queried in the
test's process (tests/support/inprocess.py)."""

from __future__ import annotations

import pytest

from tests.conftest import crawl_site
from tests.support.inprocess import query_here, tse_here
from tests.support.pages import saved_pages
from tse_scrapy.devtools.siteserver import SiteServer
from tse_scrapy.rules.files.pagenotes import read_page_notes

PAGE = "<html><head><title>{title}</title>{head}</head><body><p>{title}</p>{links}</body></html>"


def write(directory, name: str, title: str, head: str = "", links: tuple[str, ...] = ()) -> None:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    (directory / name).write_text(PAGE.format(title=title, head=head, links=anchors))


def names(urls) -> set[str]:
    return {url.rsplit("/", 1)[1] for url in urls}


@pytest.fixture(scope="module")
def head_texts(tmp_path_factory):
    """A site whose robots <meta> tags come after a "<body>" or a "</head>" written in the head's texts (a
    script's string, a comment), crawled once and indexed: (the page directory, the index)."""
    root = tmp_path_factory.mktemp("head-texts")
    site = root / "site"
    site.mkdir()
    write(site, "index.html", "Start page", links=("script-body.html", "comment-head.html", "plain.html"))
    script = '<script>document.write("<body class=js>")</script><meta name="robots" content="noindex">'
    write(site, "script-body.html", "Ocelot script page", script)
    comment = '<!-- </head> moved below --><meta name="robots" content="nofollow">'
    write(site, "comment-head.html", "Heron comment page", comment, links=("behind.html",))
    write(site, "behind.html", "Marmot behind page")
    write(site, "plain.html", "Plain tapir page")
    with SiteServer(site) as server:
        out = root / "out"
        out.mkdir()
        done = crawl_site(server, out, 3)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    index = root / "index"
    assert tse_here("index", out, index).returncode == 0
    return out, index


def test_a_body_tag_in_a_heads_script_does_not_hide_its_robots_noindex(head_texts):
    # A "<body>" in a script's string ended the head there: the noindex after it was never read, and the
    # page was an answer.
    out, index = head_texts
    assert names(read_page_notes(out).noindex) == {"script-body.html"}
    for rank in ("relevance", "tse", "bm25"):
        found = query_here(out, index, ["ocelot", "tapir"], rank)
        assert [names(url for _, url in answers) for answers in found] == [set(), {"plain.html"}], rank


def test_a_head_end_in_a_comment_does_not_hide_its_robots_nofollow(head_texts):
    # A "</head>" in a comment ended the head there: the nofollow after it was never read, and its link
    # followed.
    out, _ = head_texts
    assert names(url for url, _ in saved_pages(out)) == {
        "index.html",
        "script-body.html",
        "comment-head.html",
        "plain.html",
    }
