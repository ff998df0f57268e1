import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.settings import Settings

from tse_scrapy.rules.crawling.crawlargs import (
    EXTENSION_SETTINGS,
    ArgumentError,
    check_crawl_args,
    check_crawl_name,
    check_no_pages,
    check_same_crawl,
    check_setting_names,
    crawl_name,
    misspelt_setting,
    pages_held_refusal,
    setting_edits_allowed,
    setting_is_on,
)

SEED = "http://cs50tse.cs.dartmouth.edu/tse/letters/index.html"


def test_good_arguments_are_normalized(tmp_path):
    args = check_crawl_args("HTTP://CS50TSE.cs.dartmouth.edu/tse/letters//index.html", tmp_path, "3", _job="ignored")
    assert (args.seed, args.depth, args.order, args.links) == (SEED, 3, "tse", "html")
    assert args.prefixes == ("http://cs50tse.cs.dartmouth.edu/tse/",)


def test_own_prefixes(tmp_path):
    args = check_crawl_args(
        "http://127.0.0.1:9/b/x.html", tmp_path, 0, prefix="http://127.0.0.1:9/a/,HTTP://127.0.0.1:9/b/"
    )
    assert args.prefixes == ("http://127.0.0.1:9/a/", "http://127.0.0.1:9/b/")


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(seed=None), "missing argument: seed"),
        (dict(pagedir=""), "missing argument: pagedir"),
        (dict(depth=None), "missing argument: depth"),
        (dict(seed="letters/index.html"), "cannot be normalized"),
        # A page the crawl does not fetch for its extension: which way in (a tester's find).
        (dict(seed="http://cs50tse.cs.dartmouth.edu/tse/x.pdf"), "by its extension \\(--pdf takes PDFs, --deny-ext"),
        (dict(seed="http://cs50tse.cs.dartmouth.edu/tse/x.png"), "by its extension \\(--deny-ext replaces the rule\\)"),
        (dict(seed="https://en.wikipedia.org/wiki/Algorithm"), "not internal"),
        (dict(seed="http://cs50tse.cs.dartmouth.edu/index.html"), "not internal"),
        (dict(depth="two"), "must be an integer"),
        (dict(depth="1.5"), "must be an integer"),
        (dict(depth="-1"), "in [0, 10]"),
        (dict(depth="11"), "in [0, 10]"),
        (dict(order="dfs"), "order must be one of"),
        (dict(links="regex"), "links must be one of"),
        (dict(prefix="not a url"), "prefix must be"),
        (dict(prefix=","), "prefix is empty"),
        # No request can be made of these: a traceback, and a page directory left holding a crawl that
        # could not go on (a reviewer's find).
        (dict(prefix="http://127.0.0.1:99999/"), "prefix is not a URL a request can be made of \\(Port out of range"),
        (dict(prefix="http://h:+80/"), "prefix is not a URL a request can be made of \\(Port could not be cast"),
        (dict(prefix="http://[zz]/"), "prefix is not a URL a request can be made of \\('zz' does not appear"),
        (dict(seed="http://cs50tse.cs.dartmouth.edu:99999/tse/"), "seed URL is not a URL a request can be made of"),
        # A seed the filters keep out: nothing was fetched, said as "redirected out of the prefixes", exit 0.
        (dict(allow="/c1,/c2"), "seed URL matches no allow pattern \\(/c1, /c2\\)"),
        (dict(deny="lett?ers"), "seed URL matches the deny pattern lett\\?ers"),
    ],
)
def test_bad_arguments(tmp_path, changes, message):
    args = dict(seed=SEED, pagedir=str(tmp_path), depth="2") | changes
    with pytest.raises(ArgumentError, match=message.replace("[", r"\[").replace(".", r"\.")):
        check_crawl_args(**args)


def test_bad_page_directories(tmp_path):
    with pytest.raises(ArgumentError, match="does not exist"):
        check_crawl_args(SEED, tmp_path / "nope", 1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ArgumentError, match="not a directory"):
        check_crawl_args(SEED, tmp_path / "file", 1)
    (tmp_path / "d" / ".crawler").mkdir(parents=True)
    with pytest.raises(ArgumentError, match="cannot create"):
        check_crawl_args(SEED, tmp_path / "d", 1)


