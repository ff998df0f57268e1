"""A small site written by a test, served by a real nginx (the ``nginx`` fixture), crawled with
``tse crawl`` and queried with ``tse query``: what the encoding and robots-directive tests share."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.conftest import BIN, ROOT, clean_env, crawl_site, popen, run_tse
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import SiteServer


def crawl_served_site(
    nginx: Callable[..., Any], tmp_path: Path, write_site: Callable[[Path], Any], locations: str, depth: int, *options
) -> tuple[Any, Path, Any]:
    """Write the site (*write_site* into a directory), serve it with nginx's extra *locations*, crawl it
    from /index.html to *depth* with no delay and *options*; (the server, the page directory, what
    *write_site* returned)."""
    site = tmp_path / "site"
    site.mkdir()
    written = write_site(site)
    server = nginx(tmp_path / "hosts", origin=site, locations=locations)
    pages = tmp_path / "pages"
    pages.mkdir()
    args = ("crawl", f"{server.url}/index.html", pages, depth, "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")
    done = run_tse(*args, *options)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return server, pages, written


def query_answers(pages: Path, index: Path, queries: list[str], rank: str) -> list[list[tuple[int, str]]]:
    """``tse query``'s answers to each of *queries* (one line each), in their order: (docID, URL) each."""
    return answers_of(run_tse("query", pages, index, "--rank", rank, input=query_lines(queries)))


def query_lines(queries: list[str]) -> bytes:
    return "".join(q + "\n" for q in queries).encode()


def answers_of(result: subprocess.CompletedProcess) -> list[list[tuple[int, str]]]:
    """The answers a ``tse query`` that exited 0 printed, a list a query: (docID, URL) each."""
    assert result.returncode == 0, result.stderr.decode()
    blocks = result.stdout.decode().split("Query: ")[1:]
    return [[(int(doc), url) for doc, url in re.findall(r"doc +(\d+): (\S+)", block)] for block in blocks]


@contextlib.contextmanager
def validated_two_page_crawl(root: Path) -> Iterator[tuple[SiteServer, Path]]:
    """A two-page site (index.html links a.html) written under *root* and served, and its crawl with
    the catalog (depth 1) in *root*/crawled: (the server, the page directory), while the server runs."""
    site = write_site(root / "site", {"index.html": ["a.html"], "a.html": []})
    out = root / "crawled"
    out.mkdir()
    with SiteServer(site.root) as server:
        assert crawl_site(server, out, 1, "--validators").returncode == 0
        yield server, out


def interrupted_crawl(args: tuple, saved: Callable[[], int], count: int, delay: float = 0.3) -> int:
    """Run ``tse ARGS`` with *delay* seconds between requests and interrupt it (Ctrl-C) once *saved*()
    says *count* pages are saved; its exit status.  (0.3 s: the Ctrl-C, looked for every 0.05 s, lands
    long before the next page is asked for, however loaded the machine, and a crawl of the five pages
    the callers interrupt at two no longer takes seconds.)"""
    process = popen(
        [str(BIN / "tse"), *map(str, args), "-s", f"DOWNLOAD_DELAY={delay}"],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while saved() < count and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    return process.returncode
