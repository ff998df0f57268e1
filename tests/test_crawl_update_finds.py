"""What a tester found in updates and resumes, fixed: a page reached only through a redirect survives
a site down for a while; a known page that redirects now is gone with its redirect's status; a page
back after being gone is written again; a resume must name the output files its crawl began with; an
update told of an existing WARC is told to name a new one; a second Ctrl-C always exits 1.  Real
crawls of real files served on 127.0.0.1 (docs/updating.md, docs/robustness.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT, clean_env, crawl_site, popen
from tests.support.inprocess import tse_here
from tests.support.pages import changes, page_file_states, snapshot
from tests.support.sitecrawl import interrupted_crawl
from tests.support.sitegen import generate_site, write_site
from tests.support.wait import wait_until
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.crawling.crawlargs import ArgumentError, check_same_outputs
from tse_scrapy.rules.files import pagedir

DEPTH = 3
# "sub" is a directory: the server answers /sub with a 301 to /sub/, the only way to it and below it.
LINKS = {
    "index.html": ["sub", "a.html"],
    "a.html": [],
    "sub/index.html": ["deep.html"],
    "sub/deep.html": [],
}


def crawled_with_a_redirect(tmp_path):
    site = write_site(tmp_path / "site", LINKS)
    out = tmp_path / "out"
    out.mkdir()
    return site, out


def refused_here(*args) -> tuple[int, str]:
    """`tse ARGS` run in this process (its refusals come before Scrapy is imported, or a page fetched):
    its exit status and what it wrote to stderr (nothing to stdout)."""
    done = tse_here(*args)
    assert done.stdout == b""
    return done.returncode, done.stderr.decode()


def doc_of(out, server) -> dict[str, int]:
    return {url.removeprefix(server.url + "/"): doc for doc, (url, *_) in page_file_states(out).items()}


@pytest.fixture(scope="module")
def module_server():
    """One site server for the module's tests that share a crawl (its root set by each: ``served``)."""
    with tempfile.TemporaryDirectory() as name, SiteServer(Path(name)) as server:
        yield server


@pytest.fixture
def shared(module_server):
    """The module's server, its rules cleared and its root set by ``crawled``."""
    module_server.rules.clear()
    yield module_server
    module_server.rules.clear()


# index.html -> a.html, b.html; c.html linked from nowhere (the one a redirect may lead to).
THREE = {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []}


@pytest.fixture(scope="module")
def three_crawled(module_server):
    """THREE written (and c.html) and crawled with --validators once: (the site, its page directory)."""
    with tempfile.TemporaryDirectory() as name:
        site = write_site(Path(name) / "site", THREE)
        (site.root / "c.html").write_text("<html><body>c</body></html>\n")
        module_server.root = site.root
        out = Path(name) / "out"
        out.mkdir()
        done = crawl_site(module_server, out, DEPTH, "--validators")
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        yield site, out


def crawled(shared, three_crawled, tmp_path):
    """A copy of THREE's site (served) and of its crawl (page files' times kept) for one test."""
    site, out = three_crawled
    root, copy = tmp_path / "site", tmp_path / "out"
    shutil.copytree(site.root, root)
    shutil.copytree(out, copy)
    shared.root = root
    return root, copy


def test_a_page_reached_only_through_a_redirect_survives_a_site_down(tmp_path):
    # It was "gone", "not reached": the link "sub" failed, and nothing knew it led to the saved "sub/".
    site, out = crawled_with_a_redirect(tmp_path)
    with SiteServer(site.root) as server:
        first = crawl_site(server, out, DEPTH, "--validators")
        assert first.returncode == 0, first.stderr.decode()[-2000:]
    docs = doc_of(out, server)
    assert set(docs) == {"index.html", "a.html", "sub/", "sub/deep.html"}
    before = page_file_states(out)
    listed = tmp_path / "changes.jsonl"
    # Stopped: nothing listens on its port (connection refused).
    result = crawl_site(server, out, DEPTH, "--update", "--changes", listed, "-s", "RETRY_TIMES=0")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "0 new, 0 changed, 4 unchanged, 0 gone" in result.stderr.decode()
    assert pagedir.gone_docs(out) == set()
    assert page_file_states(out) == before
    assert {(e["url"], e["change"], e["status"], e["reason"]) for e in changes(listed)} == {
        (f"{server.url}/{name}", "unchanged", None, "kept: robots.txt: connection refused") for name in docs
    }


