"""``tse`` and ``scrapy`` commands run in the test's own process (``tse_scrapy.cli.main``,
``scrapy.cmdline.execute``): the command's code without a Python start (0.3-1 s of CPU each).

For what a command says and does before Scrapy starts a crawl (a refusal in one line and its exit
status, "nothing to resume"), and for a test's set-up or oracle (the index a query reads, the answers
compared with): where being a process proves nothing.  A command whose being a process is what a test
is about (its exit code as a process, signals, a crawl) stays one (``run_tse``, ``run_scrapy``)."""

from __future__ import annotations

import contextlib
import io
import locale
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.conftest import ROOT, put_signal_actions_back, site_crawl_args
from tests.support.sitecrawl import answers_of, query_lines
from tse_scrapy import cli


@contextlib.contextmanager
def _process_state(env: dict | None, cwd: Path | None) -> Iterator[None]:
    """Within: *env* as the whole environment (if given), *cwd* as the folder; after, the environment,
    ``sys.path``, the folder and the signal actions put back (Scrapy's project settings set
    SCRAPY_SETTINGS_MODULE and add the project to ``sys.path``)."""
    environ, path, folder = dict(os.environ), list(sys.path), os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd if cwd is not None else folder)
        yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = path
        os.chdir(folder)
        put_signal_actions_back()  # (tse index leaves SIGTERM ignored: the processes started later inherit it)


def _run(
    program: str,
    call: Callable[[list[str]], int | None],
    args: tuple,
    input: bytes,
    env: dict | None,
    cwd: Path | None,
) -> subprocess.CompletedProcess:
    arguments = [str(arg) for arg in args]
    # The text streams a started process has: in the locale's encoding, with a byte buffer beneath.
    encoding = locale.getencoding()
    stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding, newline="\n", write_through=True)
    stderr = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="backslashreplace", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO(input), encoding=encoding)
    saved_stdin = sys.stdin
    try:
        sys.stdin = stdin
        with _process_state(env, cwd), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                status = call(arguments)
            except SystemExit as leaving:  # argparse's refusals, scrapy's exits
                code = leaving.code
                status = code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.stdin = saved_stdin
    return subprocess.CompletedProcess(
        [program, *arguments], status or 0, stdout.buffer.getvalue(), stderr.buffer.getvalue()
    )


def tse_here(
    *args, input: bytes = b"", env: dict | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """``tse ARGS`` in this process, reading *input*, with *env* as its whole environment and in *cwd*
    if given: a CompletedProcess as ``run_tse`` gives it (exit status, stdout and stderr bytes)."""
    return _run("tse", cli.main, args, input, env, cwd)


def scrapy_here(*args) -> subprocess.CompletedProcess:
    """``scrapy ARGS`` in this process, in the project's folder: a CompletedProcess as ``run_scrapy``'s."""
    from scrapy.cmdline import execute

    return _run("scrapy", lambda argv: execute(["scrapy", *argv]), args, b"", None, ROOT)


def tse_ok_here(*args) -> str:
    """``tse ARGS`` in this process, for a set-up step (an index a test reads): it must exit 0 and write
    nothing on stdout; what it wrote on stderr."""
    done = tse_here(*args)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"", done.stdout.decode()
    return done.stderr.decode()


def query_here(pages, index, queries: list[str], rank: str) -> list[list[tuple[int, str]]]:
    """``tse query``'s answers (in this process) to each of *queries*, in their order: (docID, URL) each;
    for a test that reads an index, not one about the query command."""
    return answers_of(tse_here("query", pages, index, "--rank", rank, input=query_lines(queries)))


def crawl_here(server, out, depth, *options, seed="index.html") -> subprocess.CompletedProcess:
    """``crawl_site``'s ``tse crawl`` (a local test site, no delay) in this process: for its refusals and
    its "nothing to resume" only (a crawl itself is Scrapy's, in a process of its own)."""
    return tse_here(*site_crawl_args(server, out, depth, seed), *options)
