"""`make run`'s demo removes only an earlier demo crawl, never a user's directory; `make serve` serves
the demo site again where it was crawled, beside the search."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, run_tse
from tests.support.net import free_port
from tests.support.pages import write_pages
from tests.support.wait import wait_until
from tse_scrapy.devtools.demo import SITE, is_demo_crawl, remove_index, site_server


def run_demo(pagedir):
    return subprocess.run(
        [sys.executable, "-m", "tse_scrapy.devtools.demo", str(pagedir)],
        capture_output=True, env=clean_env(), cwd=ROOT, timeout=60,
    )  # fmt: skip


def page(directory, doc_id, url):
    (directory / str(doc_id)).write_bytes(f"{url}\n0\n<html></html>\n".encode())


@pytest.fixture
def demo_crawl(tmp_path):
    directory = tmp_path / "demo"
    directory.mkdir()
    (directory / ".crawler").touch()
    page(directory, 1, "http://127.0.0.1:40123/index.html")
    page(directory, 2, "http://127.0.0.1:40123/projects/crawler.html")
    return directory


def test_an_earlier_demo_crawl_is_recognized(demo_crawl):
    assert is_demo_crawl(demo_crawl)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: page(d, 3, "http://cs50tse.cs.dartmouth.edu/tse/letters/index.html"),  # another site
        lambda d: page(d, 3, "http://127.0.0.1:40123/not-in-the-demo.html"),  # another local site
        lambda d: (d / "notes.txt").write_text("mine"),  # a file of the user's
        lambda d: (d / "0").write_text("mine"),  # digits, but no page's name (pages are 1, 2, 3 ...)
        lambda d: page(d, "01", "http://127.0.0.1:40123/index.html"),  # not page 1's name
        lambda d: (d / ".crawler").unlink(),  # not a page directory
    ],
)
def test_anything_else_is_refused_and_left_alone(demo_crawl, change):
    change(demo_crawl)
    before = {name: (demo_crawl / name).read_bytes() for name in os.listdir(demo_crawl)}
    assert not is_demo_crawl(demo_crawl)
    result = run_demo(demo_crawl)
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().splitlines() == [
        f"demo: {demo_crawl} is not an earlier demo crawl: give a new or empty directory"
    ]
    assert {name: (demo_crawl / name).read_bytes() for name in os.listdir(demo_crawl)} == before


def test_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("mine")
    assert run_demo(tmp_path / "file").returncode == 2
    assert (tmp_path / "file").read_text() == "mine"


def test_the_earlier_demos_index_goes_whole_and_nothing_else(tmp_path):
    """Every file a real tse index wrote beside INDEXFILE, and what a killed one leaves (its temporary
    copies, a directory of runs), are removed; a user's files of like names are not."""
    pagedir = write_pages(tmp_path / "demo", {1: ("http://127.0.0.1:40123/index.html", 0, b"<title>demo</title>")})
    assert run_tse("index", pagedir, tmp_path / "demo.index").returncode == 0
    written = set(os.listdir(tmp_path)) - {"demo"}
    assert {"demo.index", "demo.index.search", "demo.index.stamp", "demo.index.lock"} <= written, written
    killed = [
        ".demo.index.partial",
        ".demo.index.bin.partial",
        ".demo.index.docs.partial",
        ".demo.index.search.partial",
    ]
    for name in killed:
        (tmp_path / name).write_bytes(b"half")
    (tmp_path / ".demo.index.k3_9xq2a.runs").mkdir()
    (tmp_path / ".demo.index.k3_9xq2a.runs" / "run.0").write_bytes(b"runs")
    users = [
        "demo.index.txt",
        "demo.indexes",
        "other.index",
        "other.index.search",
        ".demo.index.notes",
        "demo.index.bak",
    ]
    for name in users:
        (tmp_path / name).write_text("mine")
    remove_index(tmp_path / "demo.index")
    assert sorted(os.listdir(tmp_path)) == sorted(["demo", *users])
    assert os.listdir(pagedir)  # the crawl is not the index's to remove


# make serve: the demo crawl searched, its site served again where it was crawled (a site served on a
# random port and closed with the crawl left every result's link dead).


@pytest.fixture(scope="module")
def indexed_demo_crawl(tmp_path_factory):
    """A demo crawl as make run leaves it (three of the site's pages, crawled from a port that is free
    now), indexed; and that port."""
    port = free_port()
    names = ("index.html", "about.html", "projects/crawler.html")
    pagedir = write_pages(
        tmp_path_factory.mktemp("demo") / "demo",
        {n: (f"http://127.0.0.1:{port}/{name}", 0, (SITE / name).read_bytes()) for n, name in enumerate(names, 1)},
    )
    assert run_tse("index", pagedir, f"{pagedir}.index").returncode == 0
    return pagedir, port


