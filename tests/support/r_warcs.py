"""tests/support/warcs.py's ``assert_valid`` and ``assert_index_points_at_records``, the very same
checks, with the two programs they run (``warcio check`` and ``cdxj-indexer``) run in this process:
the same ``main`` of each, given the same arguments, its output and exit status taken as the
command's.  For a loop that checks many WARCs, each check then costs no Python start (about 0.5 s
of CPU for the two)."""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path
from unittest import mock

from tests.support import warcs


class _InProcess:
    """Stands in for the ``subprocess`` module in tests/support/warcs.py: ``run`` of warcio or
    cdxj-indexer calls that program's ``main`` here."""

    @staticmethod
    def run(command, capture_output=True, timeout=None) -> subprocess.CompletedProcess:
        program = Path(command[0]).name
        if program == "warcio":
            from warcio.cli import main
        elif program == "cdxj-indexer":
            from cdxj_indexer.main import main
        else:
            raise AssertionError(f"not a program run here: {command}")
        out, err = io.StringIO(), io.StringIO()
        status = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(argument) for argument in command[1:]])
            except SystemExit as exit:
                status = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        return subprocess.CompletedProcess(command, status, out.getvalue().encode(), err.getvalue().encode())


def assert_valid(path):
    with mock.patch.object(warcs, "subprocess", _InProcess):
        return warcs.assert_valid(path)


def assert_index_points_at_records(warc):
    with mock.patch.object(warcs, "subprocess", _InProcess):
        return warcs.assert_index_points_at_records(warc)
