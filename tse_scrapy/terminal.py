"""A status line kept at the bottom of the terminal, with everything else scrolling above it.

Drawn by tqdm on stderr.  While it is shown, whatever else goes to that
terminal (the progress log on stdout when stdout is the same terminal, the
log, other lines on stderr) is written above it: the line is cleared, the
text written and flushed, the line drawn again.  Output that does not go to
the terminal (stdout redirected to a file) is left alone, byte for byte.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any, TextIO


def is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def same_terminal(one: Any, other: Any) -> bool:
    """True when both streams are terminals and the same one."""
    if not (is_terminal(one) and is_terminal(other)):
        return False
    try:
        return os.path.samestat(os.fstat(one.fileno()), os.fstat(other.fileno()))
    except (AttributeError, ValueError, OSError):
        return False


def columns(stream: Any) -> int:
    """The terminal's width, 0 when it does not say."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


# The locale categories that say a terminal's character set, the first one set deciding (POSIX's order).
LOCALE_VARIABLES = ("LC_ALL", "LC_CTYPE", "LANG")


def locale_is_ascii(environ: Mapping[str, str], utf8_mode: bool) -> bool:
    """True when the locale says the terminal shows ASCII only: C, POSIX or none (``LC_ALL``, else
    ``LC_CTYPE``, else ``LANG``), unless ``PYTHONIOENCODING`` says how the output is encoded (then the
    stream's encoding decides).  Python itself writes UTF-8 in such a locale: it turns its UTF-8 mode on
    (*utf8_mode*: ``utf8_mode_of_a_c_locale``, without ``PYTHONUTF8``), and, without LC_ALL, sets
    ``LC_CTYPE=C.UTF-8`` in its own environment, so the stream's encoding says UTF-8 where the terminal
    may not show it."""
    if environ.get("PYTHONIOENCODING"):
        return False
    if utf8_mode and not environ.get("PYTHONUTF8"):
        return True  # (the locale was C or POSIX when Python started, whatever it says now)
    locale = next((environ[name] for name in LOCALE_VARIABLES if environ.get(name)), "")
    return locale in ("", "C", "POSIX")


def utf8_mode_of_a_c_locale() -> bool:
    """Whether Python's UTF-8 mode is on because the locale was C or POSIX when it started: on, and not
    asked for (``-X utf8``; ``PYTHONUTF8`` is ``locale_is_ascii``'s to read).  From Python 3.15 the
    mode is on by default (PEP 686), whatever the locale: it then says nothing of it."""
    return bool(sys.flags.utf8_mode) and "utf8" not in sys._xoptions and sys.version_info < (3, 15)


def at_least_sign(stream: Any, environ: Mapping[str, str] | None = None, utf8_mode: bool | None = None) -> str:
    """``≥`` where the terminal can show it, else ``>=``: its locale (*environ*, os.environ by default) is
    not C or POSIX (``locale_is_ascii``), and *stream*'s encoding has the sign."""
    environ = os.environ if environ is None else environ
    utf8_mode = utf8_mode_of_a_c_locale() if utf8_mode is None else utf8_mode
    if locale_is_ascii(environ, utf8_mode):
        return ">="
    try:
        "\u2265".encode(getattr(stream, "encoding", None) or "ascii")
    except (LookupError, UnicodeEncodeError):
        return ">="
    return "\u2265"


class StatusLine:
    """One line at the bottom of *terminal* (a tty stream); see the module's docstring."""

    def __init__(self, terminal: TextIO):
        from tqdm import tqdm

        self.terminal = terminal
        self.lock = threading.RLock()
        # A terminal that reports no size (a bare pseudo-terminal) gets 80 columns.
        sized = columns(terminal) > 0
        self.bar = tqdm(
            file=terminal,
            bar_format="{desc}",
            dynamic_ncols=sized,
            ncols=None if sized else 80,
            nrows=None if sized else 24,
            leave=False,
            mininterval=0,
        )
        self._restore: list[tuple[Any, str, Any]] = []

    def show(self, text: str) -> None:
        with self.lock:
            self.bar.set_description_str(text, refresh=True)

    def write_above(self, stream: TextIO, text: str) -> None:
        """Write *text* to *stream* (a terminal) above the status line."""
        with self.lock:
            self.bar.clear()
            stream.write(text)
            stream.flush()
            self.bar.refresh()

    def capture(self) -> None:
        """Send the terminal's other writers above the line: stdout when it is the same
        terminal, stderr, and the log handlers that write to either."""
        replaced = {}
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if name == "stderr" or same_terminal(stream, self.terminal):
                replaced[id(stream)] = _AboveStatus(self, stream)
                self._swap(sys, name, replaced[id(stream)])
        for handler in logging.getLogger().handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and id(stream) in replaced:
                self._restore.append((handler, "stream", stream))
                handler.stream = replaced[id(stream)]

    def _swap(self, owner: Any, name: str, value: Any) -> None:
        self._restore.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def close(self) -> None:
        """Clear the line and give every writer its stream back."""
        with self.lock:
            for owner, name, value in reversed(self._restore):
                if isinstance(getattr(owner, name), _AboveStatus):
                    getattr(owner, name).flush_partial()
                setattr(owner, name, value)
            self._restore.clear()
            self.bar.close()


class _AboveStatus:
    """A text stream that writes whole lines above a status line (a partial line waits for its end)."""

    def __init__(self, status: StatusLine, stream: TextIO):
        self._status = status
        self._stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        with self._status.lock:  # print() writes in pieces, maybe from several threads
            head, newline, tail = text.rpartition("\n")
            if newline:
                self._status.write_above(self._stream, self._partial + head + newline)
                self._partial = tail
            else:
                self._partial += text
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def flush_partial(self) -> None:
        if self._partial:
            self._status.write_above(self._stream, self._partial)
            self._partial = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def progress_bar(total: int, description: str, *, minimum: int = 0, stream: TextIO | None = None) -> Any:
    """A tqdm bar on *stream* (stderr) counting to *total*, or None when it is not a
    terminal or there are fewer than *minimum* steps."""
    stream = stream if stream is not None else sys.stderr
    if total < minimum or not is_terminal(stream):
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit="page", file=stream, dynamic_ncols=True, leave=False)
