"""Child processes that end with the process that started them, however it ends (``kill -9``
included): Linux's ``PR_SET_PDEATHSIG``, set in the child at once.  Elsewhere nothing is set (the
callers' own ways to notice a parent gone still hold)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

# Linux's prctl option: the signal a process gets when its parent ends (<linux/prctl.h>).
PR_SET_PDEATHSIG = 1

Prctl = Callable[..., int]


def find_prctl() -> Prctl | None:
    """The C library's prctl (found before a fork, not in each child), None where there is none."""
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def end_with_parent(parent: int, prctl: Prctl | None, how: int = signal.SIGKILL) -> None:
    """In a forked child, at once: signal *how* when its parent, *parent*, ends; and now when it has
    ended already (between the fork and here: the child's parent is then another process).  The
    kernel sends it when the *thread* that forked the child ends: fork from the main thread."""
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, how, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), how)