def test_a_redirect_that_fails_for_a_while_is_followed_as_it_was(tmp_path, serve):
    # The redirect itself answers 503; the page it led to answers, and so do the pages below it.
    site, out = crawled_with_a_redirect(tmp_path)
    server = serve(site.root)
    assert crawl_site(server, out, DEPTH, "--validators").returncode == 0
    docs = doc_of(out, server)
    server.rules["/sub"] = Rule(status=503)
    asked = len(server.hits)
    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, DEPTH, "--update", "--changes", listed, "-s", "RETRY_TIMES=0")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "0 new, 0 changed, 4 unchanged, 0 gone" in result.stderr.decode()
    assert pagedir.gone_docs(out) == set()
    hits = [(hit.key, hit.status) for hit in server.hits[asked:] if hit.key != "/robots.txt"]
    assert ("/sub", 503) in hits and ("/sub/", 304) in hits and ("/sub/deep.html", 304) in hits
    entries = {e["docid"]: e for e in changes(listed)}
    assert {entries[docs[name]]["status"] for name in ("sub/", "sub/deep.html")} == {304}
    # Once the redirect answers again, the next update finds the site as it is, and keeps what it knew.
    del server.rules["/sub"]
    assert "0 new, 0 changed, 4 unchanged, 0 gone" in crawl_site(server, out, DEPTH, "--update").stderr.decode()
    server.stop()  # and now the site is down: the redirect is still followed as it was
    down = crawl_site(server, out, DEPTH, "--update", "-s", "RETRY_TIMES=0")
    assert "0 new, 0 changed, 4 unchanged, 0 gone" in down.stderr.decode(), down.stderr.decode()[-2000:]


@pytest.fixture(scope="module")
def redirect_crawled(module_server):
    """LINKS written and crawled with --validators once, on the module's server: (the site's root, its
    page directory), read only (a test copies the crawl)."""
    with tempfile.TemporaryDirectory() as name:
        site, out = crawled_with_a_redirect(Path(name))
        module_server.root = site.root
        done = crawl_site(module_server, out, DEPTH, "--validators")
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        yield site.root, out


def test_a_catalog_without_redirects_still_updates(tmp_path, shared, redirect_crawled):
    # A catalog written before redirects were kept: its records lack the field; the update reads it,
    # and the catalog it leaves knows the redirect.
    server = shared
    server.root, crawled_out = redirect_crawled
    out = tmp_path / "out"
    shutil.copytree(crawled_out, out)
    connection = sqlite3.connect(out / ".tse-pages.sqlite")
    with connection:
        for doc_id, record in connection.execute("SELECT doc_id, record FROM pages").fetchall():
            old = {k: v for k, v in json.loads(record).items() if k != "redirects"}
            connection.execute("UPDATE pages SET record = ? WHERE doc_id = ?", (json.dumps(old), doc_id))
    connection.close()
    result = crawl_site(server, out, DEPTH, "--update")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "0 new, 0 changed, 4 unchanged, 0 gone" in result.stderr.decode()
    connection = sqlite3.connect(out / ".tse-pages.sqlite")
    records = {json.loads(r)["url"]: json.loads(r) for (r,) in connection.execute("SELECT record FROM pages")}
    connection.close()
    assert records[f"{server.url}/sub/"]["redirects"] == [f"{server.url}/sub"]


@pytest.mark.parametrize("target", ["saved", "new", "loop"])
def test_a_known_page_that_redirects_now_is_gone_with_the_redirects_status(tmp_path, shared, three_crawled, target):
    # It said "status": null, "reason": "not reached", though it had answered 301; so did a redirect loop.
    server = shared
    _, out = crawled(shared, three_crawled, tmp_path)
    docs = doc_of(out, server)
    to = {"saved": "b.html", "new": "c.html", "loop": "c.html"}[target]
    server.rules["/a.html"] = Rule(status=301, location=f"/{to}")
    if target == "loop":  # a.html -> c.html -> a.html
        server.rules["/c.html"] = Rule(status=302, location="/a.html")
    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, DEPTH, "--update", "--changes", listed)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert pagedir.gone_docs(out) == {docs["a.html"]}
    entries = {e["url"].removeprefix(server.url + "/"): e for e in changes(listed)}
    assert entries["a.html"] == {
        "docid": docs["a.html"],
        "url": f"{server.url}/a.html",
        "change": "gone",
        "status": 301,
        "reason": "redirect loop" if target == "loop" else f"redirects to {server.url}/{to}",
    }
    if target != "loop":
        assert entries[to]["change"] == ("unchanged" if target == "saved" else "new")
    else:
        assert to not in entries and "1 gone" in result.stderr.decode()


