"""test_warc.py's checks of its WARC files, made in the test's own process: warcio's checker and
cdxj-indexer run as their commands run them (the very classes and entry point ``warcio check -v`` and
``cdxj-indexer -s`` call), without a process start each (~0.5 s of CPU for cdxj-indexer's imports).
The checks are those of ``tests/support/warcs.py``'s ``assert_valid`` and
``assert_index_points_at_records``."""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker

from tests.support.warcs import read_cdxj, read_warc, surt_host
from tse_scrapy.crawl.warcindex import cdxj_path


def warcio_check(path):
    """warcio's own checker (what ``warcio check -v PATH`` runs): every record parses and its digests
    match; (its exit status, its report)."""
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        status = Checker(SimpleNamespace(inputs=[str(path)], verbose=True)).process_all()
    return status, report.getvalue()


def whole_file_cdxj(warc) -> bytes:
    """What ``cdxj-indexer -s WARC`` writes: the sorted CDXJ of the whole file."""
    from cdxj_indexer.main import main

    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "whole.cdxj"
        main(["-s", "-o", str(output), str(warc)])
        return output.read_bytes()


def assert_valid(path):
    """warcio check passes with a digest on every record; one warcinfo, first; requests paired."""
    status, report = warcio_check(path)
    assert status == 0, report
    records = read_warc(path)
    assert report.count("digest pass") == sum(r["type"] != "revisit" for r in records), report
    assert [r["type"] for r in records].count("warcinfo") == 1
    assert records[0]["type"] == "warcinfo"
    assert {r["version"] for r in records} == {"WARC/1.1"}
    answers = {r["warc"]["WARC-Record-ID"]: r for r in records if r["type"] in ("response", "revisit")}
    requests = [r for r in records if r["type"] == "request"]
    # Every request is paired with exactly one answer to the same URL, and every answer with one request.
    assert sorted(r["warc"]["WARC-Concurrent-To"] for r in requests) == sorted(answers)
    for request in requests:
        answer = answers[request["warc"]["WARC-Concurrent-To"]]
        assert request["warc"]["WARC-Target-URI"] == answer["warc"]["WARC-Target-URI"]
    for record in records:
        assert record["warc"]["WARC-Block-Digest"].startswith("sha1:")
        if record["type"] == "response":
            assert record["warc"]["WARC-Payload-Digest"].startswith("sha1:")
    return records


def assert_index_points_at_records(warc):
    """The CDXJ beside *warc* lists every response and revisit, each offset pointing at its record;
    built record by record as the crawl wrote them, it is the one cdxj-indexer makes of the whole file."""
    assert cdxj_path(warc).read_bytes() == whole_file_cdxj(warc)
    records = read_warc(warc)
    entries = read_cdxj(cdxj_path(warc))
    listed = Counter((fields["url"], int(fields["offset"])) for _, fields in entries)
    expected = Counter(
        (r["warc"]["WARC-Target-URI"], r["offset"]) for r in records if r["type"] in ("response", "revisit")
    )
    assert listed == expected
    with open(warc, "rb") as stream:
        for key, fields in entries:
            assert fields["filename"] == warc.name
            stream.seek(int(fields["offset"]))
            record = next(iter(ArchiveIterator(stream)))
            assert record.rec_type in ("response", "revisit")
            assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
            assert key.split(")")[0] == surt_host(fields["url"])
    return entries
