"""Keeping a crawl fresh: ``tse crawl --update`` against real sites that change
between crawls.  The truth is a fresh crawl of the changed site (the live
pages must be the same) and the changes the test itself made.  What ``tse crawl`` refuses before
Scrapy starts is asked in the test's process (``cli.main``: tests/support/inprocess.py)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time

import pytest

from tests.conftest import (
    BIN,
    REFERENCE_HOST,
    ROOT,
    clean_env,
    crawl_site,
    popen,
    run_scrapy,
    run_tse,
    scrapy_crawl_site,
)
from tests.support.inprocess import crawl_here
from tests.support.pages import catalog_rows, changes, page_file_states, tree
from tests.support.reference import build_page_directory
from tests.support.sample import run_seed
from tests.support.sitecrawl import validated_two_page_crawl
from tests.support.sitegen import Site, generate_site, write_site
from tests.support.wait import wait_until
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.files import pagedir

DEPTH = 3


def live_pages(directory) -> dict[str, tuple[int, bytes]]:
    """URL -> (depth, body) of the pages a reader sees (gone ones skipped)."""
    return {page.url: (page.depth, page.body) for _, page in pagedir.read_pages(directory)}


def gone(directory) -> set[int]:
    return set(pagedir.gone_docs(directory))


def edit(root, name, old, new):
    path = root / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def mutate(site) -> dict[str, set[str]]:
    """Change, delete and add pages; return the page names of each kind."""
    root = site.root
    reachable = [name for name in site.links if name != "index.html" and not name.startswith("missing")]
    rng = random.Random(7)
    changed = set(rng.sample(reachable, 4))
    deleted = set(rng.sample(sorted(set(reachable) - changed), 2))
    for name in changed:
        edit(root, name, "</body>", f"<p>Changed {name} today</p></body>")
    for name in deleted:
        (root / name).unlink()
    (root / "fresh.html").write_text("<html><body><p>A page added today</p></body></html>\n")
    edit(root, "index.html", "</body>", '<p><a href="fresh.html">fresh</a></p></body>')
    return {"changed": changed | {"index.html"}, "deleted": deleted, "added": {"fresh.html"}}


@pytest.fixture(scope="module")
def forty_pages(tmp_path_factory):
    """A 40-page site served for the module and the same site changed (``mutate``), with the first
    crawls of the one (by order, with the validators or not) and the fresh crawls of the other (by
    order), each made once: a test updates a copy of a first crawl against the changed site.  (The two
    tests in tse order each made the very same fresh crawl.)"""
    root = tmp_path_factory.mktemp("forty")
    site = generate_site(root / "site", pages=40, fanout=3, seed=5, external=2, dead=2)
    changed = Site(root / "changed", dict(site.links), set(site.dead))
    shutil.copytree(site.root, changed.root)  # the same bytes: the same ETags for the pages left alone
    made = mutate(changed)
    crawls: dict[object, object] = {}
    with SiteServer(site.root) as server:

        def crawl(key: object, served, *options: str):
            """The crawl of *served* (a site's root) with *options*, made once for *key*."""
            if key not in crawls:
                server.root = served
                out = root / f"crawl-{len(crawls)}"
                out.mkdir()
                done = crawl_site(server, out, DEPTH, *options)
                assert done.returncode == 0, done.stderr.decode()[-2000:]
                crawls[key] = out
            return crawls[key]

        yield site, changed, made, server, crawl


@pytest.mark.parametrize(("order", "validators"), [("tse", True), ("bfs", True), ("tse", False)])
def test_an_update_leaves_the_live_pages_of_a_fresh_crawl(tmp_path, forty_pages, order, validators):
    site, changed_site, made, server, crawl = forty_pages
    out = tmp_path / "out"
    first = crawl((order, validators), site.root, "--order", order, *(["--validators"] if validators else []))
    shutil.copytree(first, out)  # (the page files' times kept)
    before = page_file_states(out)
    before_live = live_pages(out)
    assert (out / ".tse-pages.sqlite").exists() == validators  # only when asked
    assert not (out / ".tse-gone").exists()
    server.root = changed_site.root  # the site changed: changed, deleted and added pages (made)
    first_hits = len(server.hits)

    changes_file = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, DEPTH, "--order", order, "--update", "--changes", changes_file)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    update_hits = [hit for hit in server.hits[first_hits:] if hit.key != "/robots.txt"]
    fresh = crawl(order, changed_site.root, "--order", order)  # the changed site's fresh crawl in this order

    # The live pages are exactly those of a fresh crawl of the site as it is now.
    now_live = live_pages(out)
    assert now_live == live_pages(fresh)
    after = page_file_states(out)
    doc_of = {url: doc for doc, (url, *_) in before.items()}
    url = f"{server.url}/"
    # Known URLs keep their docIDs; unchanged pages are not touched at all.
    unchanged = {u for u in before_live if u in now_live and before_live[u] == now_live[u]}
    for doc, (page_url, inode, mtime, data) in before.items():
        assert after[doc][0] == page_url
        if page_url in unchanged:
            assert after[doc][1:] == (inode, mtime, data)
    changed = {u for u in before_live if u in now_live and before_live[u] != now_live[u]}
    assert {url + name for name in made["changed"]} & set(now_live) <= changed
    for page_url in changed:
        assert after[doc_of[page_url]][3] != before[doc_of[page_url]][3]
    # New pages get the docIDs after the highest one.
    new = set(now_live) - set(before_live)
    assert url + "fresh.html" in new
    assert sorted(doc for doc, (page_url, *_) in after.items() if page_url in new) == list(
        range(max(before) + 1, max(before) + 1 + len(new))
    )
    # Gone: deleted (404) or no longer reachable; their files stay, listed in .tse-gone.
    gone_urls = set(before_live) - set(now_live)
    assert {url + name for name in made["deleted"]} <= gone_urls
    assert gone(out) == {doc_of[u] for u in gone_urls}
    assert all(doc in after for doc in gone(out))

    listed = changes(changes_file)
    assert [entry["docid"] for entry in listed] == sorted(entry["docid"] for entry in listed)
    by_kind = {kind: {e["url"] for e in listed if e["change"] == kind} for kind in ("new", "changed", "unchanged")}
    assert by_kind == {"new": new, "changed": changed, "unchanged": unchanged}
    gone_entries = {e["url"]: e["status"] for e in listed if e["change"] == "gone"}
    assert set(gone_entries) == gone_urls
    for name in made["deleted"]:
        assert gone_entries[url + name] in (404, None)  # 404 when still linked, None when unreachable
    counts = f"{len(new)} new, {len(changed)} changed, {len(unchanged)} unchanged, {len(gone_urls)} gone"
    assert f"updated {out}: {counts}".encode() in result.stderr
    # The summary's pages: those the update checked, and of them the page files it wrote (it said
    # "N pages saved", the unchanged ones counted with the written ones).
    checked, written = len(new) + len(changed) + len(unchanged), len(new) + len(changed)
    summary = result.stderr.decode().splitlines()[-1]
    assert summary.startswith(f"tse crawl: {checked} pages checked, {written} written, "), summary
    assert "saved" not in summary

    asked = [hit for hit in update_hits if "If-None-Match" in hit.headers]
    if validators:
        # Every known page was asked for with its validators; the unchanged ones answered 304.
        assert {server.url + hit.key for hit in asked} == set(before_live) & {server.url + h.key for h in update_hits}
        assert sum(1 for entry in listed if entry["status"] == 304) == len(unchanged)
        assert {e["url"] for e in listed if e["status"] == 304} == unchanged
    else:
        assert asked == []  # nothing recorded: every page downloaded and compared
        assert all(entry["status"] != 304 for entry in listed)
    # The update keeps the catalog for the next one.
    assert (out / ".tse-pages.sqlite").is_file()
    assert not (out / ".tse-state.sqlite").exists()


