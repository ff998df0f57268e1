"""Frontier entries as data (rules/files/frontierentries.py): what round-trips, what is refused."""

import pickle

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.files.frontierentries import (
    ENTRY_VERSION,
    MAX_ENTRY_BYTES,
    EntryError,
    RequestData,
    decode_entry,
    encode_entry,
)

FINGERPRINT = bytes(range(16))


def fields(**changed):
    """The fields of a good entry, some *changed*."""
    good = dict(
        version=ENTRY_VERSION,
        url="http://a.test/b.html",
        method="GET",
        headers=[],
        body=b"",
        meta={"depth": 1},
        priority=0,
        dont_filter=False,
        callback="parse",
        errback="fetch_failed",
    )
    good.update(changed)
    return FINGERPRINT + msgpack.packb(list(good.values()), use_bin_type=True)


@pytest.mark.parametrize(
    "request_data",
    [
        RequestData("http://a.test/"),
        RequestData("https://b.test/x?y=1#z", meta={"depth": 3, "tse_found_at": 2, "tse_found_on": "http://b.test/"}),
        RequestData("http://a.test/é", headers=((b"Accept", b"text/html"), (b"Accept", b"*/*")), body=b"\x00\xff"),
        RequestData("http://a.test/", method="POST", priority=-5, callback="parse"),
        RequestData("data:,", meta={"tse_link": "mailto:\udcff", "depth": 2}),  # the spider's placeholder
        RequestData("http://xn--80ak6aa92e.test/путь", meta={"tse_link": "http://例え.テスト/"}),
    ],
)
def test_a_request_round_trips(request_data):
    assert decode_entry(encode_entry(FINGERPRINT, request_data)) == (FINGERPRINT, request_data)


def test_only_the_meta_keys_tse_sets_are_stored():
    entry = encode_entry(FINGERPRINT, RequestData("http://a.test/", meta={"depth": 1, "download_slot": "x"}))
    assert decode_entry(entry)[1].meta == {"depth": 1}


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (b"", "too short"),
        (FINGERPRINT, "too short"),
        (FINGERPRINT + pickle.dumps({"url": "http://a.test/"}), "not a frontier entry"),
        (b"\x80\x05" + pickle.dumps({"url": "http://a.test/"}), "not a frontier entry"),
        (fields(version=2), "version 2"),
        (fields(version=True), "version True"),
        (FINGERPRINT + msgpack.packb([ENTRY_VERSION, "http://a.test/"]), "2 fields"),
        (fields()[:-3], "not a frontier entry"),
        (fields() + b"\x00", "not a frontier entry"),  # extra data
        (fields(url="file:///etc/passwd"), "not an http(s) URL"),
        (fields(url="javascript:alert(1)"), "not an http(s) URL"),
        (fields(url="http://a.test/" + "x" * 9000), "over 8192"),
        (fields(method="TRACE"), "method"),
        (fields(headers=[b"only a name"]), "headers"),
        (fields(headers=["Accept", "text/html"]), "not bytes"),
        (fields(body="text"), "body is not bytes"),
        (fields(meta={"depth": -1}), "depth"),
        (fields(meta={"depth": "1"}), "depth"),
        (fields(meta={"depth": True}), "depth"),
        (fields(meta={"cookiejar": 1}), "not one tse sets"),
        (fields(meta={"tse_found_on": 3}), "tse_found_on"),
        (fields(meta=[]), "meta is not a map"),
        (fields(priority=2**40), "priority"),
        (fields(dont_filter=0), "dont_filter"),
        (fields(dont_filter=True), "dont_filter is not false"),  # Scrapy's offsite check would let it by
        (fields(method=["GET"]), "method"),  # an unhashable value where a name is
        (fields(callback={"a": 1}), "callback"),
        (fields(callback="__import__('os').system"), "callback"),
        (fields(callback="closed"), "callback"),  # a method of the spider, but not one a request calls back
        (fields(errback=7), "errback"),
        (FINGERPRINT + msgpack.packb([ENTRY_VERSION, msgpack.ExtType(1, b"x")] + [0] * 8), "not a frontier entry"),
        (fields(body=b"x" * (MAX_ENTRY_BYTES)), "over the bound"),
    ],
)
def test_what_is_not_an_entry_of_this_version_is_refused(entry, why):
    with pytest.raises(EntryError, match=why.replace("(", r"\(").replace(")", r"\)")):
        decode_entry(entry)


