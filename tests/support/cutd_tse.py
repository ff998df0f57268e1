"""`tse ARGS` in the test's own process (helper module of the cutD round): for a set-up step (the index a
test reads, built as `tse index` builds it) whose being a process proves nothing: the command's code
without its start-up (~0.45 s of CPU a `tse index`)."""

from __future__ import annotations

import contextlib
import io
import locale
import subprocess
import sys

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


def tse_result_here(*args, input: bytes | None = None) -> subprocess.CompletedProcess:
    """`tse ARGS` through ``cli.main`` in this process, for a refusal (or an acceptance, or an oracle's
    answers) whose message is what a test checks (its exit status, argparse's too, and what it wrote), as
    ``run_tse`` gives it: stdout and stderr bytes.  *input*: its stdin (the process's text streams, in the
    locale's encoding, as a started process has them)."""
    err = io.StringIO()
    stdout = io.TextIOWrapper(io.BytesIO(), encoding=locale.getencoding(), newline="\n")
    stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding=locale.getencoding())
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout), _stdin(stdin):
        try:
            code = cli.main([str(arg) for arg in args])
        except SystemExit as exit:  # (argparse's refusals)
            code = exit.code
        stdout.flush()
    return subprocess.CompletedProcess(args, code, stdout.buffer.getvalue(), err.getvalue().encode())


@contextlib.contextmanager
def _stdin(stream):
    saved = sys.stdin
    sys.stdin = stream
    try:
        yield
    finally:
        sys.stdin = saved
