"""`tse serve` keeps the answers it sent and sends them again when the same search is asked again:
the same bytes a server keeping nothing sends, for each reader's Accept-Language, and never an answer of
an index it no longer answers from (search/answercache.py)."""

from __future__ import annotations

import http.client
import shutil
import subprocess

import pytest
from starlette.requests import Request
from starlette.responses import Response

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.multilingual import indexed_fixture_directory
from tests.support.serving import QUICK_LOOKS, tse_serve
from tests.support.wait import wait_until
from tse_scrapy.search.answercache import ENTRY_OVERHEAD, LARGEST_SHARE, MAX_KEY_BYTES, AnswerCache

# Searches of the committed multilingual pages (real text in ten languages), the page and the API, with
# the parameters a reader's browser sends (a language chosen, a second page, another ranking, a typo).
PATHS = [
    "/api/search?q=debian",
    "/api/search?q=debian&page=2&per_page=3",
    "/api/search?q=debian&lang=fr",
    "/api/search?q=paquet",
    "/api/search?q=d%C3%A9bian+-apt",
    "/api/search?q=%E3%83%91%E3%83%83%E3%82%B1%E3%83%BC%E3%82%B8",  # パッケージ
    "/api/search?q=%D8%AF%D8%A8%DB%8C%D8%A7%D9%86",  # دبیان
    "/api/search?q=debain",
    "/api/search?q=apt&rank=bm25",
    "/search?q=debian",
    "/search?q=debian&page=2",
    "/search?q=%D0%BF%D0%B0%D0%BA%D0%B5%D1%82",  # пакет
]
# Readers whose browsers ask for other languages first: the same search ranks their language's pages higher.
READERS = ["", "fr", "de-DE,de;q=0.9", "ja", "ru,en;q=0.5"]


def _get(connection: http.client.HTTPConnection, path: str, language: str) -> tuple[int, bytes, str | None]:
    connection.request("GET", path, headers={"Accept-Language": language} if language else {})
    response = connection.getresponse()
    return response.status, response.read(), response.getheader("Content-Type")


def _answers(base: str, rounds: int) -> list[dict[tuple[str, str], tuple[int, bytes, str | None]]]:
    """Each path's answer for each reader, asked *rounds* times over one kept-alive connection."""
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=30)
    try:
        return [
            {(path, reader): _get(connection, path, reader) for path in PATHS for reader in READERS}
            for _ in range(rounds)
        ]
    finally:
        connection.close()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    return indexed_fixture_directory(tmp_path_factory.mktemp("answercache"))


def test_answers_asked_again_are_the_bytes_a_server_keeping_none_sends(indexed):
    pages, index = indexed
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "1"]
    with tse_serve([*command, "--answer-cache", "0"], clean_env(), ROOT) as keeping_none:
        expected = _answers(keeping_none.base, 1)[0]
    with tse_serve(command, clean_env(), ROOT) as keeping:
        first, again = _answers(keeping.base, 2)
    assert {status for status, _, _ in expected.values()} == {200}
    # Readers of other languages got other answers (else the test could not see one sent to the wrong reader).
    assert expected["/api/search?q=debian", ""] != expected["/api/search?q=debian", "fr"]
    assert expected["/search?q=debian", ""] != expected["/search?q=debian", "ja"]
    assert first == expected
    assert again == expected


def test_a_new_index_is_answered_from_not_the_answers_of_the_one_before(tmp_path, indexed):
    pages, index = tmp_path / "pages", tmp_path / "pages.index"
    shutil.copytree(indexed[0], pages)
    assert run_tse("index", pages, index).returncode == 0
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(**QUICK_LOOKS), ROOT) as run:
        connection = http.client.HTTPConnection(run.base.removeprefix("http://"), timeout=30)
        for _ in range(4):  # kept by both processes (each connection goes to one of them)
            status, body, _ = _get(connection, "/api/search?q=zyxwvutsrq", "")
            assert status == 200 and b'"total":0' in body
            connection.close()
        first = pages / "1"
        first.write_bytes(first.read_bytes() + b"\n<p>zyxwvutsrq</p>\n")
        rebuilt = run_tse("index", pages, index)
        assert rebuilt.returncode == 0, rebuilt.stderr.decode()

        def found() -> bool:
            connection.close()
            return all(b'"total":1' in _get(connection, "/api/search?q=zyxwvutsrq", "")[1] for _ in range(4))

        wait_until(found, 30, "the answers of the index before were sent again")
        connection.close()