def test_a_page_back_after_being_gone_is_written_again(tmp_path, shared, three_crawled):
    # "1 new ... 0 written": the page back was counted new, and its file not written.
    server = shared
    root, out = crawled(shared, three_crawled, tmp_path)
    docs = doc_of(out, server)
    body = (root / "b.html").read_bytes()
    (root / "b.html").unlink()
    assert crawl_site(server, out, DEPTH, "--update").returncode == 0
    assert pagedir.gone_docs(out) == {docs["b.html"]}
    (root / "b.html").write_bytes(body)
    before = page_file_states(out)
    time.sleep(0.01)  # a file written again gets a later modification time
    result = crawl_site(server, out, DEPTH, "--update")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    err = result.stderr.decode()
    assert "1 new, 0 changed, 2 unchanged, 0 gone" in err
    assert "tse crawl: 3 pages checked, 1 written, " in err
    after = page_file_states(out)
    assert after[docs["b.html"]][3] == before[docs["b.html"]][3]  # the same page
    assert after[docs["b.html"]][1:3] != before[docs["b.html"]][1:3]  # rewritten under its old docID
    assert {doc: state for doc, state in after.items() if doc != docs["b.html"]} == {
        doc: state for doc, state in before.items() if doc != docs["b.html"]
    }
    assert pagedir.gone_docs(out) == set()


OUTPUTS = {"warc": "--warc", "record": "--record", "changes": "--changes"}
NAMES = {"warc": "crawl.warc.gz", "record": "crawl.jsonl", "changes": "changes.jsonl"}


@pytest.mark.parametrize(
    ("stored", "now", "refusal"),
    [
        ({}, {}, None),
        ({"warc": "/a.warc.gz"}, {"warc": "/a.warc.gz"}, None),
        ({"warc": "/a.warc.gz", "record": None}, {"warc": "/a.warc.gz"}, None),
        ({"warc": "/a.warc.gz"}, {}, "--warc was /a.warc.gz and is now not given"),
        ({}, {"warc": "/a.warc.gz"}, "--warc was not given and is now /a.warc.gz"),
        ({"warc": "/a.warc.gz"}, {"warc": "/b.warc.gz"}, "--warc was /a.warc.gz and is now /b.warc.gz"),
        ({"record": "/r.jsonl"}, {}, "--record was /r.jsonl and is now not given"),
        ({"changes": "/c.jsonl"}, {"changes": "/d.jsonl"}, "--changes was /c.jsonl and is now /d.jsonl"),
        ({"warc": "/a.warc.gz", "record": "/r"}, {}, "--warc was"),  # the first that differs
    ],
)
def test_same_outputs(stored, now, refusal):
    if refusal is None:
        check_same_outputs(stored, now)
        return
    with pytest.raises(ArgumentError) as raised:
        check_same_outputs(stored, now)
    assert str(raised.value).startswith(f"cannot resume: {refusal}")


def files_of(directory, taken=None) -> dict:
    """Each file's bytes and modification time in a ``snapshot`` (taken now without *taken*), but
    SQLite's own files beside a database."""
    taken = snapshot(directory) if taken is None else taken
    return {
        name: entry for name, entry in taken.items() if isinstance(entry, tuple) and name[-4:] not in ("-shm", "-wal")
    }


@pytest.fixture(scope="module")
def twelve_crawled(module_server):
    """A site of 12 pages and its whole crawl, once: (the site's root, the page directory).  (Twelve: the
    Ctrl-C comes after 4 requests, 8 pages are left for the resume; 30 before, as many resumed for nothing.)"""
    with tempfile.TemporaryDirectory() as name:
        site = generate_site(Path(name) / "site", pages=12, fanout=3, seed=2)
        module_server.root = site.root
        out = Path(name) / "out"
        out.mkdir()
        done = crawl_site(module_server, out, DEPTH)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        yield site.root, out


