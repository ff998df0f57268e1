"""``PAGEDIR/.tse-charsets/``: the charset each page's HTTP header declared.

Page files keep the bytes as fetched and no header (SPEC 2), but a browser
reads a page in the charset of its ``Content-Type`` header before any it
declares itself (``encodings``).  So a crawl in ``--links html`` mode notes
it when a page is saved: one line ``URL<TAB>charset`` per page that came
with one, in a file of its own per process (``NAME.tsv``: the workers of a
distributed crawl share the page directory), appended to on resume.  The
indexer reads every file; a URL noted twice keeps its last charset.  Lines
that are not such a line (a torn last line, a file someone else wrote) are
skipped, and reading is bounded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

DIRECTORY = ".tse-charsets"
MAX_LINE_BYTES = 9000  # a URL of 8,192 characters and a charset label
MAX_LABEL_BYTES = 40
MAX_FILE_BYTES = 256 * 1024 * 1024


def charset_line(url: str, charset: str) -> bytes | None:
    """The line noting *charset* for *url*, or None if they cannot make one."""
    label = charset.strip()
    if not (label.isascii() and label.isprintable()) or not label or len(label) > MAX_LABEL_BYTES:
        return None  # charset labels are short ASCII names
    if any(c in url for c in "\t\n\r"):
        return None
    try:
        line = f"{url}\t{label}\n".encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a URL no page file could hold either
        return None
    return line if len(line) <= MAX_LINE_BYTES else None


def parse_charset_lines(data: bytes) -> dict[str, str]:
    """URL -> charset of the lines in *data* (bad lines skipped, the last of a URL kept)."""
    found: dict[str, str] = {}
    for line in data.split(b"\n")[:-1]:  # a last piece without its newline is torn
        if len(line) > MAX_LINE_BYTES or line.count(b"\t") != 1:
            continue
        url, label = line.decode("utf-8", "surrogateescape").split("\t")
        if url and label and len(label) <= MAX_LABEL_BYTES and label.isascii() and label.isprintable():
            found[url] = label
    return found


def read_charsets(pagedir: str | os.PathLike) -> dict[str, str]:
    """Every charset noted in *pagedir* (none: {})."""
    found: dict[str, str] = {}
    directory = Path(pagedir, DIRECTORY)
    try:
        names = sorted(entry.name for entry in os.scandir(directory) if entry.name.endswith(".tsv"))
    except OSError:
        return found
    for name in names:
        try:
            with open(directory / name, "rb") as notes:
                found.update(parse_charset_lines(notes.read(MAX_FILE_BYTES)))
        except OSError:
            continue
    return found


class CharsetNotes:
    """Appends the lines of one process to ``PAGEDIR/.tse-charsets/NAME.tsv`` (opened when first needed)."""

    def __init__(self, pagedir: str | os.PathLike, name: str):
        self.path = Path(pagedir, DIRECTORY, f"{name}.tsv")
        self._file: BinaryIO | None = None

    def note(self, url: str, charset: str) -> None:
        """Note *charset* for *url* (raises OSError)."""
        line = charset_line(url, charset)
        if line is None:
            return
        if self._file is None:
            self.path.parent.mkdir(exist_ok=True)
            self._file = open(self.path, "ab")  # noqa: SIM115 - kept open for the crawl, closed by close()
        self._file.write(line)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
