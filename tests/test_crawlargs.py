import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from tse_scrapy.rules.crawling.crawlargs import (
    ArgumentError,
    check_crawl_args,
    check_crawl_name,
    check_same_crawl,
    crawl_name,
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


@given(st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from(["0", "1", "7", "True", "true", "False", "false"])))
def test_setting_is_on_as_scrapy_reads_it(value):
    assert setting_is_on(value) == Settings({"NAME": value}).getbool("NAME")