@pytest.fixture
def twelve(shared, twelve_crawled, tmp_path):
    """The module's server serving the 12 pages, and an empty page directory."""
    shared.root = twelve_crawled[0]
    out = tmp_path / "out"
    out.mkdir()
    return shared, out


def _interrupted(tmp_path, server, out, update: bool, outputs: dict[str, str], crawled: Path | None = None):
    """Interrupt (Ctrl-C) a crawl, or an update (of a copy of *crawled*, the site's whole crawl), of
    *server*'s site with *outputs*; its arguments."""
    args = ("crawl", f"{server.url}/index.html", out, DEPTH, "--prefix", f"{server.url}/")
    if update:
        out.rmdir()
        shutil.copytree(crawled, out)
        args += ("--update",)
    options = tuple(x for name, path in outputs.items() for x in (OUTPUTS[name], path))
    saved = len(server.hits)
    # (A third of a second between requests: the 12 pages take 4 s, the Ctrl-C comes after 4 requests,
    # looked for every 0.05 s.)
    assert interrupted_crawl((*args, *options), lambda: len(server.hits) - saved, 4, delay=0.3) == 1
    assert (out / ".tse-state.sqlite").is_file()
    return args


@pytest.mark.parametrize(
    ("update", "began_with", "resumed_with"),
    [
        (False, ["warc"], []),
        # (False, [], ["warc"]): in the test of a state that kept no output files, which begins with it
        (False, ["record"], []),
        (False, ["warc", "record"], ["warc"]),
        (True, ["warc", "changes"], ["changes"]),
        (True, ["changes"], []),
        (True, [], ["changes"]),
    ],
)
def test_a_resume_names_the_output_files_its_crawl_began_with(
    tmp_path, twelve, twelve_crawled, update, began_with, resumed_with
):
    # Resumed without --warc, it was accepted: the WARC stayed partial, without its CDXJ.
    server, out = twelve
    files = {name: str(tmp_path / NAMES[name]) for name in OUTPUTS}
    began = {name: files[name] for name in began_with}
    args = _interrupted(tmp_path, server, out, update, began, twelve_crawled[1])
    _refused_then_resumed(tmp_path, server, out, args, began_with, resumed_with)


