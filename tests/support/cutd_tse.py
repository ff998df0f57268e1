"""`tse ARGS` in the test's own process (helper module of the cutD round): for a set-up step (the index a
test reads, built as `tse index` builds it) whose being a process proves nothing: the command's code
without its start-up (~0.45 s of CPU a `tse index`)."""

from __future__ import annotations

import contextlib
import io
import subprocess

from tse_scrapy import cli


def tse_here(*args) -> str:
    """`tse ARGS` through ``cli.main`` in this process: it must exit 0 and write nothing to stdout; what
    it wrote to stderr."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main([str(arg) for arg in args])
    assert code == 0, err.getvalue()
    assert out.getvalue() == "", out.getvalue()
    return err.getvalue()


def tse_result_here(*args) -> subprocess.CompletedProcess:
    """`tse ARGS` through ``cli.main`` in this process, for a refusal (or an acceptance) whose message is
    what a test checks (its exit status, argparse's too, and what it wrote), as ``run_tse`` gives it:
    stdout and stderr bytes."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = cli.main([str(arg) for arg in args])
        except SystemExit as exit:  # (argparse's refusals)
            code = exit.code
    return subprocess.CompletedProcess(args, code, out.getvalue().encode(), err.getvalue().encode())