@pytest.mark.parametrize(
    ("seed", "prefix", "prefixes"),
    [
        # Prefixes as the crawl requests URLs (Scrapy's): one typed with other letters or spaces took no
        # request, and the crawl saved nothing, exit 0 (a reviewer's find). The seed stays as given.
        ("http://h/日本/index.html", "http://h/日本/", "http://h/%E6%97%A5%E6%9C%AC/"),
        ("http://h/my docs/a.html", "http://h/my docs/", "http://h/my%20docs/"),
        ("http://Bücher.example/a.html", "http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://h:/a.html", "http://h:/", "http://h/"),
        ("http://h/%E6%97%A5/a.html", "http://h/日/", "http://h/%E6%97%A5/"),
    ],
)
def test_prefixes_are_taken_as_the_crawl_requests_urls(tmp_path, seed, prefix, prefixes):
    args = check_crawl_args(seed, tmp_path, 1, prefix=prefix)
    assert (args.seeds, args.prefixes) == ((seed.replace("Bücher", "bücher"),), (prefixes,))


def test_several_seeds_are_normalized_once_each(tmp_path):
    args = check_crawl_args(f"{SEED},HTTP://cs50tse.cs.dartmouth.edu/tse/x.html,{SEED}", tmp_path, 1)
    assert args.seeds == (SEED, "http://cs50tse.cs.dartmouth.edu/tse/x.html")
    assert args.identity()["seed"] == ",".join(args.seeds)


@pytest.mark.parametrize(
    "seed, message",
    [
        (f"{SEED},https://elsewhere.example/", "not internal"),
        (",", "missing argument: seed"),
    ],
)
def test_every_seed_is_checked(tmp_path, seed, message):
    with pytest.raises(ArgumentError, match=message):
        check_crawl_args(seed, tmp_path, 1)


# Expected digests computed outside Python: printf %s 'SEEDS' | sha1sum (first 10 hex digits).
@pytest.mark.parametrize(
    "seeds, name",
    [
        ([SEED], "cs50tse.cs.dartmouth.edu-a7a82be609"),
        (["http://a.test/", "http://b.test/"], "a.test-7d2504268d"),
        (["http://[::1]:8080/x.html"], "-1-a66e808082"),
    ],
)
def test_crawl_name_examples(seeds, name):
    assert crawl_name(seeds) == name


@pytest.mark.parametrize(
    "name, refused",
    [
        ("example.com-0123456789", None),
        ("polite-2", None),
        ("Polite", None),  # (Redis keys are case-sensitive: tse:Polite:* is no lease)
        ("polite", "crawl name polite is reserved (the politeness leases use it)"),  # tse:polite:HOST: every lease
        ("*", "crawl name must be 1-100 letters, digits, '.', '_' or '-': *"),
        ("", "crawl name must be 1-100 letters, digits, '.', '_' or '-': "),
        ("a" * 101, f"crawl name must be 1-100 letters, digits, '.', '_' or '-': {'a' * 101}"),
    ],
)
def test_crawl_name_refusals(name, refused):
    # One rule for tse crawl --name (distributed/join.py) and tse status (cli.py): "polite" was refused by each
    # in a line of its own.
    if refused is None:
        assert check_crawl_name(name) == name
    else:
        with pytest.raises(ArgumentError) as error:
            check_crawl_name(name)
        assert str(error.value) == refused


@given(st.lists(st.text(min_size=1).filter(lambda s: "," not in s), min_size=1, max_size=4))
def test_a_derived_crawl_name_is_always_a_valid_name(seeds):
    name = crawl_name(seeds)
    assert check_crawl_name(name) == name
    assert crawl_name(list(seeds)) == name


@pytest.mark.parametrize(
    "stored, names, message",
    [
        ({"seed": SEED, "depth": 2}, ("seed", "depth"), None),
        ({"seed": SEED, "depth": 1}, ("seed", "depth"), "cannot update: depth was 1 and is now 2"),
        ({"seed": SEED, "depth": 2, "order": "bfs"}, ("seed", "depth"), None),  # order not compared
        ({"seed": SEED, "depth": 2, "order": "bfs"}, None, "cannot update: order was bfs and is now tse"),
    ],
)
def test_check_same_crawl(tmp_path, stored, names, message):
    args = check_crawl_args(SEED, str(tmp_path), 2)
    full = {**args.identity(), **stored}
    if message is None:
        check_same_crawl(args, full, "update", names)
    else:
        with pytest.raises(ArgumentError) as raised:
            check_same_crawl(args, full, "update", names)
        assert str(raised.value) == message


