"""Reading WARC files back in tests: every record with warcio, warcio's own checker, and the CDXJ
index compared with what cdxj-indexer makes of the whole file.

The checker and the indexer run in the test's own process, as their commands run them (the very class
``warcio check -v`` and the entry point ``cdxj-indexer -s`` call): their output is the commands' (byte
for byte on real WARCs, a torn one included), without a process start each (about 0.5 s of CPU for the
two, which a test checking the WARCs of many killed crawls paid each time)."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker

from tse_scrapy.crawl.warcindex import cdxj_path


def read_warc(path):
    """Every record of *path*: its type, WARC and HTTP headers, payload as stored and decoded, and offset."""
    records = []
    with open(path, "rb") as stream:
        iterator = ArchiveIterator(stream)
        for record in iterator:
            raw = record.raw_stream.read() if record.rec_type == "response" else None
            records.append(
                {
                    "type": record.rec_type,
                    "version": record.rec_headers.protocol,
                    "warc": dict(record.rec_headers.headers),
                    "http": record.http_headers,
                    "raw": raw,
                    "offset": iterator.get_record_offset(),
                }
            )
    # Decoded payloads (Content-Encoding undone) in a second pass: a record's stream is read once.
    with open(path, "rb") as stream:
        for record, entry in zip(ArchiveIterator(stream), records, strict=True):
            entry["decoded"] = record.content_stream().read()
    return records


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


def responses(records):
    return [r for r in records if r["type"] == "response"]


def path_of(record):
    return urlsplit(record["warc"]["WARC-Target-URI"]).path


def read_cdxj(path):
    lines = path.read_text().splitlines()
    assert lines == sorted(lines)
    entries = []
    for line in lines:
        key, timestamp, fields = line.split(" ", 2)
        assert len(timestamp) == 14 and timestamp.isdigit()
        entries.append((key, json.loads(fields)))
    return entries


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


def surt_host(url):
    """The host part of a SURT key: 127.0.0.1:8080 -> 1,0,0,127:8080."""
    host, _, port = urlsplit(url).netloc.partition(":")
    return ",".join(reversed(host.split("."))) + (f":{port}" if port else "")