def test_a_second_update_with_nothing_changed_rewrites_nothing(tmp_path, forty_pages):
    # (The module's 40-page site as first crawled, with the validators: a copy of its crawl, updated.)
    site, _, _, server, crawl = forty_pages
    out = tmp_path / "out"
    shutil.copytree(crawl(("tse", True), site.root, "--order", "tse", "--validators"), out)
    server.root = site.root
    before = page_file_states(out)
    first_hits = len(server.hits)
    result = crawl_site(server, out, DEPTH, "--update")
    assert result.returncode == 0
    assert page_file_states(out) == before
    assert not (out / ".tse-gone").exists()
    answers = [hit for hit in server.hits[first_hits:] if hit.key != "/robots.txt"]
    assert len(answers) >= len(before)
    assert b"0 new, 0 changed, %d unchanged, 0 gone" % len(before) in result.stderr
    assert f"tse crawl: {len(before)} pages checked, 0 written, ".encode() in result.stderr


def test_a_page_that_comes_back_keeps_its_docid(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1).returncode == 0
    doc_of = {url: doc for doc, (url, *_) in page_file_states(out).items()}
    body = (site.root / "b.html").read_bytes()
    (site.root / "b.html").unlink()
    assert crawl_site(server, out, 1, "--update").returncode == 0
    assert gone(out) == {doc_of[f"{server.url}/b.html"]}
    (site.root / "b.html").write_bytes(body)
    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, 1, "--update", "--changes", listed)
    assert result.returncode == 0
    assert not (out / ".tse-gone").exists()
    assert {e["url"]: (e["docid"], e["change"]) for e in changes(listed)} == {
        f"{server.url}/index.html": (doc_of[f"{server.url}/index.html"], "unchanged"),
        f"{server.url}/a.html": (doc_of[f"{server.url}/a.html"], "unchanged"),
        f"{server.url}/b.html": (doc_of[f"{server.url}/b.html"], "new"),
    }
    assert sorted(page_file_states(out)) == [1, 2, 3]


