"""Reference acceptance for the indexer: same (word, docID, count) triples as the
reference index of every reference page directory (skipped without ../shared)."""

import pytest

from tests.conftest import run_tse
from tests.support.reference import build_page_directory, triples

INDEXED = (
    [("letters", d) for d in range(6)] + [("toscrape", d) for d in range(3)] + [("wikipedia", d) for d in range(2)]
)


@pytest.mark.parametrize("site, depth", INDEXED)
def test_index_equals_reference(reference_dir, mirror, tmp_path, site, depth):
    name = f"{site}-{depth}"
    pages = build_page_directory(reference_dir, mirror, name, tmp_path / name)
    result = run_tse("index", pages, tmp_path / "out.index")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"" and result.stderr == b""
    expected = triples((reference_dir / "index" / f"{name}.index").read_bytes())
    assert triples((tmp_path / "out.index").read_bytes()) == expected
    lines = (tmp_path / "out.index").read_text().splitlines()
    assert lines == sorted(lines, key=lambda line: line.split()[0])


@pytest.mark.parametrize("site, depth", INDEXED)
def test_indextest_round_trips_reference_index(reference_dir, tmp_path, site, depth):
    original = reference_dir / "index" / f"{site}-{depth}.index"
    result = run_tse("indextest", original, tmp_path / "copy.index")
    assert result.returncode == 0, result.stderr.decode()
    assert triples((tmp_path / "copy.index").read_bytes()) == triples(original.read_bytes())
