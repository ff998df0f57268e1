"""A full disk, for a command under test: none of its files can grow past a size."""

from __future__ import annotations

import resource
import signal
from collections.abc import Callable


def files_of_at_most(size: int) -> Callable[[], None]:
    """A ``preexec_fn`` after which writing past *size* bytes to any one file fails with EFBIG, as on a
    full disk (SIGXFSZ ignored: the write returns the error instead of killing the process)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit
