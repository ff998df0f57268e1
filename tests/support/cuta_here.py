"""``tse ARGS`` run in the test's own process (``tse_scrapy.cli.main``): for what the command says and
does before Scrapy is imported (a refusal in one line, exit 2; "nothing to resume", exit 0), the very
code the ``tse`` process runs, without a Python start.  And ``tse index`` and ``tse query`` where a test
reads an index to see what a crawl wrote.  The crawls themselves stay real processes."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys

from tse_scrapy import cli


def tse_here(*args, input: bytes = b"") -> subprocess.CompletedProcess:
    """``tse ARGS`` in this process, reading *input*, its result as ``run_tse``'s (returncode, stdout and
    stderr bytes)."""
    arguments = [str(arg) for arg in args]
    err, out = io.StringIO(), io.StringIO()
    stdin, sys.stdin = sys.stdin, io.TextIOWrapper(io.BytesIO(input), encoding="utf-8")
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status = cli.main(arguments)
    finally:
        sys.stdin = stdin
    return subprocess.CompletedProcess(["tse", *arguments], status, out.getvalue().encode(), err.getvalue().encode())


def query_here(pages, index, queries: list[str], rank: str) -> list[list[tuple[int, str]]]:
    """tests/support/sitecrawl.py's ``query_answers`` (``tse query``'s answers to each of *queries*:
    (docID, URL) each), ``tse query`` run in this process: for a test that reads an index, not one
    about the query command."""
    result = tse_here("query", pages, index, "--rank", rank, input="".join(q + "\n" for q in queries).encode())
    assert result.returncode == 0, result.stderr.decode()
    blocks = result.stdout.decode().split("Query: ")[1:]
    return [[(int(doc), url) for doc, url in re.findall(r"doc +(\d+): (\S+)", block)] for block in blocks]


def crawl_here(server, out, depth, *options, seed="index.html") -> subprocess.CompletedProcess:
    """``crawl_site``'s ``tse crawl`` (a local test site, no delay), in this process: for its refusals and
    its "nothing to resume" only (the crawl itself is Scrapy's, in a process of its own)."""
    fast = ("--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")
    return tse_here("crawl", f"{server.url}/{seed}", out, depth, *fast, *options)
