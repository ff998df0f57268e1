"""Legacy frontier entries (pickles) read without ever running code (rules/files/legacyentries)."""

from __future__ import annotations

import builtins
import os
import pickle
import pickletools
import random
import shlex
import subprocess
import time

import pytest
import scrapy
from hypothesis import given, settings
from hypothesis import strategies as st

from tse_scrapy.crawl.scheduling.serialize import request_to_dict
from tse_scrapy.rules.files import legacyentries
from tse_scrapy.rules.files.legacyentries import (
    ALLOWED_OPCODES,
    LEGACY_ENTRY_MAX_BYTES,
    MAX_DEPTH,
    LegacyEntryError,
    read_legacy_request,
)

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)
BYTES_PROTOCOLS = range(3, pickle.HIGHEST_PROTOCOL + 1)  # protocols 0 to 2 pickle bytes as a call
RAN: list[str] = []  # what hostile payloads append to, when they run
# genops parses a Python 2 string (STRING) before the walk refuses it: garbage can warn of its escapes.
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")


def request(**fields):
    """A request dict as ``Request.to_dict`` makes it for a link tse found (what scrapy-redis pickled)."""
    return {
        "url": "http://localhost:8000/docs/a.html",
        "callback": "parse",
        "errback": "fetch_failed",
        "headers": {b"Referer": [b"http://localhost:8000/docs/index.html"]},
        "body": b"",
        "cookies": {},
        "meta": {
            "depth": 2,
            "tse_found_at": 1,
            "tse_link": "http://localhost:8000/docs/a.html",
            "tse_found_on": "http://localhost:8000/docs/index.html",
        },
        "encoding": "utf-8",
        "flags": [],
        "cb_kwargs": {},
        "dont_filter": False,
        "method": "GET",
        "priority": 0,
        **fields,
    }


def without_bytes(fields):
    """*fields* with no bytes anywhere: what protocols 0 to 2 can pickle as data."""
    return {key: ({} if key == "headers" else value) for key, value in fields.items() if key != "body"}


JUDGED = [("http://elsewhere.example/", "IgnExtrn"), ("mailto:a@b.c", "IgnExtrn")]
REQUESTS = {
    "found link": request(),
    "seed": request(url="http://localhost:8000/", errback=None, headers={}, meta={"depth": 0}),
    "judged before": request(meta={**request()["meta"], "tse_judged_before": JUDGED}),
    "many judged before": request(
        meta={"tse_found_at": 1, "tse_judged_before": [(f"http://x/{i}", "IgnExtrn") for i in range(1500)]}
    ),
    "post": request(
        url="HTTPS://Example.COM:8443/form?q=1#f",
        method="POST",
        headers={
            b"Content-Type": [b"application/x-www-form-urlencoded"],
            b"Accept": [b"text/html", b"*/*"],
            b"Referer": [b"https://example.com/"],
        },
        body=b"a=1&b=%C3%A9",
        priority=-3,
        dont_filter=True,
        flags=["retried"],
        callback=None,
        errback=None,
    ),
    "scrapy meta": request(
        meta={
            "depth": 3,
            "tse_found_at": 2,
            "download_slot": "localhost",
            "redirect_times": 1,
            "redirect_ttl": 19,
            "redirect_urls": ["http://localhost:8000/old"],
            "redirect_reasons": [301],
            "retry_times": 0,
            "download_latency": 0.0123,
            "handle_httpstatus_list": (404, 410, 500, 503),
            "ints": [0, 1, 255, 256, 65535, 65536, 2**31 - 1, -(2**31), 2**40, -(2**63), 2**64 - 1],
            "nested": {"a": [{"b": ("c", None, True, 1.5)}]},
            "none": None,
        }
    ),
    "placeholder": request(url="data:,", callback=None, errback=None, headers={}),
    "unicode": request(
        url="http://localhost:8000/caf%C3%A9",
        meta={"depth": 1, "tse_found_at": 0, "tse_link": "http://localhost:8000/café/\udcff", "tse_found_on": "日本"},
    ),
    "private callback names": request(callback="_TseSpider__parse_page", errback="on_error2"),
}