urls = st.builds(lambda scheme, rest: f"{scheme}://{rest}", st.sampled_from(["http", "https", "HTTP"]), st.text())
requests = st.builds(
    RequestData,
    url=urls.filter(lambda url: len(url) <= 8192),
    method=st.sampled_from(["GET", "HEAD", "POST"]),
    headers=st.lists(st.tuples(st.binary(max_size=50), st.binary(max_size=50)), max_size=5).map(tuple),
    body=st.binary(max_size=200),
    meta=st.fixed_dictionaries(
        {}, optional={"depth": st.integers(0, 1000), "tse_found_on": st.text(max_size=100), "tse_link": st.text()}
    ),
    priority=st.integers(-(2**31), 2**31 - 1),
    dont_filter=st.just(False),
    callback=st.sampled_from([None, "parse"]),
    errback=st.sampled_from([None, "fetch_failed"]),
)


@given(requests)
def test_every_request_round_trips(request_data):
    assert decode_entry(encode_entry(FINGERPRINT, request_data)) == (FINGERPRINT, request_data)


@given(st.binary(max_size=300))
def test_any_bytes_are_an_entry_or_refused_with_entry_error(data):
    try:
        fingerprint, request_data = decode_entry(data)
    except EntryError:
        return
    assert fingerprint == data[:16] and isinstance(request_data, RequestData)


@given(requests, st.integers(0, 400))
def test_a_truncated_entry_is_refused(request_data, cut):
    entry = encode_entry(FINGERPRINT, request_data)
    if cut < len(entry):
        with pytest.raises(EntryError):
            decode_entry(entry[:cut])


# What tse itself queues in a crawl of maxDepth 2 (``tse_request``), and what a forged entry asks besides.
TSE_QUEUES = dict(callback="parse", errback="fetch_failed")


@pytest.mark.parametrize(
    ("request_data", "refused"),
    [
        (RequestData("http://a.test/", meta={"depth": 0}, **TSE_QUEUES), None),
        (RequestData("http://a.test/x", meta={"depth": 2, "tse_found_at": 1}, **TSE_QUEUES), None),
        (
            RequestData("http://a.test/", headers=((b"Referer", b"http://a.test/"),), meta={"depth": 1}, **TSE_QUEUES),
            None,
        ),
        (RequestData("http://a.test/", method="POST", meta={"depth": 1}, **TSE_QUEUES), "method POST"),
        (RequestData("http://a.test/", method="HEAD", meta={"depth": 1}, **TSE_QUEUES), "method HEAD"),
        (
            RequestData("http://a.test/", headers=((b"Authorization", b"Bearer x"),), meta={"depth": 1}, **TSE_QUEUES),
            "headers",
        ),
        (
            RequestData("http://a.test/", headers=((b"Referer", b"javascript:x"),), meta={"depth": 1}, **TSE_QUEUES),
            "headers",
        ),
        (RequestData("http://a.test/", body=b"x", meta={"depth": 1}, **TSE_QUEUES), "a body"),
        (RequestData("http://a.test/", meta={"depth": 1}, callback="parse"), "errback None"),
        (RequestData("http://a.test/", meta={"depth": 3}, **TSE_QUEUES), "depth 3"),
        (RequestData("http://a.test/", **TSE_QUEUES), "depth None"),
        (RequestData("data:,", meta={"depth": 1}, **TSE_QUEUES), "the placeholder"),
    ],
)
def test_workers_take_only_what_tse_queues(request_data, refused):
    entry = encode_entry(FINGERPRINT, request_data)
    assert decode_entry(entry) == (FINGERPRINT, request_data)  # (any version's checks pass)
    if refused is None:
        assert decode_entry(entry, 2) == (FINGERPRINT, request_data)
    else:
        with pytest.raises(EntryError, match=refused):
            decode_entry(entry, 2)


@given(st.integers(0, 5), st.integers(0, 5))
def test_a_request_tse_queues_is_taken_to_the_crawls_depth(depth, max_depth):
    entry = encode_entry(FINGERPRINT, RequestData("http://a.test/", meta={"depth": depth}, **TSE_QUEUES))
    if depth <= max_depth:
        assert decode_entry(entry, max_depth)[1].meta["depth"] == depth
    else:
        with pytest.raises(EntryError, match=f"depth {depth}"):
            decode_entry(entry, max_depth)