def test_a_gone_list_written_by_hand_is_what_the_update_starts_from(tmp_path, serve):
    # docs/indexing.md: "to remove a page, keep its file and list its docID in PAGEDIR/.tse-gone".
    # The update threw such a list away (the catalog said every page was live): the pages were live
    # again, "unchanged".  The list says what is live: a page listed that the site still has is back
    # ("new", out of the list), one it has not stays listed; a docID taken out of the list is live.
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html", "c.html"], "a.html": [], "b.html": []})
    (site.root / "c.html").write_text("<html><body>c</body></html>\n")
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1, "--validators").returncode == 0
    doc_of = {url.rsplit("/", 1)[1]: doc for doc, (url, *_) in page_file_states(out).items()}
    (site.root / "c.html").unlink()  # 404 from now on
    (out / ".tse-gone").write_text(f"{doc_of['a.html']}\n{doc_of['c.html']}\n99\n")  # 99: no such page
    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, 1, "--update", "--changes", listed)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"updated %s: 1 new, 0 changed, 2 unchanged, 0 gone\n" % bytes(out) in result.stderr
    assert {e["url"].rsplit("/", 1)[1]: e["change"] for e in changes(listed)} == {
        "index.html": "unchanged",
        "a.html": "new",
        "b.html": "unchanged",
    }
    assert (out / ".tse-gone").read_text() == f"{doc_of['c.html']}\n"
    # Taken out of the list by hand, c is live again: the update finds it gone.
    (out / ".tse-gone").unlink()
    result = crawl_site(server, out, 1, "--update", "--changes", listed)
    assert b"0 new, 0 changed, 3 unchanged, 1 gone\n" in result.stderr, result.stderr.decode()[-2000:]
    assert [(e["docid"], e["reason"]) for e in changes(listed) if e["change"] == "gone"] == [
        (doc_of["c.html"], "http 404")
    ]
    assert gone(out) == {doc_of["c.html"]}


