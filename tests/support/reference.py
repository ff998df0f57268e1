"""Reference page directories rebuilt from ../shared/tse-sites: the .tsv rows
of a reference crawl + the mirror's bytes, in reference docID order."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote


def build_page_directory(reference_dir: Path, mirror: Path, name: str, destination: Path) -> Path:
    destination.mkdir(parents=True)
    (destination / ".crawler").touch()
    rows = (reference_dir / "crawls" / f"{name}.tsv").read_text().splitlines()[1:]
    for row in rows:
        doc_id, depth, url = row.split("\t")
        body = (mirror / unquote(url.split("://", 1)[1])).read_bytes()
        (destination / doc_id).write_bytes(f"{url}\n{depth}\n".encode() + body + b"\n")
    return destination


def triples(index_text: bytes) -> set[tuple[str, int, int]]:
    """An index file as a set of (word, docID, count), whatever its order."""
    result = set()
    for line in index_text.decode("ascii").splitlines():
        word, *numbers = line.split()
        result.update((word, int(numbers[i]), int(numbers[i + 1])) for i in range(0, len(numbers), 2))
    return result
