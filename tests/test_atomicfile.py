"""atomicfile.write_atomically: a file written whole, from any number of pieces."""

from __future__ import annotations

import os

import pytest

from tse_scrapy.atomicfile import partial_path, write_atomically


@pytest.mark.parametrize("count", [0, 1, 3, 1023, 1024, 1025, 5000])
def test_any_number_of_pieces_is_written_in_order(tmp_path, count):
    # More pieces than one writev call takes (IOV_MAX, 1024 on Linux), empty ones among them.
    pieces = [b"%d\n" % n if n % 7 else b"" for n in range(count)]
    path = tmp_path / "file"
    write_atomically(path, pieces)
    assert path.read_bytes() == b"".join(pieces)
    assert not partial_path(path).exists()


def test_a_large_piece_is_written_whole(tmp_path):
    big = os.urandom(5 * 1024 * 1024)
    path = tmp_path / "file"
    write_atomically(path, [b"head", big, b"tail"])
    assert path.read_bytes() == b"head" + big + b"tail"