def test_a_page_that_fails_for_a_while_is_kept(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1).returncode == 0
    before = page_file_states(out)
    server.rules["/a.html"] = Rule(status=503)
    listed = tmp_path / "changes.jsonl"
    assert crawl_site(server, out, 1, "--update", "--changes", listed).returncode == 0
    assert page_file_states(out) == before and not gone(out)
    assert {e["url"]: (e["change"], e["status"]) for e in changes(listed)}[f"{server.url}/a.html"] == (
        "unchanged",
        503,
    )


def test_scrapy_crawl_updates_with_the_update_argument(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert scrapy_crawl_site(server, out, 1).returncode == 0
    edit(site.root, "a.html", "</body>", "<p>new words</p></body>")
    result = scrapy_crawl_site(server, out, 1, "-a", "update=yes")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"0 new, 1 changed, 1 unchanged, 0 gone" in result.stderr
    assert b"new words" in (out / "2").read_bytes()


def test_an_update_killed_anywhere_resumes_to_the_same_directory(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=120, fanout=3, seed=21, external=3, dead=3)
    server = serve(site.root)
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    assert crawl_site(server, crawled, 10, "--validators").returncode == 0
    mutate(site)
    for name in site.links:
        server.rules["/" + name] = Rule(delay=0.01)  # about two seconds an update
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    shutil.copytree(crawled, whole)
    shutil.copytree(crawled, killed)
    whole_changes, killed_changes = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    asked = len(server.hits)
    assert crawl_site(server, whole, 10, "--update", "--changes", whole_changes).returncode == 0
    asked = len(server.hits) - asked  # the requests of an update: each kill comes before its last

    # Killed at three numbers of requests drawn from TSE_TEST_SEED (random; named in the messages; all:
    # five): every kill is the same kind, anywhere in a page's life, each run of the suite at others.
    seed, replay = run_seed()
    rng = random.Random(f"4{seed}")
    planned = 5 if seed is None else 3
    command = [str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(killed), "10"]
    command += ["--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"]
    command += ["--update", "--changes", str(killed_changes)]
    kills = 0
    start = len(server.hits)
    for run, requests in enumerate(sorted(rng.sample(range(2, asked - 2), planned))):
        process = popen(command + ["--resume"] * bool(run), env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL)
        wait_until(
            lambda process=process, requests=requests: (
                process.poll() is not None or len(server.hits) - start >= requests
            ),
            60,
            "no request",
        )
        time.sleep(rng.uniform(0, 0.01))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        if process.returncode != -signal.SIGKILL:
            break
        kills += 1
        assert (killed / ".tse-state.sqlite").is_file(), replay
    assert kills >= planned - 1, replay
    final = run_tse(*command[1:], "--resume")
    assert final.returncode == 0, (replay, final.stderr.decode()[-2000:])
    assert changes(killed_changes) == changes(whole_changes), replay
    without_catalog = {name: data for name, data in tree(killed).items() if name != ".tse-pages.sqlite"}
    expected = {name: data for name, data in tree(whole).items() if name != ".tse-pages.sqlite"}
    assert without_catalog == expected, replay
    assert catalog_rows(killed) == catalog_rows(whole), replay


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """A two-page site, served for the module, and its crawl with the catalog (depth 1), made once:
    the tests copy it."""
    with validated_two_page_crawl(tmp_path_factory.mktemp("validated")) as made:
        yield made


def test_updates_that_cannot_be_are_refused_in_one_line(tmp_path, validated):
    server, crawled = validated
    empty = tmp_path / "empty"
    empty.mkdir()
    # Refused before Scrapy starts: asked in the test's process (the crawls stay processes).
    result = crawl_here(server, empty, 1, "--update")
    assert result.returncode == 2
    assert result.stderr.decode() == f"tse crawl: {empty} holds no crawl to update: crawl it first (without --update)\n"
    result = crawl_here(server, empty, 1, "--changes", tmp_path / "c.jsonl")
    assert (result.returncode, result.stderr.decode()) == (
        2,
        "tse crawl: --changes goes with --update (a first crawl's pages are all new)\n",
    )
    # scrapy crawl tse names the options as it was given them.
    result = scrapy_crawl_site(server, empty, 1, "-s", f"TSE_CHANGES={tmp_path / 'c.jsonl'}")
    assert (result.returncode, result.stderr.decode()) == (
        2,
        "scrapy crawl tse: -s TSE_CHANGES goes with -a update=yes (a first crawl's pages are all new)\n",
    )
    result = crawl_here(server, empty, 1, "--validators", "-s", f"JOBDIR={tmp_path / 'job'}")
    assert result.returncode == 2 and b"drop JOBDIR" in result.stderr
    assert os.listdir(empty) == []
    out = tmp_path / "out"
    shutil.copytree(crawled, out)
    before = tree(out)
    for options, message in (
        (["--update", "-s", "TSE_STATE_ENABLED=False"], b"need the crawl state"),
        (["--update", "--redis", "redis://127.0.0.1:1/0"], b"drop --redis"),
        (["--update", "--warc", str(tmp_path / "x.warc")], b"must end in .warc.gz"),
        (["--update", "--changes", str(tmp_path / "no" / "c.jsonl")], b"--changes: no directory"),
    ):
        result = crawl_here(server, out, 1, *options)
        assert result.returncode == 2 and message in result.stderr and result.stderr.count(b"\n") == 1, options
    result = crawl_here(server, out, 2, "--update")
    assert result.returncode == 2
    assert result.stderr == b"tse crawl: cannot update: depth was 1 and is now 2\n"
    warc = tmp_path / "old.warc.gz"
    warc.write_bytes(b"")
    result = crawl_here(server, out, 1, "--update", "--warc", warc)
    assert result.returncode == 2 and b"exists" in result.stderr
    assert tree(out) == before
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / ".tse-pages.sqlite").unlink()
    (bad / "2").write_bytes(b"not a page file")
    result = crawl_here(server, bad, 1, "--update")
    assert (
        result.returncode == 2
        and result.stderr
        == f"tse crawl: cannot update: {bad}/2: not a page file (URL, depth, page): it is one line, "
        "without a line break (a page file's URL, then its depth)\n".encode()
    )
    # A plain crawl into a directory that holds one is refused, sent to --update.
    result = crawl_here(server, out, 1)
    assert result.returncode == 2 and b"holds a finished crawl of " in result.stderr
    assert b"crawl it again with --update" in result.stderr