@pytest.mark.parametrize(
    ("value", "on"),
    [(None, False), ("1", True), ("2", True), ("0", False), ("True", True), ("false", False), (True, True), (0, False)],
)
def test_setting_is_on(value, on):
    # As Scrapy's getbool reads it ("2" is on: is_yes, for the spider's arguments, says no).
    assert setting_is_on(value) is on


# (No deadline: a loaded machine took 300 ms over an example, past hypothesis's 200 ms.)
@settings(deadline=None)
@given(st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from(["0", "1", "7", "True", "true", "False", "false"])))
def test_setting_is_on_as_scrapy_reads_it(value):
    assert setting_is_on(value) == Settings({"NAME": value}).getbool("NAME")


KNOWN = frozenset({"DOWNLOAD_DELAY", "DOWNLOAD_TIMEOUT", "DNS_TIMEOUT", "RETRY_TIMES", "LOG_LEVEL", "TSE_MAX_PAGES"})


@pytest.mark.parametrize(
    "name, meant",
    [
        ("DOWNLOAD_DELAY", None),  # known
        ("download_delay", "DOWNLOAD_DELAY"),  # another case: Scrapy ignored it
        ("Download_Delay", "DOWNLOAD_DELAY"),
        ("DOWNLOAD_DELEY", "DOWNLOAD_DELAY"),  # a letter changed
        ("DOWNLAOD_DELAY", "DOWNLOAD_DELAY"),  # two swapped: one edit
        ("DOWNLOAD_DLY", "DOWNLOAD_DELAY"),  # two dropped from a long name
        ("DOWNLOAD_DL", None),  # three
        ("download_deley", "DOWNLOAD_DELAY"),  # case is no edit
        ("RETRY_TIME", "RETRY_TIMES"),
        ("LOG_LEVLE", "LOG_LEVEL"),  # a short name: one edit
        ("LOG_LVL", None),  # two
        ("DNS_TIMEOUTS", "DNS_TIMEOUT"),
        ("TSE_MAXPAGES", "TSE_MAX_PAGES"),
        ("MY_EXTENSION_LIMIT", None),  # a user's own: near none
        ("LOG", None),
    ],
)
def test_misspelt_setting(name, meant):
    assert misspelt_setting(name, KNOWN) == meant


def test_a_third_party_middlewares_own_setting_is_no_misspelling():
    # `-s USER_AGENTS=...` (random user-agent middlewares read it) was refused as USER_AGENT misspelt.
    known = frozenset({"USER_AGENT", "PROXY_MODE"}) | EXTENSION_SETTINGS
    assert misspelt_setting("USER_AGENTS", known) is None
    assert misspelt_setting("USER_AGENTZ", known) == "USER_AGENT"  # (a misspelling still is one)


def test_check_setting_names():
    assert check_setting_names(["DOWNLOAD_DELAY", "MY_LIMIT", "LOG_LEVEL", "OTHER"], KNOWN) == ["MY_LIMIT", "OTHER"]
    with pytest.raises(ArgumentError, match=r"^-s DOWNLOAD_DELEY is not a setting: did you mean DOWNLOAD_DELAY\?$"):
        check_setting_names(["MY_LIMIT", "DOWNLOAD_DELEY"], KNOWN)
    message = r"^-s log_level is not a setting \(names are case-sensitive\): did you mean LOG_LEVEL\?$"
    with pytest.raises(ArgumentError, match=message):
        check_setting_names(["log_level"], KNOWN)