def _refused_then_resumed(tmp_path, server, out, args, began_with, resumed_with):
    """The interrupted crawl of *args* resumed with *resumed_with*, refused, changes nothing; resumed
    with the output files it *began_with*, it goes on to its end."""
    files = {name: str(tmp_path / NAMES[name]) for name in OUTPUTS}
    before, asked = snapshot(tmp_path), len(server.hits)
    given = tuple(x for name in resumed_with for x in (OUTPUTS[name], files[name]))
    status, stderr = refused_here(*args, "--resume", *given)
    assert status == 2
    differs = next(name for name in OUTPUTS if (name in began_with) != (name in resumed_with))
    was = files[differs] if differs in began_with else "not given"
    now = files[differs] if differs in resumed_with else "not given"
    assert stderr == (
        f"tse crawl: cannot resume: {OUTPUTS[differs]} was {was} and is now {now} "
        "(go on with the output files the crawl began with)\n"
    )
    # Nothing written (SQLite may leave the shared-memory files of its read), nothing fetched.
    assert files_of(tmp_path) == files_of(tmp_path, before) and len(server.hits) == asked
    # With the same files, it goes on; a WARC then has its CDXJ.
    same = tuple(x for name in began_with for x in (OUTPUTS[name], files[name]))
    resumed = subprocess.run(
        [str(BIN / "tse"), *map(str, args), "--resume", *same, "-s", "DOWNLOAD_DELAY=0"],
        capture_output=True,
        env=clean_env(),
        cwd=ROOT,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert not (out / ".tse-state.sqlite").exists()
    assert (tmp_path / "crawl.cdxj").is_file() == ("warc" in began_with)


def test_a_resume_of_a_state_that_kept_no_output_files_is_taken_as_given(tmp_path, twelve):
    # A crawl state made before the output files were kept: the resume goes on as before.
    server, out = twelve
    args = _interrupted(tmp_path, server, out, False, {})
    # As it was written (it began with no output files), it refuses a --warc and goes on without one.
    shutil.copytree(out, tmp_path / "interrupted")
    _refused_then_resumed(tmp_path, server, out, args, [], ["warc"])
    shutil.rmtree(out)
    shutil.copytree(tmp_path / "interrupted", out)
    connection = sqlite3.connect(out / ".tse-state.sqlite")
    with connection:
        assert connection.execute("DELETE FROM meta WHERE key = 'outputs'").rowcount == 1
    connection.close()
    record = tmp_path / "crawl.jsonl"
    resumed = subprocess.run(
        [str(BIN / "tse"), *map(str, args), "--resume", "--record", record, "-s", "DOWNLOAD_DELAY=0"],
        capture_output=True,
        env=clean_env(),
        cwd=ROOT,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert record.is_file()


def test_an_update_given_an_existing_warc_is_told_to_name_a_new_one(tmp_path, serve):
    # It said "(--resume appends)", and --resume of a finished update only says "nothing to resume".
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    warc = tmp_path / "u.warc.gz"
    assert crawl_site(server, out, 1, "--warc", warc).returncode == 0
    for finished in ("crawl", "update"):
        before = snapshot(tmp_path)
        fast = ("--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")
        status, stderr = refused_here("crawl", f"{server.url}/index.html", out, 1, *fast, "--update", "--warc", warc)
        assert status == 2
        assert stderr == (f"tse crawl: --warc: {warc} exists: an update writes a new WARC file: give a new file name\n")
        assert snapshot(tmp_path) == before
        if finished == "crawl":
            os.rename(warc, tmp_path / "first.warc.gz")
            assert crawl_site(server, out, 1, "--update", "--warc", warc).returncode == 0


# The gaps between two Ctrl-C: the second came while Python exited (0.08-0.12 s after the first, on a
# crawl that stops at once) and ended the process by the signal, not with exit 1.  One gap of each kind:
# at once (the crawl stopping), amid that window, and once the last line is written (Python exiting,
# whatever the machine's load; the gaps between, 0.03-0.2 s, landed in one of these).
GAPS = [0.0, 0.1, "after its last line"]


@pytest.mark.parametrize("gap", GAPS)
@pytest.mark.parametrize("program", ["tse", "scrapy"])
def test_a_second_ctrl_c_at_any_moment_exits_1(tmp_path, serve, gap, program):
    site = generate_site(tmp_path / "site", pages=60, fanout=3, seed=9)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    if program == "tse":
        command = [str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(out), "3"]
        command += ["--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0.05"]
    else:
        arguments = [f"seed={server.url}/index.html", f"pagedir={out}", "depth=3", f"prefix={server.url}/"]
        command = [str(BIN / "scrapy"), "crawl", "tse", *(x for a in arguments for x in ("-a", a))]
        command += ["-s", "DOWNLOAD_DELAY=0.05", "-s", "LOG_LEVEL=WARNING"]
    process = popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: len(server.hits) >= 4, 60, "the crawl did not start")
        process.send_signal(signal.SIGINT)
        lines = []
        if gap == "after its last line":
            for line in process.stderr:
                lines.append(line.decode())
                if "go on with" in lines[-1]:
                    break
        else:
            time.sleep(gap)
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        stderr = "".join(lines) + process.communicate(timeout=60)[1].decode()
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, stderr[-3000:]  # docs/robustness.md: "both exit 1"
    assert "Traceback" not in stderr
    assert "the crawl was stopped" in stderr.splitlines()[-1]


def test_an_update_reads_the_catalog_once_as_it_checks_it(tmp_path, shared, three_crawled):
    # (crawlstart read the catalog to check it, then UpdateExtension.setup read it again: 1.5 s each for
    # 100,000 rows.)  The pages read as it is checked, .tse-gone applied, ride in the CrawlStart, which
    # the spider hands to the crawl.
    from tse_scrapy.crawlstart import prepare_crawl

    server = shared
    _, out = crawled(shared, three_crawled, tmp_path)
    (out / ".tse-gone").write_text("2\n")
    arguments = {
        "seed": f"{server.url}/index.html",
        "pagedir": str(out),
        "depth": str(DEPTH),
        "prefix": f"{server.url}/",
    }
    start = prepare_crawl({**arguments, "update": "yes"}, {}.get)
    start.lock.release()
    assert start.pages_before.update
    pages = [(page.doc_id, page.url, page.live) for page in start.pages_before.take()]
    assert pages == [(doc, pagedir.read_page(out, doc).url, doc != 2) for doc in (1, 2, 3)]  # as .tse-gone says
    # And the update goes on from them.
    done = crawl_site(server, out, DEPTH, "--update")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
