"""A full disk, for a command under test: none of its files can grow past a size, or a small file system."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def files_of_at_most(size: int) -> Callable[[], None]:
    """A ``preexec_fn`` after which writing past *size* bytes to any one file fails with EFBIG, as on a
    full disk (SIGXFSZ ignored: the write returns the error instead of killing the process)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@contextlib.contextmanager
def tmpfs(directory: Path, size: int) -> Iterator[Path]:
    """*directory* a file system of its own of *size* bytes (tmpfs) within: a disk that really fills.
    The test is skipped where one cannot be mounted (not root)."""
    directory.mkdir(parents=True, exist_ok=True)
    command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)]
    mounted = subprocess.run(command, capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"no tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=True)


def leave_free(directory: Path, free: int) -> None:
    """Fill the file system of *directory* but *free* bytes (a file ``filler``)."""
    status = os.statvfs(directory)
    with open(directory / "filler", "wb") as filler:
        filler.write(b"\0" * max(0, status.f_bavail * status.f_frsize - free))
