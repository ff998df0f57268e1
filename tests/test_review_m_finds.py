"""What a user reads (`tse serve`, `tse report`, `tse status`, `tse query`, `tse indextest`): a
review's finds, each mended and held here by a test that failed before its mend."""

from __future__ import annotations

import pytest

from tests.support.inprocess import tse_here
from tests.support.multilingual import write_fixture_directory


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return write_fixture_directory(tmp_path_factory.mktemp("pages") / "pages")


@pytest.mark.parametrize("command", ["query", "indextest"])
def test_an_index_that_is_a_directory_is_named_not_a_descriptor(command, pages, tmp_path):
    # An INDEXFILE (OLDINDEX) that is a directory is opened, then read by its descriptor, whose error
    # names the descriptor's number: "tse query: 3: Is a directory", the path nowhere in the line.
    directory = tmp_path / "an index"
    directory.mkdir()
    arguments = [pages, directory] if command == "query" else [directory, tmp_path / "new"]
    done = tse_here(command, *arguments, input=b"word\n")
    assert done.returncode == 1
    assert done.stderr.decode() == f"tse {command}: {directory}: Is a directory\n"
    assert done.stdout == b""
    assert not (tmp_path / "new").exists()
