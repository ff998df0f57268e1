"""``tse`` and ``scrapy`` commands run in the test's own process, for their refusals: a bad argument is
refused before Scrapy starts a crawl (before its reactor is chosen, a page asked for), so what the
command writes and its exit status are those of the real command, without a process start (0.5-1 s of
CPU each).  The command under test where a test is about it being a process stays one (run_tse)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

from tests.conftest import ROOT
from tse_scrapy import cli


def _run(program: str, call, args: list[str]) -> subprocess.CompletedProcess:
    err, out = io.StringIO(), io.StringIO()
    environ, path = dict(os.environ), list(sys.path)
    try:
        with contextlib.chdir(ROOT), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                status = call(args)
            except SystemExit as leaving:  # argparse's errors, scrapy's exits
                code = leaving.code
                status = code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        # (Scrapy's get_project_settings sets SCRAPY_SETTINGS_MODULE and puts the project on sys.path.)
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = path
    return subprocess.CompletedProcess([program, *args], status, out.getvalue().encode(), err.getvalue().encode())


def tse_here(*args) -> subprocess.CompletedProcess:
    """``tse ARGS`` run by ``cli.main`` in this process: a CompletedProcess as run_tse's."""
    return _run("tse", cli.main, [str(arg) for arg in args])


def scrapy_here(*args) -> subprocess.CompletedProcess:
    """``scrapy ARGS`` run by ``scrapy.cmdline.execute`` in this process: a CompletedProcess as run_scrapy's."""
    from scrapy.cmdline import execute

    return _run("scrapy", lambda argv: execute(["scrapy", *argv]), [str(arg) for arg in args])