def start_demo_serve(pagedir, search_port):
    """make serve's command, on *search_port*; once tse serve answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tse_scrapy.devtools.demo", "--serve", str(pagedir), "--port", str(search_port)],
        stderr=subprocess.PIPE, env=clean_env(), cwd=pagedir.parent,
    )  # fmt: skip
    said = []
    for line in process.stderr:  # its lines until tse serve says it answers (or it ends)
        said.append(line.decode())
        if line.startswith(b"tse serve: searching"):
            break
    return process, said


def get(url):
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.status, answer.read()


def refused(url):
    try:
        get(url)
    except urllib.error.URLError as error:
        return isinstance(error.reason, ConnectionRefusedError)
    return False


def test_make_serve_serves_the_demo_site_where_it_was_crawled(indexed_demo_crawl):
    pagedir, site_port = indexed_demo_crawl
    search_port = free_port()
    process, said = start_demo_serve(pagedir, search_port)
    try:
        assert said == [
            f"demo: the demo site on http://127.0.0.1:{site_port}/, where it was crawled\n",
            f"tse serve: searching {pagedir} on http://127.0.0.1:{search_port}/ (Ctrl-C to stop)\n",
        ]
        status, body = get(f"http://127.0.0.1:{search_port}/api/search?q=crawler")
        assert status == 200
        links = [result["url"] for result in json.loads(body)["results"]]
        assert f"http://127.0.0.1:{site_port}/projects/crawler.html" in links
        for link in links:  # each result's link opens the page the crawl saved
            name = link.removeprefix(f"http://127.0.0.1:{site_port}/")
            assert get(link) == (200, (SITE / name).read_bytes())
    finally:
        process.terminate()
        assert process.wait(timeout=20) == 0
    # Both stopped together: neither port answers any more.
    assert refused(f"http://127.0.0.1:{site_port}/index.html")
    assert refused(f"http://127.0.0.1:{search_port}/")


def test_make_serve_says_when_the_site_port_is_taken_and_searches_still(indexed_demo_crawl):
    pagedir, site_port = indexed_demo_crawl
    search_port = free_port()
    with socket.create_server(("127.0.0.1", site_port)):  # another program on the site's port
        process, said = start_demo_serve(pagedir, search_port)
        try:
            assert said == [
                f"demo: port {site_port} is taken (Address already in use): the results' links will not open\n",
                f"tse serve: searching {pagedir} on http://127.0.0.1:{search_port}/ (Ctrl-C to stop)\n",
            ]
            assert get(f"http://127.0.0.1:{search_port}/api/search?q=crawler")[0] == 200
        finally:
            process.terminate()
            assert process.wait(timeout=20) == 0


def port_refuses(port):
    """Whether nothing listens on *port* any more (a connection made, or reset as a server stops, is not)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        pass
    return False


def test_make_serve_killed_takes_tse_serve_and_the_site_with_it(indexed_demo_crawl):
    """SIGKILL of the wrapper (no handler runs): tse serve, in a process group of its own, went on
    holding its port; it now dies with its parent, and the site's port is freed with the wrapper."""
    pagedir, site_port = indexed_demo_crawl
    search_port = free_port()
    process, said = start_demo_serve(pagedir, search_port)
    children: list[str] = []
    try:
        assert said[-1].startswith("tse serve: searching"), said
        assert get(f"http://127.0.0.1:{site_port}/index.html")[0] == 200
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        process.kill()
        process.wait(timeout=10)
        wait_until(
            lambda: port_refuses(site_port) and port_refuses(search_port), 10, "a port is held 10 s after the kill", 0.1
        )
    finally:
        process.stderr.close()
        if process.poll() is None:
            process.kill()
        for child in children:  # (the failure's: tse serve left running, ended as Ctrl-C ends it)
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), signal.SIGINT)


def test_make_serve_without_the_demo_crawl_says_so(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tse_scrapy.devtools.demo", "--serve", str(tmp_path / "demo")],
        capture_output=True, env=clean_env(), cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().splitlines() == [
        f"demo: no demo crawl in {tmp_path / 'demo'} with its index {tmp_path / 'demo.index'}: run make run first"
    ]


def test_make_run_serves_the_site_on_its_port_or_says_which_instead(capsys):
    port = free_port()
    with site_server(port) as server:
        assert server.port == port and get(f"{server.url}/about.html") == (200, (SITE / "about.html").read_bytes())
        assert capsys.readouterr().err == ""
        with site_server(port) as instead:
            assert instead.port != port
            assert get(f"{instead.url}/about.html") == (200, (SITE / "about.html").read_bytes())
    assert capsys.readouterr().err == (
        f"demo: port {port} is taken (Address already in use): the demo site is on {instead.port} instead"
        " (make serve serves it there again)\n"
    )


def test_the_earlier_demos_index_is_left_while_a_tse_index_of_it_runs(tmp_path):
    """Its runs and lock went from under a running tse index (a review's find): refused, nothing removed."""
    from tse_scrapy.index.indexlock import IndexLocked, index_lock

    pagedir = write_pages(tmp_path / "demo", {1: ("http://127.0.0.1:40123/index.html", 0, b"<title>demo</title>")})
    assert run_tse("index", pagedir, tmp_path / "demo.index").returncode == 0
    (tmp_path / ".demo.index.k3_9xq2a.runs").mkdir()  # a running build's runs
    before = sorted(os.listdir(tmp_path))
    with index_lock(tmp_path / "demo.index"), pytest.raises(IndexLocked):
        remove_index(tmp_path / "demo.index")
    assert sorted(os.listdir(tmp_path)) == before
