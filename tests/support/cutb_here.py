"""``tse ARGS`` run in the test's own process (``tse_scrapy.cli.main``): the command's code without a
Python start-up.  For a test's set-up (the index a query reads) and for refusals whose message is what
the test is about; a command whose process is what a test is about stays a real process (run_tse)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from pathlib import Path
from unittest import mock

from tse_scrapy import cli


def tse_here(*args, stdin: str = "", env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``tse ARGS`` in this process: its exit status, stdout and stderr (bytes, as ``run_tse`` gives them),
    with *stdin* as its standard input and, with *env*, that environment instead of this process's; run in
    *cwd* if given (this process's folder put back after)."""
    err, out = io.StringIO(), io.StringIO()
    saved_cwd = os.getcwd()
    environ = mock.patch.dict(os.environ, env, clear=True) if env is not None else contextlib.nullcontext()
    stdin_ = mock.patch("sys.stdin", io.StringIO(stdin))
    with environ, stdin_, contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            if cwd is not None:
                os.chdir(cwd)
            status = cli.main([str(arg) for arg in args])
        except SystemExit as exit_:  # argparse's refusals
            status = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            os.chdir(saved_cwd)
    return subprocess.CompletedProcess(
        ["tse", *map(str, args)], status, out.getvalue().encode(), err.getvalue().encode()
    )


def query_answers_here(pages: Path, index: Path, queries: list[str], rank: str) -> list[list[tuple[int, str]]]:
    """``tse query``'s answers (run in this process) to each of *queries*, in their order: (docID, URL) each."""
    result = tse_here("query", pages, index, "--rank", rank, stdin="".join(q + "\n" for q in queries))
    assert result.returncode == 0, result.stderr.decode()
    blocks = result.stdout.decode().split("Query: ")[1:]
    return [[(int(doc), url) for doc, url in re.findall(r"doc +(\d+): (\S+)", block)] for block in blocks]
