"""The distributed crawl's Redis parts on a real Redis: frontier leases, the
breadth-first gate, docID reservations, joining a crawl."""

import socket
import threading
import time

import pytest
import redis
import scrapy

from tests.support.planted import Planted
from tse_scrapy.distributed.extension import fill_doc_id_holes
from tse_scrapy.distributed.join import create_or_join_crawl
from tse_scrapy.distributed.keys import CrawlKeys
from tse_scrapy.distributed.queue import LeasedLevelQueue
from tse_scrapy.distributed.store import RedisCrawl, connect, url_fingerprint
from tse_scrapy.rules.crawling.crawlargs import ArgumentError
from tse_scrapy.rules.files import pagedir

SPIDER = scrapy.Spider(name="t")
SEED = "http://a.test/index.html"


KEYS = CrawlKeys("t")


def queue(url, lease_seconds=30.0) -> LeasedLevelQueue:
    """A worker's queue, its worker's mark (saying its lease time) written as its extension does."""
    server = redis.Redis.from_url(url)
    q = LeasedLevelQueue(server, SPIDER, KEYS.frontier, keys=KEYS, lease_seconds=lease_seconds)
    RedisCrawl(server, "t").register_worker(q.name, lease_seconds)
    return q


def push(q, path, depth) -> bool:
    url = f"http://a.test/{path}"
    return q.push_unseen(scrapy.Request(url, meta={"depth": depth}), url_fingerprint(url))


def lease_one(q) -> scrapy.Request | None:
    """The next request *q* may hand out, leased, or None."""
    leased = q.settle(lease=1)[1]
    return leased[0] if leased else None


def finish(q, request, saved=False, failed=False) -> None:
    """*request*'s page is over: saved under its own URL, failed, or neither (the docID stays reserved)."""
    fingerprint = request.meta["tse_reserved"].fingerprint
    q.settle(finished=[(request.meta["tse_lease"], fingerprint if saved else b"", fingerprint if failed else b"")])


def test_shallowest_first_then_first_pushed(redis_url):
    q = queue(redis_url)
    for path, depth in [("b", 2), ("a", 1), ("c", 1), ("d", 2)]:
        assert push(q, path, depth)
    popped = []
    while (request := lease_one(q)) is not None:
        popped.append(request.url.rsplit("/", 1)[1])
        finish(q, request, saved=True)
    assert popped == ["a", "c", "b", "d"]


def test_a_url_is_queued_once(redis_url):
    q = queue(redis_url)
    assert push(q, "a", 1)
    assert not push(q, "a", 2)
    assert len(q) == 1


def test_deeper_pages_wait_while_a_shallower_one_is_leased(redis_url):
    q = queue(redis_url)
    push(q, "a", 0)
    push(q, "b", 1)
    first = lease_one(q)
    assert lease_one(q) is None  # b (depth 1) waits for a (depth 0)
    finish(q, first, saved=True)
    assert lease_one(q).url.endswith("/b")


def test_an_expired_lease_returns_its_request_to_its_place(redis_url):
    dead, alive = queue(redis_url, lease_seconds=0.2), queue(redis_url)
    push(dead, "a", 1)
    push(dead, "b", 1)
    taken = lease_one(dead)
    assert taken.url.endswith("/a")
    assert lease_one(alive).url.endswith("/b")
    time.sleep(0.3)
    again = lease_one(alive)
    assert again.url.endswith("/a") and again.meta["tse_lease"] != taken.meta["tse_lease"]
    finish(dead, taken)  # too late: it is someone else's now...
    assert alive.server.zscore(KEYS.leases, again.meta["tse_lease"])  # ...and stays theirs


def test_renewed_leases_do_not_expire(redis_url):
    q = queue(redis_url, lease_seconds=0.3)
    push(q, "a", 0)
    lease = lease_one(q).meta["tse_lease"]
    for _ in range(4):
        time.sleep(0.15)
        assert q.renew([lease]) == set()  # none lost
    assert lease_one(q) is None and q.server.zcard(KEYS.leases) == 1


def test_a_lease_taken_back_is_reported_lost_by_renew(redis_url):
    dead, alive = queue(redis_url, lease_seconds=0.2), queue(redis_url)
    push(dead, "a", 0)
    lease = lease_one(dead).meta["tse_lease"]
    time.sleep(0.3)
    assert lease_one(alive).url.endswith("/a")  # taken back
    assert dead.renew([lease]) == {lease}