def test_the_change_rate_order_revisits_what_changes(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=60, fanout=3, seed=8, external=0, dead=0)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 10, "--order", "bfs", "--validators").returncode == 0
    names = sorted(name for name in site.links if name != "index.html")
    volatile = set(random.Random(2).sample(names, 6))
    # Two updates that see them change: a history in the catalog (visits, changes) the order reads.
    for round_number in range(2):
        for name in volatile:
            edit(site.root, name, "</body>", f"<p>round {round_number}</p></body>")
        assert crawl_site(server, out, 10, "--order", "bfs", "--update").returncode == 0
    for name in volatile:
        edit(site.root, name, "</body>", "<p>round 2</p></body>")
    start = len(server.hits)
    listed = tmp_path / "changes.jsonl"
    options = ["--order", "priority", "-s", "TSE_PRIORITIZER=tse_scrapy.update.prioritizer.ChangeRatePrioritizer"]
    result = crawl_site(server, out, 10, "--update", "--max-pages", len(volatile), "--changes", listed, *options)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    fetched = {hit.key.lstrip("/") for hit in server.hits[start:] if hit.key != "/robots.txt"}
    assert fetched == volatile
    assert {e["url"] for e in changes(listed) if e["change"] == "changed"} == {f"{server.url}/{n}" for n in volatile}
    assert b"not revisited: page limit" in result.stderr
    assert not gone(out)  # a partial update never takes pages for gone


