"""A disk that fills while ``tse index`` writes (a build or an update): every file of the index is the
new one, or every file is as it was, never some of each, and no temporary file is left.  An update
put the text index and its sidecar in place and then could not write the document store (a reviewer's
find, on a real full disk): a server started then had no relevance ranking, and the next update fell
back to a full build."""

import os
import shutil

import pytest

from tests.conftest import run_tse
from tests.support.fulldisk import leave_free, tmpfs
from tests.support.inprocess import tse_ok_here
from tests.support.multilingual import write_fixture_directory
from tests.support.sample import seeded_sample
from tse_scrapy.index.storage import stamped_digest, text_digest

# The index's files but its stamp, which names the text's inode (another on each disk): it is checked
# to describe the text instead.
COMPARED = ("index", "index.bin", "index.docs", "index.search")
STEPS = 12
# Each room left runs the same command to a failure at some write (or to none); the least room (no write
# succeeds) and the most (every write does) each run, and 4 of the others, new ones each run (each case
# costs a `tse index` start): over runs every one is tried.  TSE_TEST_SEED=all: all of them.
SAMPLED = 4


def _files(directory):
    return {name: (directory / name).read_bytes() for name in COMPARED}


def _leftovers(directory):
    kept = (*COMPARED, "index.stamp", "index.lock", "filler")
    return sorted(name for name in os.listdir(directory) if name not in kept)


@pytest.mark.parametrize("command", ["build", "update"])
def test_a_disk_that_fills_leaves_the_index_whole_as_it_was_or_whole_new(tmp_path, command):
    pages = write_fixture_directory(tmp_path / "pages")
    old = tmp_path / "old"
    old.mkdir()
    tse_ok_here("index", pages, old / "index")  # (set-up: in this process)
    (pages / "3").write_bytes((pages / "3").read_bytes() + b" <p>orchard</p>")
    arguments = ["--update"] if command == "update" else []
    new = tmp_path / "new"
    shutil.copytree(old, new)
    tse_ok_here("index", pages, new / "index", *arguments)  # (the expected files: in this process)
    before, after = _files(old), _files(new)
    assert before != after
    # From no room at all to room for every new file beside the old ones, and their temporary files.
    room = 2 * sum(map(len, after.values())) + 256 * 1024
    outcomes = []
    sample = seeded_sample(list(range(0, room, room // STEPS)), SAMPLED, always=(0, -1))
    with tmpfs(tmp_path / "disk", 4 * room) as disk:
        for free in sample.chosen:
            for name in os.listdir(disk):
                (disk / name).unlink()
            for name in (*COMPARED, "index.stamp"):
                shutil.copy2(old / name, disk / name)
            leave_free(disk, free)
            result = run_tse("index", pages, disk / "index", *arguments)
            stderr = result.stderr.decode()
            if result.returncode == 0:
                assert _files(disk) == after, (free, sample.said)
            else:
                assert result.returncode == 1 and len(stderr.splitlines()) == 1, (free, stderr, sample.said)
                assert "Traceback" not in stderr, (stderr, sample.said)
                assert "No space left on device" in stderr or "disk is full" in stderr, (stderr, sample.said)
                assert _files(disk) == before, (free, stderr, sample.said)
            text = (disk / "index").read_bytes()
            digest = stamped_digest(disk / "index", os.stat(disk / "index"))
            assert digest in (None, text_digest(text)), (free, sample.said)
            assert _leftovers(disk) == [], (free, stderr, sample.said)
            outcomes.append(result.returncode)
    assert outcomes[0] == 1 and outcomes[-1] == 0, (outcomes, sample.said)
