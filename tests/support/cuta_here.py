"""``tse ARGS`` run in the test's own process (``tse_scrapy.cli.main``): for what the command says and
does before Scrapy is imported (a refusal in one line, exit 2; "nothing to resume", exit 0), the very
code the ``tse`` process runs, without a Python start.  The crawls themselves stay real processes."""

from __future__ import annotations

import contextlib
import io
import subprocess

from tse_scrapy import cli


def tse_here(*args) -> subprocess.CompletedProcess:
    """``tse ARGS`` in this process, its result as ``run_tse``'s (returncode, stdout and stderr bytes)."""
    arguments = [str(arg) for arg in args]
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        status = cli.main(arguments)
    return subprocess.CompletedProcess(["tse", *arguments], status, out.getvalue().encode(), err.getvalue().encode())


def crawl_here(server, out, depth, *options, seed="index.html") -> subprocess.CompletedProcess:
    """``crawl_site``'s ``tse crawl`` (a local test site, no delay), in this process: for its refusals and
    its "nothing to resume" only (the crawl itself is Scrapy's, in a process of its own)."""
    fast = ("--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")
    return tse_here("crawl", f"{server.url}/{seed}", out, depth, *fast, *options)
