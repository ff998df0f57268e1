"""A file an update maps and reads in order (the old text index, the old sidecar) does not stay in the
process: the pages each reading has passed are given back a piece at a time (``storage.GivenBack``).
Measured in the process's own mapping of a real file (/proc/self/smaps): without it, reading a 48 MB
file keeps 48 MB of it resident."""

import mmap
import os
from pathlib import Path

import pytest

from tse_scrapy.index import storage
from tse_scrapy.index.storage import GivenBack

MB = 1 << 20
PIECE = 4 * MB


def _resident(path: Path) -> int:
    """The bytes of *path*'s mappings in this process that are resident."""
    resident, current = 0, None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and not line.startswith(("Rss:", "Pss:")):
                current = fields[5] if len(fields) > 5 else None
            elif fields[0] == "Rss:" and current == str(path):
                resident += int(fields[1]) * 1024
    return resident


@pytest.fixture
def mapped(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "GIVEN_BACK_BYTES", PIECE)
    path = tmp_path / "file"
    path.write_bytes(os.urandom(MB) * 48)
    with open(path, "rb") as file:
        mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    yield path, mapping
    mapping.close()


def _read(mapping: mmap.mmap, start: int, end: int) -> None:
    for at in range(start, end, mmap.PAGESIZE):
        mapping[at]  # (a page read)


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux's /proc")
def test_a_file_read_in_order_keeps_about_a_piece_of_it(mapped):
    path, mapping = mapped
    given_back, most = GivenBack(mapping), 0
    for at in range(0, len(mapping), MB):
        _read(mapping, at, at + MB)
        given_back.passed("read", at + MB)
        most = max(most, _resident(path))
    assert most <= 2 * PIECE, most
    # The same reading, nothing given back: the whole file stays.
    _read(mapping, 0, len(mapping))
    assert _resident(path) >= 40 * MB


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux's /proc")
def test_two_readings_of_a_file_each_give_back_what_they_passed(mapped):
    # One scans ahead (the text's lines found), one copies behind it, reading again what the first
    # gave back: neither keeps what it passed.
    path, mapping = mapped
    given_back, most = GivenBack(mapping), 0
    for ahead in range(16 * MB, len(mapping) + 1, 8 * MB):
        _read(mapping, ahead - 16 * MB, ahead)
        given_back.passed("scanned", ahead)
        _read(mapping, ahead - 16 * MB, ahead - 8 * MB)
        given_back.passed("copied", ahead - 8 * MB)
        most = max(most, _resident(path))
    assert most <= 16 * MB + 2 * PIECE, most


def test_what_is_not_a_mapping_gives_nothing_back():
    given_back = GivenBack(b"an empty index is bytes, not a mapping")
    given_back.passed("read", 100 * MB)  # nothing to give back, and no error
