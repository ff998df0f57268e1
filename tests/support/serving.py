"""A real ``tse serve`` on a free loopback port, for the tests that talk to one over HTTP."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.conftest import popen
from tests.support.net import free_port
from tests.support.wait import wait_until, while_running

# A server's processes look for an index written anew, or a new gone list, every 0.25 s, not every second
# (served.CHECK_SECONDS): the tests that wait for them to take the files, or to have looked and done
# nothing, wait a quarter as long.  (Not where tse index writes the files: its renames, moments apart on
# a loaded machine, are then more often seen halfway and settled.)
QUICK_LOOKS = {"TSE_SERVE_CHECK_SECONDS": "0.25"}


@dataclass
class ServeRun:
    """The server's base URL and process; ``stderr`` once it has stopped."""

    base: str
    process: subprocess.Popen
    stderr: str = ""


@contextmanager
def tse_serve(command: list[str], env: dict, cwd: Path) -> Iterator[ServeRun]:
    """Run *command* (``tse serve PAGEDIR INDEXFILE``) on a free port until /healthz answers;
    stop it with Ctrl-C on leaving."""
    port = free_port()
    process = popen([*command, "--port", str(port)], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run = ServeRun(f"http://127.0.0.1:{port}", process)

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{run.base}/healthz", timeout=2) as response:
                return response.read() == b"ok"
        except OSError:
            return False

    try:
        wait_until(while_running(process, answers, "answering /healthz"), 30, "tse serve never answered")
        yield run
    finally:
        process.send_signal(signal.SIGINT)
        run.stderr = process.communicate(timeout=30)[1].decode()


def every_worker_opened(server_pid: int, index: Path | str) -> bool:
    """Whether each worker process of the server *server_pid* has the document store at *index*.docs
    open, and none still one renamed over ("(deleted)" in /proc): each has opened that index.  /healthz
    answers once one worker serves; on a loaded machine another may not have opened the index yet (a
    test that then moves the index away leaves it waiting for one: CI's failures of test_serve_reload)."""
    workers = psutil.Process(server_pid).children()
    if not workers:
        return False
    for worker in workers:
        links = set()
        for descriptor in os.listdir(f"/proc/{worker.pid}/fd"):
            with contextlib.suppress(OSError):
                links.add(os.readlink(f"/proc/{worker.pid}/fd/{descriptor}"))
        if f"{index}.docs" not in links or f"{index}.docs (deleted)" in links:
            return False
    return True