def normalized(fields):
    """What ``read_legacy_request`` returns for *fields*."""
    expected = {key: value for key, value in fields.items() if key != "_class"}
    if "headers" in expected:
        expected["headers"] = {
            name: [values] if isinstance(values, bytes) else list(values) for name, values in fields["headers"].items()
        }
    if "tse_judged_before" in fields.get("meta", {}):
        expected["meta"] = {
            **fields["meta"],
            "tse_judged_before": [tuple(p) for p in fields["meta"]["tse_judged_before"]],
        }
    for key in ("cookies", "cb_kwargs"):
        if key in expected:
            expected[key] = {}
    return expected


# Real examples.


@pytest.mark.parametrize("protocol", BYTES_PROTOCOLS)
@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_a_pickled_request_is_read_back(name, protocol):
    fields = REQUESTS[name]
    assert read_legacy_request(pickle.dumps(fields, protocol=protocol)) == normalized(fields)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_a_pickled_request_without_bytes_is_read_back_in_every_protocol(name, protocol):
    fields = without_bytes(REQUESTS[name])
    assert read_legacy_request(pickle.dumps(fields, protocol=protocol)) == normalized(fields)


@pytest.mark.parametrize("protocol", range(3))
def test_bytes_pickled_with_an_old_protocol_are_a_call_and_refused(protocol):
    with pytest.raises(LegacyEntryError, match=r"GLOBAL .*'_codecs encode'.*protocol < 4"):
        read_legacy_request(pickle.dumps(request(), protocol=protocol))
    with pytest.raises(LegacyEntryError, match=r"GLOBAL .*bytes'.*protocol < 4"):
        read_legacy_request(pickle.dumps({"url": "http://h/", "body": b""}, protocol=protocol))


@pytest.mark.parametrize("protocol", range(4))
def test_sets_pickled_before_protocol_4_are_a_call_and_refused(protocol):
    with pytest.raises(LegacyEntryError, match=r"GLOBAL .*set'.*protocol < 4"):
        read_legacy_request(pickle.dumps(without_bytes(request(meta={"tags": {"a"}})), protocol=protocol))


@pytest.mark.parametrize("protocol", [4, 5])
def test_sets_and_frozensets_in_meta_are_read(protocol):
    fields = request(meta={"tags": {"a", "b"}, "frozen": frozenset({("x", 1)}), "empty": set()})
    assert read_legacy_request(pickle.dumps(fields, protocol=protocol)) == fields


def test_variants_of_the_shape_are_normalized():
    fields = request(
        headers={b"Referer": b"http://h/", b"Accept": (b"a", b"b")},
        cookies=[],
        meta={"tse_judged_before": [["http://x/", "IgnExtrn"]]},
        flags=("a",),
        _class="scrapy.http.request.Request",
    )
    read = read_legacy_request(pickle.dumps(fields, protocol=5))
    assert read["headers"] == {b"Referer": [b"http://h/"], b"Accept": [b"a", b"b"]}
    assert read["cookies"] == {} and read["flags"] == ["a"] and "_class" not in read
    assert read["meta"]["tse_judged_before"] == [("http://x/", "IgnExtrn")]
    assert read_legacy_request(pickle.dumps({**fields, "_class": "scrapy.Request"}, protocol=5)) == read
    assert read_legacy_request(pickle.dumps({"url": "http://h/"}, protocol=5)) == {"url": "http://h/"}
    assert read_legacy_request(bytearray(pickle.dumps(fields))) == read_legacy_request(memoryview(pickle.dumps(fields)))


class Spider(scrapy.Spider):
    name = "legacy"

    def parse(self, response):
        pass

    def fetch_failed(self, failure):
        pass


def test_a_request_pickled_by_scrapy_redis_is_read_back():
    from scrapy.utils.request import request_from_dict
    from scrapy_redis import picklecompat

    spider = Spider()
    meta = {
        "depth": 1,
        "tse_found_at": 0,
        "tse_link": "http://h/a b",
        "tse_found_on": "http://h/",
        "tse_judged_before": JUDGED,
    }
    original = scrapy.Request(
        "http://h/a b", callback=spider.parse, errback=spider.fetch_failed, meta=meta, headers={"Referer": "http://h/"}
    )
    fields = request_to_dict(original, spider)
    assert set(fields) == legacyentries.REQUEST_KEYS - {"_class"}
    read = read_legacy_request(picklecompat.dumps(fields))
    assert read == fields
    again = request_from_dict(read, spider=spider)
    assert (again.url, again.method, again.body, again.meta) == (original.url, "GET", b"", meta)
    assert again.callback == spider.parse and again.errback == spider.fetch_failed
    assert again.headers.getlist(b"Referer") == [b"http://h/"]