def test_given_back_leases_are_taken_at_once(redis_url):
    q = queue(redis_url)
    push(q, "a", 0)
    q.give_back([lease_one(q).meta["tse_lease"]])
    assert lease_one(q).url.endswith("/a")


def test_seen_keys_owned_by_an_expired_lease_are_forgotten(redis_url):
    q = queue(redis_url, lease_seconds=0.2)
    push(q, "a", 0)
    lease = lease_one(q).meta["tse_lease"]
    target = url_fingerprint("http://a.test/redirected")
    assert q.own_seen(lease, target)
    assert not q.own_seen(lease, target)
    time.sleep(0.3)
    assert lease_one(q).url.endswith("/a")
    assert q.server.sismember(KEYS.seen, target) == 0  # the second fetch may follow it again


def test_a_url_keeps_its_reserved_doc_id_and_is_saved_once(redis_url):
    crawl = RedisCrawl(redis.Redis.from_url(redis_url), "t")
    q = queue(redis_url)
    for path in "ab":
        push(q, path, 1)
    a, b = q.settle(lease=2)[1]
    assert [r.meta["tse_reserved"].doc_id for r in (a, b)] == [1, 2]  # reserved when leased
    a_key, c_key = a.meta["tse_reserved"].fingerprint, url_fingerprint("http://a.test/c")
    assert crawl.reserve_doc_id(a_key) == (1, False)  # a worker died mid-save: same docID
    finish(q, a, saved=True)
    assert crawl.reserve_doc_id(a_key) == (1, True)  # saved: not again
    finish(q, b, failed=True)  # b failed after all
    assert crawl.free_doc_ids() == [2]
    assert crawl.reserve_doc_id(c_key) == (2, False)  # the next page takes the hole
    assert crawl.free_doc_ids() == []


def test_only_one_worker_cleans_up_a_finished_crawl_even_after_its_keys_are_removed(redis_url):
    # Worker B found the crawl over (its status) while worker A was cleaning up; A has removed the
    # keys, its finishing mark with them.  B must not clean up again: the crawl's last docID would
    # read 0 and every page file be "past" it (a distributed test lost all its pages so, rarely).
    server = redis.Redis.from_url(redis_url)
    a, b = RedisCrawl(server, "t"), RedisCrawl(server, "t")
    a.create({"seeds": ["http://a.test/"]})
    over = b.status()
    assert over["exists"] and a.claim_finish() and not b.claim_finish()
    a.remove()
    assert not b.claim_finish() and a.last_doc_id() == 0
    assert not server.exists(a.keys.finishing)  # (nothing left behind either)


def leased_again_after_expiry(redis_url):
    """Worker W1 leases u and its lease runs out; W2 leases u again.  Returns the crawl,
    both workers' queues and both requests of u (W1's stale one, W2's current one)."""
    crawl = RedisCrawl(redis.Redis.from_url(redis_url), "t")
    w1, w2 = queue(redis_url, lease_seconds=0.2), queue(redis_url)
    push(w1, "u", 1)
    stale = lease_one(w1)
    time.sleep(0.3)
    return crawl, w1, w2, stale, lease_one(w2)


def test_a_stale_worker_neither_frees_nor_records_a_docid_that_is_another_leases(redis_url):
    """W1's lease on u runs out and W2 leases u again, with its docID 1; W1's fetch of u
    fails: docID 1 stays W2's, which saves u as page 1 (no other page may get it)."""
    crawl, w1, w2, stale, current = leased_again_after_expiry(redis_url)
    assert current.url == stale.url and current.meta["tse_reserved"].doc_id == 1
    finish(w1, stale, failed=True)  # W1's fetch failed: docID 1 is not W1's to free...
    assert crawl.free_doc_ids() == []
    push(w1, "v", 1)
    assert lease_one(w1).meta["tse_reserved"].doc_id == 2  # ...so v does not get it
    assert w2.server.zscore(KEYS.leases, current.meta["tse_lease"])  # W2's lease stands
    finish(w2, current, saved=True)
    assert crawl.reserve_doc_id(current.meta["tse_reserved"].fingerprint) == (1, True)


