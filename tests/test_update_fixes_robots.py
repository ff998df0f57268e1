"""An update and robots.txt: a page the site's robots.txt now forbids is gone, as a fresh crawl
would not save it; a robots.txt that cannot be read (taken for "disallow all") loses no page.
Real crawls of a real site on 127.0.0.1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import crawl_site
from tests.support.inprocess import tse_here
from tests.support.pages import changes, page_file_states
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.files import pagedir

LINKS = {
    "index.html": ["a.html", "private/b.html"],
    "a.html": [],
    "private/b.html": ["c.html"],
    "private/c.html": [],
}


def live_pages(directory) -> dict[str, tuple[int, bytes]]:
    return {page.url: (page.depth, page.body) for _, page in pagedir.read_pages(directory)}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The site, served for the whole module, with its crawls made once each: the first crawls
    (with and without the catalog), and the fresh crawl once robots.txt forbids /private/.
    ``crawled`` sets the site and the server's rules back to how the first crawls found them."""
    root = tmp_path_factory.mktemp("robots")
    site = write_site(root / "site", LINKS)
    for name in LINKS:  # a word only this page has
        path = site.root / name
        path.write_text(path.read_text().replace("</body>", f"<p>only{name.replace('/', '').split('.')[0]}</p></body>"))
    with SiteServer(site.root) as server:
        made: dict[object, Path] = {}

        def crawl(key: object, *options: str) -> Path:
            if key not in made:
                out = root / f"crawl-{len(made)}"
                out.mkdir()
                done = crawl_site(server, out, 2, *options)
                assert done.returncode == 0, done.stderr.decode()[-2000:]
                made[key] = out
            return made[key]

        yield site, server, crawl


def crawled(tmp_path, served, validators: bool):
    site, server, crawl = served
    server.rules.clear()
    (site.root / "robots.txt").unlink(missing_ok=True)
    out = tmp_path / "out"
    shutil.copytree(crawl(validators, *(["--validators"] if validators else [])), out)
    assert len(page_file_states(out)) == 4
    return site, server, out


@pytest.mark.parametrize("validators", [True, False], ids=["validators", "no-catalog"])
def test_a_page_robots_txt_now_forbids_is_gone_as_in_a_fresh_crawl(tmp_path, served, validators):
    site, server, out = crawled(tmp_path, served, validators)
    doc_of = {url: doc for doc, (url, *_) in page_file_states(out).items()}
    url = server.url
    (site.root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")

    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, 2, "--update", "--changes", listed)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    fresh = served[2]("fresh")  # the fresh crawl of the site as it is now (made once for the module)
    assert set(live_pages(fresh)) == {f"{url}/index.html", f"{url}/a.html"}

    # Exactly what a fresh crawl saves now: b is refused, and c (only linked from b) unreached.
    assert live_pages(out) == live_pages(fresh)
    b, c = doc_of[f"{url}/private/b.html"], doc_of[f"{url}/private/c.html"]
    assert set(pagedir.gone_docs(out)) == {b, c}
    entries = {e["url"]: e for e in changes(listed)}
    assert entries[f"{url}/private/b.html"] == {
        "docid": b,
        "url": f"{url}/private/b.html",
        "change": "gone",
        "status": None,
        "reason": "robots.txt",
    }
    assert entries[f"{url}/private/c.html"]["change"] == "gone"
    assert entries[f"{url}/private/c.html"]["reason"] == "not reached"
    assert {entries[f"{url}/{name}"]["change"] for name in ("index.html", "a.html")} == {"unchanged"}
    assert "0 new, 0 changed, 2 unchanged, 2 gone" in result.stderr.decode()

    # The index and the querier no longer find it (they show what the update wrote: run in the test's
    # process, tests/support/inprocess.py).
    indexfile = tmp_path / "out.index"
    assert tse_here("index", out, indexfile).returncode == 0
    query = tse_here("query", out, indexfile, input=b"onlyprivateb\nonlya\n")  # (both words in one tse query)
    assert query.returncode == 0
    private_b, a = query.stdout.decode().split("Query: ")[1:]
    assert f"{url}/private/b.html" not in private_b and f"{url}/a.html" not in private_b, private_b
    assert f"{url}/private/b.html" in a or f"{url}/a.html" in a, a


def test_a_robots_txt_that_cannot_be_read_does_not_make_the_seed_gone(tmp_path, served):
    _, server, out = crawled(tmp_path, served, True)
    before = page_file_states(out)
    server.rules["/robots.txt"] = Rule(status=503)  # "disallow all" (RFC 9309), but says nothing of the pages
    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, 2, "--update", "--changes", listed, "-s", "RETRY_TIMES=0")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert page_file_states(out) == before
    # The seed, refused for the robots.txt it could not read, is kept as a transient failure is, and
    # so are the pages below it: their links are followed from their saved copies (test_update_transient.py).
    assert pagedir.gone_docs(out) == set()
    assert changes(listed)[0] == {
        "docid": 1,
        "url": f"{server.url}/index.html",
        "change": "unchanged",
        "status": None,
        "reason": "kept: robots.txt answered HTTP 503",
    }
    assert all(e.get("reason") != "robots.txt" for e in changes(listed))