def test_an_update_through_nginx_asks_only_for_what_changed(tmp_path, nginx, mirror, reference_dir):
    """nginx, standing in for the reference server behind http_proxy, answers the conditional requests."""
    letters = "cs50tse.cs.dartmouth.edu/tse/letters"
    root = tmp_path / "root"
    shutil.copytree(mirror / letters, root / letters)
    server = nginx(root)
    env = clean_env(http_proxy=server.url)
    seed = f"{REFERENCE_HOST}/tse/letters/index.html"
    out = tmp_path / "out"
    out.mkdir()

    def crawl(directory, *options):
        result = run_tse("crawl", seed, directory, 6, "-s", "DOWNLOAD_DELAY=0", *options, env=env)
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        return result

    crawl(out, "--validators")
    # With validators, the page files are still exactly the reference crawl's.
    expected = build_page_directory(reference_dir, mirror, "letters-6", tmp_path / "expected")
    assert {n: d for n, d in tree(out).items() if n != ".tse-pages.sqlite"} == tree(expected)
    before = page_file_states(out)

    seen = len(server.accesses())
    result = crawl(out, "--update")
    pages = [a for a in server.accesses()[seen:] if not a.target.endswith("/robots.txt")]
    assert len(pages) == len(before)
    assert all(a.status == 304 and a.if_none_match and a.if_modified_since for a in pages)
    assert sum(a.body_bytes for a in pages) == 0
    assert page_file_states(out) == before
    assert b"0 new, 0 changed, 9 unchanged, 0 gone" in result.stderr

    site = root / letters
    (site / "B.html").write_bytes((site / "B.html").read_bytes() + b"<p>B again</p>\n")
    later = time.time() + 120  # nginx's validators come from the mtime: a change must move it
    os.utime(site / "B.html", (later, later))
    (site / "E.html").unlink()
    seen = len(server.accesses())
    listed = tmp_path / "changes.jsonl"
    crawl(out, "--update", "--changes", listed)
    answered = {a.target.rsplit("/", 1)[1]: a.status for a in server.accesses()[seen:]}
    assert answered["B.html"] == 200 and answered["E.html"] == 404 and answered["A.html"] == 304
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    crawl(fresh)
    assert live_pages(out) == live_pages(fresh)
    kinds = {e["url"].rsplit("/", 1)[1]: e["change"] for e in changes(listed)}
    assert kinds["B.html"] == "changed" and kinds["E.html"] == "gone"


def test_an_update_names_the_option_that_differs_in_words(tmp_path, validated):
    # It said "pdf was yes and is now None", "render was None and is now yes", "deny was  and is now x".
    server, crawled = validated
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1, "--sitemaps", "--pdf", "--validators").returncode == 0
    before = tree(out)
    for options, differs in (
        (["--sitemaps"], "pdf was given and is now not given"),
        (["--sitemaps", "--pdf", "--deny", "qqq"], "deny was (none) and is now qqq"),  # (not the seed's)
        (["--sitemaps", "--pdf", "--deny-ext", "gif"], "deny_ext was not given and is now gif"),
    ):
        result = crawl_here(server, out, 1, "--update", *options)  # refused before Scrapy starts
        assert result.stderr.decode() == f"tse crawl: cannot update: {differs}\n", options
        assert result.returncode == 2
    assert tree(out) == before
    plain = tmp_path / "plain"  # crawled without --sitemaps
    shutil.copytree(crawled, plain)
    arguments = [f"seed={server.url}/index.html", f"pagedir={plain}", "depth=1", f"prefix={server.url}/"]
    arguments += ["update=yes", "sitemaps=yes"]
    result = run_scrapy("crawl", "tse", *[x for a in arguments for x in ("-a", a)], "-s", "DOWNLOAD_DELAY=0")
    assert result.stderr.decode() == "scrapy crawl tse: cannot update: sitemaps was not given and is now given\n"
    assert result.returncode == 2