def test_a_request_of_a_subclass_is_refused():
    form = scrapy.FormRequest("http://h/", formdata={"a": "1"})
    fields = form.to_dict()
    assert fields["_class"] == "scrapy.http.request.form.FormRequest"
    with pytest.raises(LegacyEntryError, match=r"class 'scrapy\.http\.request\.form\.FormRequest'"):
        read_legacy_request(pickle.dumps(fields, protocol=5))


def test_the_bounds_are_those_of_the_entries_it_converts_to():
    frontierentries = pytest.importorskip("tse_scrapy.rules.files.frontierentries")
    assert legacyentries.MAX_URL_CHARACTERS == frontierentries.MAX_URL_CHARACTERS
    assert legacyentries.MAX_BODY_BYTES == frontierentries.MAX_BODY_BYTES
    assert legacyentries.MAX_HEADER_VALUES == frontierentries.MAX_HEADERS
    assert legacyentries.METHODS == frontierentries.METHODS
    assert MAX_DEPTH == frontierentries.MAX_DEPTH
    for fields in REQUESTS.values():
        read = read_legacy_request(pickle.dumps(fields, protocol=5))
        if read.get("callback") not in {None, *frontierentries.CALLBACKS} or read.get("dont_filter"):
            continue  # read, but refused by the conversion (--migrate quarantines it)
        data = frontierentries.RequestData(
            url=read["url"],
            method=read["method"],
            headers=tuple((name, value) for name, values in read["headers"].items() for value in values),
            body=read["body"],
            meta=read["meta"],
            priority=read["priority"],
            dont_filter=read["dont_filter"],
            callback=read["callback"],
            errback=read["errback"],
        )
        assert frontierentries.decode_entry(frontierentries.encode_entry(b"f" * 16, data))[1].url == read["url"]


# Hostile pickles: none may run code.


class SystemCall:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.path))}",))


class Exec:
    def __reduce__(self):
        return (builtins.exec, (f"import sys; sys.modules[{__name__!r}].RAN.append('exec')",))


class SetState:
    """Pickled by copyreg (protocols 0, 1) or NEWOBJ (2 on), then BUILD: ``__setstate__`` runs."""

    def __getstate__(self):
        return {"x": 1}

    def __setstate__(self, state):
        RAN.append("setstate")


class NestedPickle:
    def __init__(self, protocol):
        self.protocol = protocol

    def __reduce__(self):
        return (pickle.loads, (pickle.dumps(Exec(), protocol=self.protocol),))


class Popen:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (subprocess.Popen, (["touch", str(self.path)],))


PAYLOADS = {
    "os.system": lambda path, protocol: SystemCall(path),
    "exec": lambda path, protocol: Exec(),
    "setstate": lambda path, protocol: SetState(),
    "pickle.loads": lambda path, protocol: NestedPickle(protocol),
    "subprocess.Popen": lambda path, protocol: Popen(path),
}


def hostile(kind, path, protocol, where):
    payload = PAYLOADS[kind](path, protocol)
    value = {"bare": payload, "in meta": {"url": "http://h/", "meta": {"x": payload}}, "as url": {"url": payload}}
    return pickle.dumps(value[where], protocol=protocol)


@pytest.fixture
def ran():
    RAN.clear()
    yield RAN
    RAN.clear()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", sorted(PAYLOADS))
def test_the_hostile_payloads_do_run_code_when_unpickled(tmp_path, ran, kind, protocol):
    loaded = pickle.loads(hostile(kind, tmp_path / "pwned", protocol, "in meta"))
    if kind == "subprocess.Popen":
        loaded["meta"]["x"].wait()
    assert (tmp_path / "pwned").exists() or ran