@pytest.mark.parametrize("megabytes", ["-1", "nan", "inf", "4097", "lots"])
def test_an_answer_cache_out_of_range_is_one_line_and_exit_2(indexed, megabytes):
    pages, index = indexed
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--port", "0", "--answer-cache", megabytes]
    refused = subprocess.run(command, capture_output=True, env=clean_env(), cwd=ROOT, timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.decode().count("\n") == 1 and "Traceback" not in refused.stderr.decode()
    assert "--answer-cache" in refused.stderr.decode() or "answer-cache" in refused.stderr.decode()


def _request(path: str, query: bytes = b"", language: str = "") -> Request:
    headers = [(b"accept-language", language.encode())] if language else []
    return Request({"type": "http", "method": "GET", "path": path, "query_string": query, "headers": headers})


def _response(body: bytes, status: int = 200) -> Response:
    return Response(body, status, media_type="application/json")


INDEX, GONE = object(), frozenset({3})


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        (("/api/search", b"q=a", ""), ("/api/search", b"q=a", ""), True),
        (("/api/search", b"q=a", ""), ("/api/search", b"q=b", ""), False),
        (("/api/search", b"q=a", ""), ("/search", b"q=a", ""), False),
        (("/api/search", b"q=a", "fr"), ("/api/search", b"q=a", "de"), False),
        (("/api/search", b"q=a", "fr"), ("/api/search", b"q=a", ""), False),
        (("/api/search", b"q=a&page=2", ""), ("/api/search", b"page=2&q=a", ""), False),  # (kept as sent)
        (("/api/search", "q=日本".encode(), ""), ("/api/search", "q=日本".encode(), ""), True),
    ],
)
def test_an_answer_is_kept_for_its_path_query_string_and_accept_language(first, second, same):
    cache = AnswerCache()
    cache.keep(cache.key(_request(*first)), (INDEX, GONE), _response(b"first"))
    again = cache.answer(cache.key(_request(*second)), (INDEX, GONE))
    assert (again is not None and again.body == b"first") is same


def test_a_kept_answer_is_sent_with_its_headers():
    cache, key = AnswerCache(), AnswerCache.key(_request("/api/search", b"q=a"))
    response = _response(b'{"total":0}')
    response.headers["Vary"] = "Accept-Language"
    cache.keep(key, (INDEX, GONE), response)
    again = cache.answer(key, (INDEX, GONE))
    assert again is not None and again.status_code == 200 and again.body == b'{"total":0}'
    assert again.headers["vary"] == "Accept-Language" and again.headers["content-length"] == "11"
    assert again.headers["content-type"] == "application/json"


def test_only_whole_successful_answers_of_bounded_queries_are_kept():
    cache = AnswerCache()
    for status in (400, 404, 303, 500):
        key = cache.key(_request("/api/search", b"q=%d" % status))
        cache.keep(key, (INDEX, GONE), _response(b"refused", status))
        assert cache.answer(key, (INDEX, GONE)) is None
    assert AnswerCache.key(_request("/api/search", b"q=" + b"a" * MAX_KEY_BYTES)) is None
    assert AnswerCache.key(_request("/api/search", b"q=" + b"a" * (MAX_KEY_BYTES - 2))) is not None
    assert cache.answer(None, (INDEX, GONE)) is None and len(cache) == 0


def test_nothing_is_kept_with_a_bound_of_zero():
    cache, key = AnswerCache(0), AnswerCache.key(_request("/api/search", b"q=a"))
    cache.keep(key, (INDEX, GONE), _response(b"x"))
    assert cache.answer(key, (INDEX, GONE)) is None and len(cache) == 0


def test_another_index_or_other_gone_pages_drop_every_answer():
    cache, key = AnswerCache(), AnswerCache.key(_request("/api/search", b"q=a"))
    for other in ((object(), GONE), (INDEX, frozenset({3}))):  # (an equal gone list, but read anew)
        cache.keep(key, (INDEX, GONE), _response(b"x"))
        assert cache.answer(key, (INDEX, GONE)) is not None
        assert cache.answer(key, other) is None and len(cache) == 0 and cache.bytes_kept == 0
        assert cache.answer(key, (INDEX, GONE)) is None  # (gone for good, not kept aside)


def test_the_bound_holds_and_the_answer_used_longest_ago_goes_first():
    limit = 64 * 1024
    cache = AnswerCache(limit)
    body = b"x" * (limit // LARGEST_SHARE - ENTRY_OVERHEAD - 1000)  # (its key, headers and objects: the rest)
    keys = [AnswerCache.key(_request("/api/search", b"q=%d" % number)) for number in range(40)]
    for number, key in enumerate(keys):
        cache.keep(key, (INDEX, GONE), _response(body))
        assert cache.bytes_kept <= limit
        if number >= 1:
            assert cache.answer(keys[0], (INDEX, GONE)) is not None  # used again each time: kept throughout
    assert 10 <= len(cache) < 40
    assert cache.answer(keys[1], (INDEX, GONE)) is None  # the oldest not used again went first
    assert cache.answer(keys[-1], (INDEX, GONE)) is not None
    # An answer larger than a sixteenth of the bound is sent, not kept.
    large = AnswerCache.key(_request("/api/search", b"q=large"))
    cache.keep(large, (INDEX, GONE), _response(b"x" * (limit // LARGEST_SHARE)))
    assert cache.answer(large, (INDEX, GONE)) is None


@pytest.mark.parametrize("body_bytes", [80, 5000])
def test_the_memory_answers_take_stays_within_the_bound(body_bytes):
    # Counted by their bytes alone, 20,000 empty results (the answers of a server asked many different
    # words no page holds) took 1.8 times the bound: their objects weigh more than their bytes.
    import gc
    import tracemalloc

    limit = 1024 * 1024
    cache = AnswerCache(limit)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(limit // 100):
            request = _request("/api/search", b"q=w%d" % number, "en-US,en;q=0.9")
            response = Response(
                b"x" * body_bytes, headers={"X-Content-Type-Options": "nosniff"}, media_type="application/json"
            )
            response.headers["Vary"] = "Accept-Language"
            cache.keep(AnswerCache.key(request), (INDEX, GONE), response)
        del request, response
        gc.collect()
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.bytes_kept <= limit
    assert taken <= limit * 1.05, (taken, len(cache))