def test_a_stale_workers_late_save_leaves_the_docid_to_the_page_leased_again(redis_url):
    """W1 wrote u as page 1 after its lease ran out; W2's fetch of u fails: docID 1 is
    freed, not recorded for u, and the next page leased overwrites file 1."""
    crawl, w1, w2, stale, current = leased_again_after_expiry(redis_url)
    finish(w1, stale, saved=True)  # too late: not W1's to record
    assert crawl.reserve_doc_id(stale.meta["tse_reserved"].fingerprint) == (1, False)
    assert w2.server.zscore(KEYS.leases, current.meta["tse_lease"])  # W2's lease stands
    finish(w2, current, failed=True)
    assert crawl.free_doc_ids() == [1]
    assert w2.server.hlen(KEYS.pages) == 0  # u is not saved: its last fetch failed
    push(w2, "v", 1)
    assert lease_one(w2).meta["tse_reserved"].doc_id == 1


def test_the_first_worker_creates_later_ones_join_with_the_name(redis_url, tmp_path):
    crawl, args, created = create_or_join_crawl(
        redis_url, None, dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/")
    )
    assert created and args.order == "bfs"
    joined, joined_args, created = create_or_join_crawl(redis_url, crawl.name, {})
    assert joined.name == crawl.name and not created and joined_args == args
    again, _, created = create_or_join_crawl(redis_url, None, dict(seed=SEED, depth=2))
    assert again.name == crawl.name and not created