@pytest.mark.parametrize("where", ["bare", "in meta", "as url"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", sorted(PAYLOADS))
def test_a_hostile_pickle_is_refused_without_running(tmp_path, monkeypatch, ran, kind, protocol, where):
    data = hostile(kind, tmp_path / "pwned", protocol, where)
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *args, **kwargs: started.append(args))
    with pytest.raises(LegacyEntryError, match=r"refused opcode (GLOBAL|STACK_GLOBAL) "):
        read_legacy_request(data)
    assert not (tmp_path / "pwned").exists() and ran == [] and started == []


REFUSED = {
    "GLOBAL": b"cos\nsystem\n(S'true'\ntR.",
    "STACK_GLOBAL": b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x04true\x85R.",
    "INST": b"(ios\nsystem\n.",
    "OBJ": b"(]o.",
    "REDUCE": b"])R.",
    "BUILD": b"]}b.",
    "NEWOBJ": b"\x80\x02])\x81.",
    "NEWOBJ_EX": b"\x80\x04])}\x92.",
    "PERSID": b"Pfoo\n.",
    "BINPERSID": b"\x80\x04\x8c\x03foo\x94Q.",
    "EXT1": b"\x80\x02\x82\x01.",
    "EXT2": b"\x80\x02\x83\x01\x00.",
    "EXT4": b"\x80\x02\x84\x01\x00\x00\x00.",
    "BYTEARRAY8": pickle.dumps(bytearray(b"x"), protocol=5),
    "NEXT_BUFFER": b"\x80\x05\x97.",
    "READONLY_BUFFER": b"\x80\x05C\x01x\x98.",
    "STRING": b"S'x'\n.",
    "BINSTRING": b"T\x01\x00\x00\x00x.",
    "SHORT_BINSTRING": b"U\x01x.",
    "DUP": b"}2.",
    "POP": b"}N0.",
    "POP_MARK": b"}(1.",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_opcode_outside_the_allowlist_is_refused(name):
    assert name in {op.name for op, _, _ in pickletools.genops(REFUSED[name])}
    with pytest.raises(LegacyEntryError, match=f"refused opcode {name} "):
        read_legacy_request(REFUSED[name])


def test_the_allowlist_holds_only_opcodes_that_build_plain_values():
    every = {op.name for op in pickletools.opcodes}
    assert every >= ALLOWED_OPCODES
    assert ALLOWED_OPCODES.isdisjoint(REFUSED)
    assert every - ALLOWED_OPCODES == set(REFUSED)


STRUCTURE = {
    "empty": (b"", "not a pickle"),
    "no STOP": (b"\x80\x04}", "not a pickle"),
    "only STOP": (b".", "STOP with 0 values"),
    "bytes after STOP": (pickle.dumps(request()) + b"N", "1 bytes after"),
    "two pickles": (pickle.dumps(request()) * 2, "bytes after"),
    "two values": (b"\x80\x04}N.", "STOP with 2 values"),
    "mark left open": (b"\x80\x04(}.", "1 marks"),
    "unknown opcode": (b"\x80\x04\xff.", "not a pickle"),
    "protocol 6": (b"\x80\x06}.", "PROTO 6"),
    "protocol twice": (b"\x80\x04\x80\x04}.", "PROTO 4 at byte 2"),
    "memo slot far away": (b"\x80\x02}r\xff\xff\xff\xff.", "LONG_BINPUT at byte 3 out of order"),
    "memo slot not written": (b"\x80\x02}h\x05.", "BINGET at byte 3 of an empty memo slot"),
    "PUT not plain": (b"(dp 0\n.", "PUT at byte 2 of a memo slot not written plainly"),
    "GET not plain": (b"(dp0\ng0_0\n.", "GET at byte 5 of a memo slot not written plainly"),
    "PUT of nothing": (b"\x80\x04\x94}.", "MEMOIZE at byte 2 out of order"),
    "APPEND of nothing": (b"\x80\x04a.", "APPEND at byte 2 pops more"),
    "APPEND into nothing": (b"\x80\x04Na.", "APPEND at byte 3 without a container"),
    "APPEND across a MARK": (b"\x80\x04](Na.", "APPEND at byte 5 without a container"),
    "SETITEMS without MARK": (b"\x80\x04}NNu.", "SETITEMS at byte 5 without a MARK"),
    "SETITEMS of a key alone": (b"\x80\x04}(Nu.", "odd number"),
    "DICT of a key alone": (b"(Nd.", "odd number"),
    "too deep a tuple": (b"\x80\x04}N" + b"\x85" * 100_000 + b"Ns.", "nested over 32 deep"),
    "too many marks": (b"\x80\x04" + b"(" * 40 + b".", "marks on the stack"),
    "too high a stack": (b"\x80\x04" + b"N" * 5000 + b".", "over 4096 values"),
    "too many opcodes": (b"\x80\x04]" + b"Na" * 200_000 + b".", "over 262144 opcodes"),
    "not UTF-8": (b"\x80\x04\x8c\x01\xff.", "not a pickle"),
    "decimal too long": (b"I" + b"9" * 5000 + b"\n.", "not a pickle"),
}


@pytest.mark.parametrize("name", sorted(STRUCTURE))
def test_a_malformed_pickle_is_refused(name):
    data, message = STRUCTURE[name]
    with pytest.raises(LegacyEntryError, match=message):
        read_legacy_request(data)


def test_deep_and_shared_values_are_refused_in_bounded_time():
    # Lists 50,000 deep, built through the memo on a stack 3 high (a depth the opcode walk cannot see):
    # each level appends a new list to the previous one, then the previous one to a junk list.
    chain = bytearray(b"\x80\x04}\x8c\x03url\x8c\thttp://h/s\x8c\x04meta}(\x8c\x01x]\x94\x8c\x04junk]")
    for slot in range(1, 50_000):
        chain += b"j" + (slot - 1).to_bytes(4, "little") + b"]\x94aa"
    chain += b"us."
    with pytest.raises(LegacyEntryError, match="meta values nested over 32 deep"):
        read_legacy_request(bytes(chain))
    cycle: list = []
    cycle.append(cycle)
    for protocol in PROTOCOLS:
        with pytest.raises(LegacyEntryError, match="nested over 32 deep"):
            read_legacy_request(pickle.dumps({"url": "http://h/", "meta": {"x": cycle}}, protocol=protocol))
    start = time.monotonic()
    shared = [[[0] * 1000] * 1000] * 1000  # a billion values in 4 KiB of pickle
    text = ["x" * 10_000] * 1000  # 10 MB of text in 12 KiB
    for value in (shared, text):
        with pytest.raises(LegacyEntryError, match="spells out more than twice"):
            read_legacy_request(pickle.dumps({"url": "http://h/", "meta": {"x": value}}, protocol=5))
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_truncated_pickle_is_refused(protocol):
    fields = REQUESTS["judged before"]
    data = pickle.dumps(fields if protocol >= 3 else without_bytes(fields), protocol=protocol)
    for size in range(len(data)):
        with pytest.raises(LegacyEntryError):
            read_legacy_request(data[:size])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "value", [[], (), "http://h/", b"http://h/", 1, None, True, 1.5, [{"url": "http://h/"}], ({"url": "http://h/"},)]
)
def test_a_pickle_of_anything_but_a_dict_is_refused(value, protocol):
    if isinstance(value, bytes) and protocol < 3:
        pytest.skip("bytes are a call before protocol 3")
    with pytest.raises(LegacyEntryError, match="not a request dict"):
        read_legacy_request(pickle.dumps(value, protocol=protocol))


WRONG = {
    "no URL": ({"url": None}, "URL is a NoneType"),
    "URL missing": (None, "without a URL"),
    "URL of bytes": ({"url": b"http://h/"}, "URL is a bytes"),
    "ftp URL": ({"url": "ftp://h/"}, "not an http"),
    "javascript URL": ({"url": "javascript:alert(1)"}, "not an http"),
    "relative URL": ({"url": "/a.html"}, "not an http"),
    "long URL": ({"url": "http://h/" + "a" * 8192}, "over 8192"),
    "unknown key": ({"evil": 1}, "unknown request key 'evil'"),
    "key not a string": ({1: "x"}, "unknown request key 1"),
    "TRACE": ({"method": "TRACE"}, "method 'TRACE' is not one of"),
    "method of bytes": ({"method": b"GET"}, "method b'GET'"),
    "lower-case method": ({"method": "get"}, "method 'get'"),
    "dotted callback": ({"callback": "os.system"}, "callback 'os.system' is not a method name"),
    "callback of a number": ({"callback": 1}, "callback 1"),
    "errback with a space": ({"errback": "a b"}, "errback 'a b'"),
    "headers as a list": ({"headers": [(b"a", b"b")]}, "headers are a list"),
    "header name a string": ({"headers": {"Referer": [b"x"]}}, "header name is a str"),
    "empty header name": ({"headers": {b"": [b"x"]}}, "empty header name"),
    "header value a string": ({"headers": {b"Referer": "x"}}, "has a str"),
    "header value a number": ({"headers": {b"Referer": [1]}}, "header value is a int"),
    "too many headers": ({"headers": {b"h%d" % i: [b"v"] for i in range(65)}}, "over 64 header"),
    "too many header values": ({"headers": {b"h": [b"v"] * 65}}, "over 64 header"),
    "long header": ({"headers": {b"h": [b"v" * 8193]}}, "header value of 8193 bytes"),
    "body a string": ({"body": ""}, "body is a str"),
    "long body": ({"body": b"x" * (32 * 1024 + 1)}, "body of 32769 bytes"),
    "cookies": ({"cookies": {"session": "1"}}, "cookies are not empty"),
    "cookies a string": ({"cookies": "a=b"}, "cookies are not empty"),
    "cb_kwargs": ({"cb_kwargs": {"a": 1}}, "cb_kwargs are not empty"),
    "meta a list": ({"meta": []}, "meta is a list"),
    "meta key a number": ({"meta": {1: 2}}, "meta key of type int"),
    "negative depth": ({"meta": {"depth": -1}}, "meta depth is not a whole number"),
    "depth a string": ({"meta": {"depth": "1"}}, "meta depth"),
    "depth a bool": ({"meta": {"depth": True}}, "meta depth"),
    "huge depth": ({"meta": {"tse_found_at": MAX_DEPTH + 1}}, "meta tse_found_at"),
    "link a number": ({"meta": {"tse_link": 5}}, "meta tse_link is not a string"),
    "long link": ({"meta": {"tse_found_on": "x" * 8193}}, "meta tse_found_on"),
    "judged not a list": ({"meta": {"tse_judged_before": "x"}}, "tse_judged_before is a str"),
    "judged not pairs": ({"meta": {"tse_judged_before": [("a",)]}}, "pairs"),
    "judged of numbers": ({"meta": {"tse_judged_before": [("a", 1)]}}, "a judged URL"),
    "huge meta integer": ({"meta": {"x": 2**64}}, "beyond 64 bits"),
    "encoding with a space": ({"encoding": "utf 8"}, "encoding 'utf 8'"),
    "encoding a number": ({"encoding": 8}, "encoding 8"),
    "priority a string": ({"priority": "1"}, "priority is not a whole number"),
    "priority a bool": ({"priority": True}, "priority"),
    "huge priority": ({"priority": 2**31}, "priority"),
    "dont_filter a number": ({"dont_filter": 1}, "dont_filter is a int"),
    "dont_filter None": ({"dont_filter": None}, "dont_filter is a NoneType"),
    "flags a string": ({"flags": "x"}, "flags are not a list"),
    "flag a number": ({"flags": [1]}, "a flag"),
    "too many flags": ({"flags": ["x"] * 65}, "flags are not a list"),
    "another class": ({"_class": "tse_scrapy.Evil"}, "class 'tse_scrapy.Evil'"),
    "class a number": ({"_class": 1}, "class 1"),
}


@pytest.mark.parametrize("protocol", BYTES_PROTOCOLS)
@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_request_of_the_wrong_shape_is_refused(name, protocol):
    change, message = WRONG[name]
    fields = request()
    if change is None:
        del fields["url"]
    else:
        fields.update(change)
    with pytest.raises(LegacyEntryError, match=message):
        read_legacy_request(pickle.dumps(fields, protocol=protocol))


def test_an_oversized_entry_is_refused_unread():
    data = pickle.dumps(request(), protocol=5)
    assert read_legacy_request(data, max_bytes=len(data)) == request()
    with pytest.raises(LegacyEntryError, match=f"entry of {len(data)} bytes, over the bound of {len(data) - 1}"):
        read_legacy_request(data, max_bytes=len(data) - 1)
    with pytest.raises(LegacyEntryError, match="over the bound of 1048576"):
        read_legacy_request(b"\x80\x04" + b"N" * LEGACY_ENTRY_MAX_BYTES)


@pytest.mark.parametrize("value", ["http://h/", None, 1, [b"x"]])
def test_anything_but_bytes_is_refused(value):
    with pytest.raises(LegacyEntryError, match="an entry is bytes"):
        read_legacy_request(value)


@pytest.mark.parametrize("seed", range(20))
def test_random_garbage_is_refused(seed):
    rng = random.Random(seed)
    for size in (1, 2, 16, 100, 1000, 100_000):
        for prefix in (b"", b"\x80\x05", b"\x80\x04\x95" + size.to_bytes(8, "little")):
            with pytest.raises(LegacyEntryError):
                read_legacy_request(prefix + rng.randbytes(size))


# Properties.


def plain_text():
    return st.text(st.characters(exclude_categories=()), max_size=30)  # lone surrogates too


def requests(protocol):
    """Request dicts as ``read_legacy_request`` returns them, of what *protocol* pickles as data."""
    texts = plain_text()
    meta = st.fixed_dictionaries(
        {},
        optional={
            "depth": st.integers(0, MAX_DEPTH),
            "tse_found_at": st.integers(0, MAX_DEPTH),
            "tse_link": texts,
            "tse_found_on": texts,
            "tse_judged_before": st.lists(st.tuples(texts, texts), max_size=4),
            "download_slot": texts,
            "redirect_urls": st.lists(texts, max_size=3),
            "download_latency": st.floats(allow_nan=False),
            "retry_times": st.integers(-(2**63), 2**64 - 1),
            "nested": st.recursive(
                st.none() | st.booleans() | st.integers(-(2**63), 2**63) | texts,
                lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                max_leaves=10,
            ),
            **({"tags": st.frozensets(texts, max_size=3)} if protocol >= 4 else {}),
            **({"raw": st.binary(max_size=20)} if protocol >= 3 else {}),
        },
    )
    names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True)
    headers = st.dictionaries(
        st.binary(min_size=1, max_size=20), st.lists(st.binary(max_size=40), max_size=3), max_size=8
    )
    optional = {
        "callback": st.none() | names,
        "errback": st.none() | names,
        "method": st.sampled_from(sorted(legacyentries.METHODS)),
        "headers": headers if protocol >= 3 else st.just({}),
        "cookies": st.just({}),
        "meta": meta,
        "encoding": st.sampled_from(["utf-8", "latin-1", "cp1252", "ascii"]),
        "priority": st.integers(-(2**31), 2**31 - 1),
        "dont_filter": st.booleans(),
        "flags": st.lists(st.text(max_size=20), max_size=3),
        "cb_kwargs": st.just({}),
    }
    if protocol >= 3:
        optional["body"] = st.binary(max_size=200)
    url = st.builds(str.__add__, st.sampled_from(["http://", "https://", "HTTP://", "hTtPs://"]), texts)
    return st.fixed_dictionaries({"url": url | st.just("data:,")}, optional=optional)


@st.composite
def pickled_requests(draw):
    protocol = draw(st.sampled_from(PROTOCOLS))
    fields = draw(requests(protocol))
    return fields, pickle.dumps(fields, protocol=protocol)


@given(pickled_requests())
def test_property_a_pickled_request_is_read_back(case):
    fields, data = case
    assert read_legacy_request(data) == fields


@given(st.binary(max_size=2000))
def test_property_any_bytes_give_a_dict_or_a_legacy_entry_error(data):
    try:
        assert isinstance(read_legacy_request(data), dict)
    except LegacyEntryError:
        pass


@settings(max_examples=300)
@given(pickled_requests(), st.data())
def test_property_a_damaged_pickle_gives_a_dict_or_a_legacy_entry_error(case, draw):
    _, data = case
    where = draw.draw(st.integers(0, len(data)))
    damage = draw.draw(st.binary(max_size=4))
    cut = draw.draw(st.integers(0, 4))
    try:
        assert isinstance(read_legacy_request(data[:where] + damage + data[where + cut :]), dict)
    except LegacyEntryError:
        pass