def _edits(a: str, b: str) -> int:
    """The optimal string alignment distance: letters added, dropped, changed, or two neighbours swapped."""
    row = [[i + j if not i * j else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[i][j] = min(row[i - 1][j] + 1, row[i][j - 1] + 1, row[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[i][j] = min(row[i][j], row[i - 2][j - 2] + 1)
    return row[len(a)][len(b)]


@given(
    st.one_of(
        st.text(alphabet="ADEGILMNOPRSTWXY_ad", min_size=1, max_size=16),
        st.sampled_from(sorted(KNOWN)).flatmap(
            lambda known: st.lists(st.sampled_from(["keep", "drop", "swap", "lower", "add"]), max_size=3).map(
                lambda edits: _edited(known, edits)
            )
        ),
    )
)
def test_a_name_is_taken_for_the_nearest_known_one_within_its_edits(name):
    meant = misspelt_setting(name, KNOWN)
    if name in KNOWN:
        assert meant is None
        return
    nearest = min(_edits(name.upper(), known.upper()) for known in KNOWN)
    if nearest > setting_edits_allowed(name):
        assert meant is None
    else:
        assert meant in KNOWN and _edits(name.upper(), meant.upper()) == nearest
        assert meant == min(known for known in KNOWN if _edits(name.upper(), known.upper()) == nearest)


def _edited(name: str, edits: list[str]) -> str:
    for number, edit in enumerate(edits):
        at = number % max(len(name) - 1, 1)
        if edit == "drop":
            name = name[:at] + name[at + 1 :]
        elif edit == "swap" and len(name) > at + 1:
            name = name[:at] + name[at + 1] + name[at] + name[at + 2 :]
        elif edit == "lower":
            name = name.lower()
        elif edit == "add":
            name = name[:at] + "X" + name[at:]
    return name or "X"


ANOTHER = "P already holds the pages of another crawl; crawl into an empty directory"
SAME = "P holds a finished crawl of {}: crawl it again with --update (-a update=yes), or crawl into an empty directory"


@pytest.mark.parametrize(
    "first_url, seeds, message",
    [
        ("http://h/index.html", ["http://h/index.html"], SAME.format("http://h/index.html")),
        ("http://h/b.html", ["http://h/a.html", "http://h/b.html"], SAME.format("http://h/b.html")),  # one of its seeds
        ("http://h/other.html", ["http://h/index.html"], ANOTHER),
        (None, ["http://h/index.html"], ANOTHER),  # page 1 unreadable or missing: nothing tells
        ("http://h/index.html", [], ANOTHER),
    ],
)
def test_pages_held_refusal(first_url, seeds, message):
    assert pages_held_refusal("P", first_url, seeds) == message
    # A distributed crawl's: the update it is sent to runs in one process (--update with --redis is refused).
    one_process = "--update (-a update=yes) in one process (an update is not distributed), or"
    assert pages_held_refusal("P", first_url, seeds, True) == message.replace(
        "--update (-a update=yes), or", one_process
    )


@given(
    st.sampled_from(["http://h/a.html", "http://h/b.html", "http://h/c.html"]),
    st.lists(st.sampled_from(["http://h/a.html", "http://h/b.html"])),
)
def test_update_is_suggested_exactly_for_a_crawl_of_one_of_the_seeds(first_url, seeds):
    message = pages_held_refusal("P", first_url, seeds)
    assert ("--update" in message) == (first_url in seeds)


def test_check_no_pages_reads_page_1(tmp_path):
    check_no_pages(tmp_path, ["http://h/index.html"])  # no pages: a new crawl
    (tmp_path / "1").write_bytes(b"http://h/index.html\n0\n<html></html>\n")
    with pytest.raises(ArgumentError, match=r"holds a finished crawl of http://h/index\.html: crawl it again"):
        check_no_pages(tmp_path, ["http://h/index.html"])
    with pytest.raises(ArgumentError, match="already holds the pages of another crawl"):
        check_no_pages(tmp_path, ["http://h/other.html"])


@pytest.mark.timeout(20)
def test_check_no_pages_never_waits_on_a_fifo_nor_reads_a_device_whole(tmp_path):
    # A page 1 that is a FIFO made `tse crawl` wait for a writer for ever; one that is /dev/zero read
    # until memory ran out: whose crawl it is is then unknown, and said as "another crawl".
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "1")
    with pytest.raises(ArgumentError, match="already holds the pages of another crawl"):
        check_no_pages(fifo, ["http://h/index.html"])
    device = tmp_path / "device"
    device.mkdir()
    (device / "1").symlink_to("/dev/zero")
    with pytest.raises(ArgumentError, match="already holds the pages of another crawl"):
        check_no_pages(device, ["http://h/index.html"])
    endless = tmp_path / "endless"
    endless.mkdir()
    (endless / "1").write_bytes(b"http://h/index.html" + b"x" * 200_000)  # no newline: read to its bound only
    with pytest.raises(ArgumentError, match="already holds the pages of another crawl"):
        check_no_pages(endless, ["http://h/index.html"])