@pytest.mark.parametrize(
    "name, arguments, message",
    [
        ("nope", {}, "no crawl named nope"),
        (None, {}, "needs its seed(s) or its name"),
        (None, dict(seed=SEED, depth="3"), "has depth=2, not 3"),
        (None, dict(seed=SEED, order="tse"), "breadth-first"),
        ("bad name", {}, "crawl name must be"),
        ("polite", {}, "crawl name polite is reserved"),
    ],
)
def test_joining_is_refused_with_one_line(redis_url, tmp_path, name, arguments, message):
    create_or_join_crawl(redis_url, None, dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/"))
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        create_or_join_crawl(redis_url, name, arguments)


def test_an_unreachable_redis_is_one_line(tmp_path):
    with pytest.raises(ArgumentError, match=r"cannot use Redis at redis://127\.0\.0\.1:1/0"):
        create_or_join_crawl(
            "redis://127.0.0.1:1/0", None, dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/")
        )


def test_rediss_to_a_plain_port_is_one_line_after_one_try(redis_server, tmp_path):
    # A TLS handshake with a plain Redis gets no answer: the first question is asked once (it was asked
    # four times, 41 s), and the line says what may be wrong.
    client = redis_server.client()
    before = client.info("stats")["total_connections_received"]
    # A 1 s timeout (a URL option redis-py takes) in place of the 10 s default: the test counts the tries.
    tls_url = redis_server.url.replace("redis://", "rediss://", 1) + "?socket_timeout=1&socket_connect_timeout=1"
    with pytest.raises(ArgumentError, match=r"cannot use Redis at rediss://.*no TLS answer") as refused:
        create_or_join_crawl(tls_url, None, dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/"))
    assert "\n" not in str(refused.value)
    assert client.info("stats")["total_connections_received"] - before == 1  # (four before)


def fill_holes_after(redis_url, directory, pages, failed):
    """Lease *pages* pages (docIDs 1..pages), fail those numbered in *failed* and save the others
    (URL http://a.test/N-1), then fill the holes: (the crawl, the moves made, the URL keys leased)."""
    crawl = RedisCrawl(redis.Redis.from_url(redis_url), "t")
    q = queue(redis_url)
    for n in range(pages):
        push(q, str(n), 1)
    leased = q.settle(lease=pages)[1]
    assert [request.meta["tse_reserved"].doc_id for request in leased] == list(range(1, pages + 1))
    for n, request in enumerate(leased, start=1):
        if n in failed:
            finish(q, request, failed=True)  # fetched again after a worker died, and failed
        else:
            pagedir.write_page(directory, n, pagedir.Page(f"http://a.test/{n - 1}", 1, b"x"))
            finish(q, request, saved=True)
    moves = []
    fill_doc_id_holes(crawl, directory, lambda old, new: moves.append((old, new)))
    return crawl, moves, [request.meta["tse_reserved"].fingerprint for request in leased]


def urls_in(directory):
    return [page.url for _, page in pagedir.read_pages(directory)]


def test_holes_left_by_failed_reservations_are_filled_with_the_last_pages(redis_url, tmp_path):
    crawl, moves, keys = fill_holes_after(redis_url, tmp_path, 5, failed=(2, 5))
    assert moves == [(4, 2)]  # 5 was the last docID, and freed: nothing moved into it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1", "2", "3"]
    assert urls_in(tmp_path) == ["http://a.test/0", "http://a.test/3", "http://a.test/2"]
    assert crawl.last_doc_id() == 3
    assert crawl.reserve_doc_id(keys[3]) == (2, True)  # the record follows the file


def test_a_page_fills_one_hole_at_most(redis_url, tmp_path):
    # Two holes just under the last page: it fills the lower one, and moves no further.
    crawl, moves, _ = fill_holes_after(redis_url, tmp_path, 6, failed=(4, 5))
    assert moves == [(6, 4)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1", "2", "3", "4"]
    assert urls_in(tmp_path) == [f"http://a.test/{n}" for n in (0, 1, 2, 5)]
    assert crawl.last_doc_id() == 4


def test_a_worker_joining_with_default_arguments_takes_the_crawls_own(redis_url, tmp_path):
    from tse_scrapy.cli import build_parser
    from tse_scrapy.crawlstart import prepare_crawl
    from tse_scrapy.spiders.tse import TseSpider

    arguments = dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/", links="tse")
    crawl, _, _ = create_or_join_crawl(redis_url, "links", arguments)
    settings = {"TSE_REDIS_URL": redis_url, "TSE_CRAWL_NAME": crawl.name}
    # What `scrapy crawl tse -s TSE_REDIS_URL=... -s TSE_CRAWL_NAME=...` gives: the spider's defaults.
    assert prepare_crawl(TseSpider().arguments, settings.get).args.links == "tse"
    # What `tse crawl --redis URL --name NAME` gives.
    options = build_parser().parse_args(["crawl", "--redis", redis_url, "--name", crawl.name])
    assert options.links is None and options.order is None


@pytest.mark.parametrize("key_type", ["string", "list"])
def test_a_crawl_record_that_is_not_one_is_refused_in_one_line(redis_url, key_type):
    client = redis.Redis.from_url(redis_url)
    if key_type == "string":
        client.set("tse:odd:params", "not json")
    else:
        client.lpush("tse:odd:params", "x")
    with pytest.raises(ArgumentError, match=r"^cannot read crawl odd in Redis at redis://"):
        create_or_join_crawl(redis_url, "odd", {})


@pytest.mark.parametrize("value, refused", [("0", False), ("", False), ("5", True), ("x", True)])
def test_any_page_limit_is_refused_in_a_distributed_crawl(value, refused):
    from tse_scrapy.distributed.join import check_no_page_limit

    setting = {"CLOSESPIDER_PAGECOUNT": value}.get
    if refused:
        with pytest.raises(ArgumentError, match="page limit"):
            check_no_page_limit(setting)
    else:
        check_no_page_limit(setting)


class AnswerLosingRelay:
    """A TCP relay to Redis on 127.0.0.1 that, once armed, passes the next EVALSHA
    on and then cuts the connection instead of passing its answer back: what
    a network fault after Redis ran a script looks like to the client."""

    def __init__(self, redis_url: str):
        self.target = ("127.0.0.1", int(redis_url.rsplit(":", 1)[1].split("/")[0]))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self.listener.getsockname()[1]}/0"
        self.armed = False
        self.answers_lost = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            cut = threading.Event()  # set: this connection loses the next answer
            threading.Thread(target=self._requests, args=(client, server, cut), daemon=True).start()
            threading.Thread(target=self._answers, args=(server, client, cut), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, cut: threading.Event) -> None:
        try:
            while data := client.recv(65536):
                if self.armed and b"EVALSHA" in data:
                    self.armed = False
                    cut.set()  # before Redis can answer
                server.sendall(data)
        except OSError:
            pass

    def _answers(self, server: socket.socket, client: socket.socket, cut: threading.Event) -> None:
        with client, server:
            try:
                while data := server.recv(65536):
                    if cut.is_set():
                        self.answers_lost += 1
                        # The script ran; the client sees its connection drop.
                        client.shutdown(socket.SHUT_RDWR)
                        return
                    client.sendall(data)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()


def test_a_settle_sent_again_after_a_lost_answer_is_not_run_twice(redis_url):
    relay = AnswerLosingRelay(redis_url)
    try:
        q = LeasedLevelQueue(connect(relay.url), SPIDER, KEYS.frontier, keys=KEYS)
        push(q, "index", 0)  # the scripts are loaded: the next EVALSHA runs settle
        (seed,) = q.settle(lease=1)[1]
        links = [
            q.link(scrapy.Request(f"http://a.test/{p}", meta={"depth": 1}), url_fingerprint(f"http://a.test/{p}"))
            for p in "ab"
        ]
        finished = [(seed.meta["tse_lease"], seed.meta["tse_reserved"].fingerprint, b"")]
        relay.armed = True
        queued, leased, _ = q.settle(links, finished, lease=4)  # redis-py sends it again
        assert relay.answers_lost == 1
    finally:
        relay.close()
    # The answer of the one run: both links new, both leased (not "seen", and none leased twice).
    assert queued == [True, True]
    assert [request.url for request in leased] == ["http://a.test/a", "http://a.test/b"]
    assert [request.meta["tse_reserved"].doc_id for request in leased] == [2, 3]
    assert q.server.zcard(KEYS.leases) == 2 and q.server.get(KEYS.doc_id) == b"3"


def quarantined(server) -> list[tuple[str, str]]:
    """(source key, why) of each quarantine record, newest first."""
    import msgpack

    return [
        (source.decode(), why.decode())
        for _, _, source, why, _, _ in (msgpack.unpackb(r, raw=True) for r in server.lrange(KEYS.quarantine, 0, -1))
    ]


@pytest.mark.parametrize("prefix", [0, 1, 15, 16, 17])
def test_a_planted_pickle_in_the_frontier_runs_nothing_and_is_quarantined(redis_url, tmp_path, prefix):
    import pickle

    server = redis.Redis.from_url(redis_url)
    q = queue(redis_url)
    push(q, "a", 1)
    evil = bytes(prefix) + pickle.dumps(Planted(tmp_path / "pwned"), protocol=pickle.HIGHEST_PROTOCOL)
    server.zadd(KEYS.frontier, {evil: 0})  # first in line, at depth 0: a (depth 1) waits for it
    settled = q.settle(lease=2)
    assert settled.leased == [] and len(settled.unreadable) == 1
    (a,) = q.settle(unreadable=settled.unreadable, lease=2).leased
    assert a.url == "http://a.test/a"
    # The docID reserved for the entry's first 16 bytes stays reserved (they could be a real
    # URL's): a has the next; the crawl's last worker frees it (test_store_leftovers below).
    assert a.meta["tse_reserved"].doc_id == 2
    assert not (tmp_path / "pwned").exists()
    assert quarantined(server) == [(KEYS.frontier, settled.unreadable[0][2])]
    assert server.zcard(KEYS.leases) == 1  # only a's
    assert server.hlen(KEYS.reserved) == 2 and server.zcard(KEYS.free_ids) == 0
    raw = server.lindex(KEYS.quarantine, 0)
    assert evil[:4000] in raw  # kept for its operator to look at


@pytest.mark.parametrize(
    "entry",
    [
        b"short",
        url_fingerprint("http://a.test/x") + b"\x95\x01",  # truncated msgpack
        url_fingerprint("http://a.test/x") + b"\x9a\x02" + b"\xc0" * 9,  # version 2
        url_fingerprint("http://a.test/x") + b"\xc4\xff" + b"x" * 70000,  # oversized
    ],
)
def test_malformed_entries_are_quarantined_and_the_next_request_is_leased(redis_url, entry):
    server = redis.Redis.from_url(redis_url)
    q = queue(redis_url)
    server.zadd(KEYS.frontier, {entry: 0})
    push(q, "a", 0)
    leased = []
    for _ in range(3):
        settled = q.settle(lease=1, unreadable=[])
        q.settle(unreadable=settled.unreadable)
        leased += settled.leased
    assert [r.url for r in leased] == ["http://a.test/a"]
    assert [source for source, _ in quarantined(server)] == [KEYS.frontier]


def test_planted_doc_ids_and_leases_are_quarantined_not_trusted(redis_url):
    server = redis.Redis.from_url(redis_url)
    q = queue(redis_url)
    fingerprint = url_fingerprint("http://a.test/a")
    server.zadd(KEYS.free_ids, {b"\x80\x04evil": 0})  # a free docID that is none
    server.hset(KEYS.pages, url_fingerprint("http://a.test/b"), b"\x80\x04evil")  # a saved page that is none
    server.zadd(KEYS.lease_scores, {b"ghost": 0})  # would hold every deeper page back
    server.zadd(KEYS.leases, {b"ghost": 2**52})  # would keep the crawl from ending
    push(q, "a", 1)
    push(q, "b", 1)
    (a, b), _ = lease_two(q)
    assert (a.meta["tse_reserved"].doc_id, b.meta["tse_reserved"].doc_id) == (1, 2)
    assert not b.meta["tse_reserved"].saved
    finish(q, a, saved=True)
    finish(q, b, saved=True)
    assert q.settle(lease=1).leased == []  # idle at the end: the ghost lease goes
    assert server.zcard(KEYS.leases) == 0
    assert sorted(source for source, _ in quarantined(server)) == sorted(
        [KEYS.free_ids, KEYS.pages, KEYS.lease_scores, KEYS.leases]
    )
    assert server.hgetall(KEYS.pages) == {fingerprint: b"1", url_fingerprint("http://a.test/b"): b"2"}


def test_a_forged_lease_holding_a_request_gates_no_deeper_page(redis_url):
    """A lease with a request and a score at depth 0, but an expiry no worker sets (past ten lease
    times): moved aside as soon as it gates a deeper page, the frontier not empty (it held a crawl)."""
    server = redis.Redis.from_url(redis_url)
    q = queue(redis_url)
    server.zadd(KEYS.lease_scores, {b"ghost": 0})
    server.zadd(KEYS.leases, {b"ghost": 2**50})
    server.hset(KEYS.leased, b"ghost", b"\x80\x04evil")
    push(q, "a", 1)
    assert lease_one(q).url == "http://a.test/a"
    assert sorted(source for source, _ in quarantined(server)) == sorted([KEYS.leases, KEYS.leased, KEYS.lease_scores])


def test_a_longer_lease_of_another_worker_stands(redis_url):
    """Workers may lease for different times: a lease ten of one worker's lease times ahead is
    another's (its mark says so), not a forged one, whether it gates that worker or none is queued."""
    server = redis.Redis.from_url(redis_url)
    patient, hasty = queue(redis_url, lease_seconds=60), queue(redis_url, lease_seconds=0.2)
    push(patient, "a", 1)
    held = lease_one(patient)
    assert lease_one(hasty) is None  # nothing queued
    push(patient, "b", 2)
    assert lease_one(hasty) is None  # b waits for a, a level up
    assert server.zscore(KEYS.leases, held.meta["tse_lease"]) and quarantined(server) == []
    finish(patient, held, saved=True)
    assert lease_one(hasty).url == "http://a.test/b"


def lease_two(q):
    settled = q.settle(lease=2)
    return settled.leased, settled.unreadable


def test_a_forged_entry_cannot_free_a_real_pages_doc_id(redis_url):
    server = redis.Redis.from_url(redis_url)
    q = queue(redis_url)
    push(q, "x", 0)
    (x,) = q.settle(lease=1).leased
    forged = x.meta["tse_reserved"].fingerprint + b"garbage"  # x's fingerprint, then no request
    server.zadd(KEYS.frontier, {forged: 0})
    settled = q.settle(lease=1)
    assert settled.leased == [] and len(settled.unreadable) == 1
    q.settle(unreadable=settled.unreadable)
    assert server.zcard(KEYS.free_ids) == 0  # x's docID is still x's
    finish(q, x, saved=True)
    assert server.hgetall(KEYS.pages) == {x.meta["tse_reserved"].fingerprint: b"1"}


def test_store_leftovers_free_unsaved_doc_ids_and_quarantine_the_rest(redis_url):
    server = redis.Redis.from_url(redis_url)
    crawl = RedisCrawl(server, "t")
    server.set(KEYS.doc_id, 4)
    saved = {url_fingerprint("http://a.test/1"): b"1", url_fingerprint("http://a.test/2"): b"2"}
    server.hset(KEYS.pages, mapping=saved)
    server.hset(KEYS.reserved, mapping={b"left by a quarantined entry": b"3", b"forged": b"2", b"evil": b"\x80\x04"})
    server.hset(KEYS.pages, b"\x80\x04evil", b"4")  # not a fingerprint
    assert crawl.quarantine_leftovers() == 3
    assert crawl.free_doc_ids() == [3]
    assert server.hlen(KEYS.reserved) == 0 and server.hlen(KEYS.pages) == 2
    assert sorted(source for source, _ in quarantined(server)) == [KEYS.pages, KEYS.reserved, KEYS.reserved]
