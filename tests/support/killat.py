"""Run ``tse`` and SIGKILL it at an exact instant of its life: the Nth time it opens, renames or
removes a given file (Python's audit events, ``sys.addaudithook``).

    python -m tests.support.killat EVENT PATH N -- crawl SEED PAGEDIR DEPTH ...

EVENT is an audit event whose first argument is a path: ``open`` (``open`` and ``os.open``),
``os.rename`` (also ``os.replace``), ``os.remove``, ``sqlite3.connect``.  The process kills itself
with SIGKILL just before the Nth EVENT on PATH (compared as the event gives it, from whichever
thread).  Nothing else differs from the ``tse`` command: the same ``tse_scrapy.cli.main`` runs, on
real files and a real server, and the kill is the real signal: nothing is cleaned up.

``python -m tests.support.killat --trace -- crawl ...`` prints each of these events on stderr as
``killat: EVENT PATH``, in order: the instants a test may kill at.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

EVENTS = ("open", "os.rename", "os.remove", "sqlite3.connect")


def _path(args: tuple) -> str | None:
    if not args:
        return None
    first = args[0]
    if isinstance(first, bytes):
        return first.decode("utf-8", "replace")
    if isinstance(first, str) or hasattr(first, "__fspath__"):
        return os.fsdecode(os.fspath(first))
    return None  # an open() of a file descriptor


def install(event: str, target: str, nth: int) -> None:
    """Kill this process with SIGKILL at the *nth* *event* on the path *target*."""
    seen = 0
    lock = threading.Lock()

    def hook(name: str, args: tuple) -> None:
        nonlocal seen
        if name != event or _path(args) != target:
            return
        with lock:
            seen += 1
            if seen == nth:
                os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)


def trace() -> None:
    """Print every event of EVENTS with its path on stderr."""

    def hook(name: str, args: tuple) -> None:
        if name in EVENTS:
            path = _path(args)
            if path is not None:
                os.write(2, f"killat: {name} {path}\n".encode())

    sys.addaudithook(hook)


def run_tse_until(spec: list[str], arguments: list[str]) -> subprocess.CompletedProcess:
    """Run ``tse ARGUMENTS`` under this module, as *spec* says (``[EVENT, PATH, N]`` or ``["--trace"]``)."""
    from tests.conftest import ROOT, clean_env

    command = [sys.executable, "-m", "tests.support.killat", *spec, "--", *arguments]
    return subprocess.run(command, capture_output=True, env=clean_env(), cwd=ROOT, timeout=120)


def traced_events(stderr: bytes, directory: Path) -> list[tuple[str, str]]:
    """(event, path) of each ``--trace`` line about a file in *directory*, which is written ``RUN``."""
    events = []
    for line in stderr.decode().splitlines():
        event, _, path = line.removeprefix("killat: ").partition(" ")
        if line.startswith("killat: ") and str(directory) in path:
            events.append((event, path.replace(str(directory), "RUN")))
    return events


def main(argv: list[str]) -> int:
    separator = argv.index("--")
    spec, tse_arguments = argv[:separator], argv[separator + 1 :]
    if spec == ["--trace"]:
        trace()
    else:
        event, target, nth = spec
        install(event, target, int(nth))
    from tse_scrapy.cli import main as tse_main

    return tse_main(tse_arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
