"""Duplicate pages (rules/web/duplicates.py) by table and property: canonical URLs from Link headers and the
head, content digests, simhashes and their near-duplicate pairs (against brute force), and duplicate
groups (against a breadth-first search of the same relations), and the results they collapse (against
the rule's words read one doc at a time)."""

import hashlib
import random
import unicodedata
from collections import deque
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st
from w3lib.url import safe_url_string

from tse_scrapy.rules.text import analysis
from tse_scrapy.rules.text.pagefields import head_canonical
from tse_scrapy.rules.web.duplicates import (
    EMPTY_DIGEST,
    HEAD_BYTES,
    MAX_URL_CHARACTERS,
    agreed_canonical,
    canonical_url,
    collapse_duplicates,
    content_digest,
    duplicate_groups,
    hamming,
    near_duplicate_pairs,
    simhash,
    words_digest,
)

PAGE = "http://example.com/dir/page.html"
LONG = "http://example.com/" + "a" * MAX_URL_CHARACTERS


def head(*tags: str) -> bytes:
    return f"<html><head><title>t</title>{''.join(tags)}</head><body>text</body></html>".encode()


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        # Link headers: RFC 8288.
        (['<http://example.com/a>; rel="canonical"'], b"", "http://example.com/a"),
        (["<http://example.com/a>; REL=Canonical"], b"", "http://example.com/a"),
        (['<http://example.com/a>; rel="alternate canonical"'], b"", "http://example.com/a"),
        (['<http://example.com/a>; rel="canonical-ish"'], b"", None),
        (['<http://example.com/a>; rel="alternate"'], b"", None),
        (['<http://example.com/b>; rel="next", <http://example.com/a>; rel="canonical"'], b"", "http://example.com/a"),
        (
            ['<http://example.com/b>; rel="next"', '<http://example.com/a>; rel="canonical"'],
            b"",
            "http://example.com/a",
        ),
        (['<http://example.com/a,b>; title="x, y; z"; rel=canonical'], b"", "http://example.com/a,b"),
        (['<http://example.com/a>; title="a \\"quoted\\" rel=canonical"'], b"", None),  # inside a quoted title
        (['<http://example.com/a>; rel="next"; rel="canonical"'], b"", None),  # the first rel counts
        (["<a>; rel=canonical"], b"", "http://example.com/dir/a"),  # relative: to the page
        (['</a>; rel=canonical; anchor="#top"'], b"", "http://example.com/a"),  # the page's own anchor
        (['</a>; rel=canonical; anchor="/other.html"'], b"", None),  # about another resource
        (["<>; rel=canonical"], b"", None),  # the page itself: no hint
        (["garbage, <http://example.com/a>; rel=canonical"], b"", "http://example.com/a"),
        (["<http://example.com/a; rel=canonical"], b"", None),  # no end to the URI
        (['<http://example.com/a>; rel="canonical'], b"", None),  # no end to the quote
        (['<http://example.com/a>; rel="canonical"', '<http://example.com/b>; rel="canonical"'], b"", None),
        (
            ['<http://example.com/a>; rel="canonical", <http://example.com/a>; rel="canonical"'],
            b"",
            "http://example.com/a",
        ),
        # <link rel=canonical> in the head.
        ([], head('<link rel="canonical" href="http://example.com/a">'), "http://example.com/a"),
        ([], head("<LINK HREF='http://example.com/a' REL='CANONICAL'>"), "http://example.com/a"),
        ([], head("<link href=http://example.com/a rel=canonical>"), "http://example.com/a"),
        ([], head("<link href=http://example.com/a rel=canonical/>"), None),  # the value is "canonical/"
        ([], head("<link href=http://example.com/a rel=canonical />"), "http://example.com/a"),
        ([], head('<link rel="alternate canonical" href="/a">'), "http://example.com/a"),
        ([], head('<link rel="canonical" href="/a" href="/b">'), "http://example.com/a"),  # the first attribute
        ([], head('<link rel="canonical" href="a.html">'), "http://example.com/dir/a.html"),
        ([], head('<link rel="canonical" href="../a.html">'), "http://example.com/a.html"),
        ([], head('<link rel="canonical" href="//other.example/x">'), "http://other.example/x"),
        ([], head('<link rel="canonical" href="//Other.Example/x">'), "http://other.example/x"),
        ([], head('<link rel="canonical" href="https://example.com/a#part">'), "https://example.com/a"),
        ([], head('<link rel="canonical" href="/a?x=1&amp;y=2">'), "http://example.com/a?x=1&y=2"),
        ([], head('<link rel="canonical" href="/a?x=1&copy=2">'), "http://example.com/a?x=1&copy=2"),  # as HTML
        ([], head('<link rel="canonical" href="/&#x61;">'), "http://example.com/a"),
        ([], head('<link rel="canonical" href=" \n /a \t ">'), "http://example.com/a"),  # ends stripped
        ([], head('<link rel="canonical" href="/a\nb">'), "http://example.com/ab"),  # newlines dropped inside
        ([], head('<link rel="canonical" href="/a b">'), "http://example.com/a%20b"),  # spaces encoded
        ([], head('<link rel="canonical" href="/café">'), "http://example.com/caf%C3%A9"),
        ([], head('<link rel="canonical" href="http://b\u00fccher.example/">'), "http://xn--bcher-kva.example/"),
        (
            [],
            head('<base href="http://example.com/base/"><link rel="canonical" href="a">'),
            "http://example.com/base/a",
        ),
        ([], head('<base href="/b/"><base href="/c/"><link rel="canonical" href="a">'), "http://example.com/b/a"),
        ([], head('<base href="javascript:x"><link rel="canonical" href="a">'), "http://example.com/dir/a"),
        ([], head('<link rel="canonical" href="/a"><link rel="canonical" href="/b">'), None),  # they disagree
        (
            [],
            head('<link rel="canonical" href="/a"><link rel="canonical" href="http://EXAMPLE.com/a">'),
            "http://example.com/a",
        ),
        ([], head('<link rel="canonical" href="javascript:void(0)">'), None),
        ([], head('<link rel="canonical" href="mailto:a@example.com">'), None),
        ([], head('<link rel="canonical" href="https:///a">'), None),  # no host
        ([], head('<link rel="canonical" href="http://example.com:99999/">'), None),  # no port
        ([], head(f'<link rel="canonical" href="{LONG}">'), None),
        ([], head('<link rel="canonical" href="/a"><link rel="canonical" href="ftp://example.com/">'), None),
        ([], head('<link rel="canonical" href="">'), None),  # an empty href names nothing
        ([], head('<link rel="canonical" href="">', '<link rel="canonical" href="/a">'), "http://example.com/a"),
        ([], head('<link rel="canonical">'), None),
        ([], head('<link rel="stylesheet" href="/a.css">'), None),
        ([], head('<meta rel="canonical" href="/a">'), None),
        ([], head('<linked rel="canonical" href="/a">'), None),
        ([], head('<!-- <link rel="canonical" href="/a"> -->'), None),
        ([], head('<script>document.write(\'<link rel="canonical" href="/a">\')</script>'), None),
        ([], head('<title>A <link rel="canonical" href="/a"></title>'), None),
        ([], b'<html><head></head><body><link rel="canonical" href="/a"></body></html>', None),  # in the body
        ([], b'<html><body><link rel="canonical" href="/a"></body></html>', None),
        ([], b'<link rel="canonical" href="/a">', "http://example.com/a"),  # no head tags: all of it is head
        ([], b"<html><head>" + b" " * HEAD_BYTES + b'<link rel="canonical" href="/a">', None),  # past 64 KB
        ([], head('<link title="a>b" rel="canonical" href="/a">'), None),  # ">" ends the tag: missed
        ([], head('<link rel=canonical href="/c?a>b">'), None),  # cut inside its value: missed, not misread
        # The first <base href> counts wherever it stands in the head; a hidden one does not.
        ([], head('<link rel="canonical" href="a"><base href="/b/">'), "http://example.com/b/a"),
        ([], head('<!-- <base href="/c/"> --><link rel="canonical" href="a">'), "http://example.com/dir/a"),
        # A hidden <link> beside a real one; "canonical" as text around it.
        (
            [],
            head('<script>x="<link rel=canonical href=/b>"</script><link rel="canonical" href="/a">'),
            "http://example.com/a",
        ),
        ([], head('<meta name="canonical"><link rel="canonical" href="/a"> canonical'), "http://example.com/a"),
        ([], head('<link rel="canonical" href="/a" title="canonical canonical">'), "http://example.com/a"),
        # Both sources.
        (["</a>; rel=canonical"], head('<link rel="canonical" href="http://example.com/a">'), "http://example.com/a"),
        (["</a>; rel=canonical"], head('<link rel="canonical" href="/b">'), None),  # header vs <link>
        (["<javascript:x>; rel=canonical"], head('<link rel="canonical" href="/a">'), None),
        # The header's URL is the page's, the head's <base> is not.
        (["<a>; rel=canonical"], head('<base href="/b/"><link rel="canonical" href="a">'), None),
        # The page itself, as it was given.
        ([], head('<link rel="canonical" href="page.html">'), PAGE),
        ([], head('<link rel="canonical" href="http://EXAMPLE.com/dir/page.html#x">'), PAGE),
        (["<>; rel=canonical"], b"", None),
        ([], b"", None),
    ],
)
def test_canonical_url(headers, body, expected):
    assert canonical_url(headers, body, PAGE) == expected


@pytest.mark.parametrize(
    ("from_headers", "from_head", "expected"),
    [
        (None, None, None),
        ("", "", None),
        ("http://example.com/a", None, "http://example.com/a"),
        (None, "http://example.com/a", "http://example.com/a"),
        ("http://example.com/a", "http://example.com/a", "http://example.com/a"),
        ("http://example.com/a", "http://example.com/b", None),  # they disagree: no hint
    ],
)
def test_agreed_canonical(from_headers, from_head, expected):
    assert agreed_canonical(from_headers, from_head) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (head('<link rel="canonical" href="/a.html">'), "http://example.com/a.html"),
        (head('<link rel="canonical" href="/x/../a.pdf">'), "http://example.com/a.pdf"),  # any extension
        (head('<link rel="canonical" href="HTTP://Example.COM//a.html#top">'), "http://example.com/a.html"),
        (head('<link rel="canonical" href="page.html">'), ""),  # the page itself
        (head('<link rel="canonical" href="/a"><link rel="canonical" href="/b">'), ""),
        (b"<html><head><title>t</title></head><body>b</body></html>", ""),
    ],
)
def test_head_canonical_is_normalized_as_links_are(body, expected):
    assert head_canonical(PAGE, body) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # An unclosed "<link" then "canonical" thousands of times: the tag around the words is read once.
        (b"<html><head><link " + b"canonical " * 6000 + b"<link rel=canonical href=/a>", "http://example.com/a"),
        (b"<html><head>" + b"<link rel=canonical " * 3000, None),  # no ">": no tag
        (b"<html><head>" + b"<script>canonical " * 3000 + b"<link rel=canonical href=/a>", None),  # all script
        # Thousands of hidden spans before the tags: each tag's look-up is a bisection.
        (b"<head>" + b"<!----><base>" * 5000 + b'<link rel="canonical" href="/a">', "http://example.com/a"),
    ],
)
def test_hostile_heads(body, expected):
    assert canonical_url([], body, PAGE) == expected


def test_the_page_url_is_returned_as_it_was_given():
    assert (
        canonical_url([], head('<link rel="canonical" href="/p">'), "http://Example.com/p#x")
        == "http://Example.com/p#x"
    )
    assert (
        canonical_url([], head('<link rel="canonical" href="/p">'), "https://example.com/q") == "https://example.com/p"
    )


def test_a_page_in_another_encoding_gives_its_href_bytes_as_windows_1252():
    body = head('<link rel="canonical" href="/caf').replace(b"</head>", b'\xe9"></head>')
    assert canonical_url([], body, PAGE) == "http://example.com/caf%C3%A9"


URLISH = st.lists(
    st.sampled_from([*"aZ09:/?#&;=.%<>\"' \t\n,\\@[]", "http://", "https://", "javascript:", "//", "&amp;", "é"]),
    max_size=20,
).map("".join)


@given(st.lists(st.one_of(st.text(max_size=80), URLISH.map(lambda u: f"<{u}>; rel=canonical")), max_size=3),
       st.one_of(st.binary(max_size=400), URLISH.map(lambda u: head(f'<link rel=canonical href="{u}">'))),
       st.one_of(st.text(max_size=40), st.just(PAGE), URLISH))  # fmt: skip
def test_canonical_url_never_raises_and_gives_an_http_url_without_fragment(headers, body, page_url):
    found = canonical_url(headers, body, page_url)
    if found is not None and found != page_url:
        parts = urlsplit(found)
        assert parts.scheme in ("http", "https") and parts.hostname and "#" not in found
        assert len(found) <= MAX_URL_CHARACTERS
        # Written as Scrapy writes a request's URL: found again among the crawled URLs.
        assert safe_url_string(found) == found


@given(URLISH.filter(lambda href: "<" not in href and ">" not in href))
def test_header_and_link_agree(href):
    from_header = canonical_url([f"<{href}>; rel=canonical"], b"", PAGE)
    escaped = href.replace("&", "&amp;").replace('"', "&quot;")
    assert canonical_url([], head(f'<link rel="canonical" href="{escaped}">'), PAGE) == from_header


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (("Title", "Some text"), ("Title", "Some text"), True),
        (("Title", "Some  text"), (" Title ", "Some\n\ttext  "), True),
        (("Title", "Some\u00a0text"), ("Title", "Some text"), True),  # &nbsp; is whitespace
        (("Caf\u00e9", ""), ("Cafe\u0301", ""), True),  # NFC
        (("Title", "Some text"), ("Title", "some text"), False),  # case shows
        (("A b", ""), ("A", "b"), False),  # the title is not the text
        (("", "A b"), ("A", "b"), False),
        (("Title", "Some text"), ("Title", "Some text."), False),
    ],
)
def test_content_digest(a, b, same):
    assert (content_digest(*a) == content_digest(*b)) == same
    assert len(content_digest(*a)) == 32 and int(content_digest(*a), 16) >= 0


WHITESPACE = st.text(st.sampled_from(" \t\n\r\u00a0\u3000"), min_size=1, max_size=3)


@given(st.lists(st.text(st.characters(blacklist_categories=("Zs", "Cc", "Zl", "Zp", "Cs")), min_size=1), max_size=6),
       st.data())  # fmt: skip
def test_content_digest_ignores_whitespace(words, data):
    spaced = [data.draw(WHITESPACE) + word for word in words] + [data.draw(st.sampled_from(["", " ", "\n"]))]
    assert content_digest("T", "".join(spaced)) == content_digest("T", " ".join(words))


def digest_as_defined(title: str, text: str) -> str:
    """content_digest as its docstring says: each part in NFC, whitespace runs one space, stripped,
    its length first."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (title, text):
        shown = " ".join(unicodedata.normalize("NFC", part).split()).encode("utf-8", "surrogatepass")
        digest.update(b"%d:" % len(shown) + shown)
    return digest.hexdigest()


@pytest.mark.parametrize(
    "text",
    [
        "already single spaced words",  # the search index's words: hashed as they are
        "слова уже через один пробел",
        " leading",
        "trailing ",
        "two  spaces",
        "a\tb",
        "a\u00a0b",
        "a\u3000b",
        "a\x1cb",
        "a\u2028b",
        "Cafe\u0301 x",  # not NFC
        "",
        " ",
    ],
)
def test_content_digest_as_defined(text):
    assert content_digest("T", text) == digest_as_defined("T", text)
    assert content_digest(text, "") == digest_as_defined(text, "")


@given(st.text(st.sampled_from("ab \t\n\u00a0\u3000\x1c\x85\u2029e\u0301\u00e9\x00")), st.text(max_size=20))
def test_content_digest_as_defined_property(text, title):
    assert content_digest(title, text) == digest_as_defined(title, text)


# The search index's words (analysis, joined by single spaces): hashed as they are, the same digest.
@pytest.mark.parametrize(
    "title, text",
    [
        ("Debian GNU/Linux", "Debian est un système d'exploitation libre"),
        ("Глава 1", "Добро пожаловать в Debian"),
        ("第1章", "ようこそ Debian へ"),
        ("", ""),
        ("Café", "\uff30\uff59\uff54\uff48\uff4f\uff4e \uff13.\uff14 \ufb01le"),  # full-width, a ligature
    ],
)
def test_the_words_digest_is_the_content_digest_of_the_words(title, text):
    title_words, body_words = " ".join(analysis.words(title)), " ".join(analysis.words(text))
    assert words_digest(title_words, body_words) == content_digest(title_words, body_words)
    assert words_digest("", "") == EMPTY_DIGEST


@given(st.text(max_size=80), st.text(max_size=20))
def test_the_words_digest_of_words_in_nfc_is_their_content_digest(text, title):
    title_words, body_words = " ".join(analysis.words(title)), " ".join(analysis.words(text))
    if unicodedata.is_normalized("NFC", title_words + " " + body_words):
        assert words_digest(title_words, body_words) == content_digest(title_words, body_words)
    # The same words, the same digest; other words, another.
    assert words_digest(title_words, body_words) == words_digest(title_words, body_words)
    assert words_digest(title_words, body_words) != words_digest(title_words, body_words + " x")


def test_the_only_printable_whitespace_is_the_space():
    # What content_digest's shortcut for single-spaced text relies on, for this Python's Unicode.
    assert [c for c in map(chr, range(0x110000)) if c.isspace() and c.isprintable()] == [" "]


def blake(shingle: str) -> int:
    return int.from_bytes(hashlib.blake2b(shingle.encode(), digest_size=8).digest(), "big")


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ([], 0),
        (["one"], blake("one")),  # a single shingle: its own hash
        (["one", "two"], blake("one\x00two")),
        (["one", "two", "three"], blake("one\x00two\x00three")),
        (["a", "b", "c", "a", "b", "c", "a", "b", "c", "a"], None),  # repeated shingles count once
    ],
)
def test_simhash(words, expected):
    if expected is None:
        expected = simhash(["a", "b", "c", "a", "b", "c", "a"])
    assert simhash(words) == expected


def test_simhash_is_the_bitwise_majority_of_the_shingle_hashes():
    words = [f"w{i % 37}" for i in range(200)]
    shingles = {"\x00".join(words[i : i + 3]) for i in range(len(words) - 2)}
    hashes = [blake(shingle) for shingle in shingles]
    expected = sum(1 << bit for bit in range(64) if 2 * sum(h >> bit & 1 for h in hashes) > len(hashes))
    assert simhash(words) == expected


def test_similar_texts_have_close_simhashes_and_different_texts_do_not():
    rng = random.Random(5)
    vocabulary = [f"word{i}" for i in range(2000)]
    text = [rng.choice(vocabulary) for _ in range(3000)]
    edited = list(text)
    edited[1500:1510] = ["changed"] * 10
    other = [rng.choice(vocabulary) for _ in range(3000)]
    assert hamming(simhash(text), simhash(edited)) <= 3
    assert hamming(simhash(text), simhash(other)) > 10


@given(st.lists(st.text(max_size=8), max_size=30))
def test_simhash_is_deterministic(words):
    value = simhash(words)
    assert value == simhash(list(words)) == simhash(iter(words))
    assert 0 <= value < 1 << 64 and hamming(value, simhash(words)) == 0


@pytest.mark.parametrize(
    ("a", "b", "expected"), [(0, 0, 0), (0, 1, 1), (0b1010, 0b0101, 4), (0, (1 << 64) - 1, 64), (5, 5, 0)]
)
def test_hamming(a, b, expected):
    assert hamming(a, b) == hamming(b, a) == expected


@pytest.mark.parametrize(
    ("hashes", "distance", "expected"),
    [
        ({}, 3, []),
        ({1: 0xFF, 2: 0xFF}, 0, [(1, 2)]),
        ({2: 0xFF, 1: 0xFE}, 0, []),
        ({2: 0xFF, 1: 0xFE}, 1, [(1, 2)]),
        ({1: 0b1111 << 60, 2: 0}, 3, []),  # 0: no words
        ({1: 0, 2: 0}, 3, []),
        # 3 bits apart, in three different bands: the fourth band agrees.
        ({1: 1 | 1 << 16 | 1 << 32, 2: 0x10000000000000}, 3, []),
        ({1: 1 | 1 << 16 | 1 << 32 | 1 << 63, 2: 1 << 63}, 3, [(1, 2)]),
        ({1: 1 | 1 << 16 | 1 << 32 | 1 << 63, 2: 1 << 63}, 2, []),
        # 4 bits apart, one in each band: not found at 3.
        ({1: 1 | 1 << 16 | 1 << 32 | 1 << 48, 2: (1 << 64) - 1 - (2 | 2 << 16 | 2 << 32 | 2 << 48)}, 3, []),
        ({3: 7, 1: 7, 2: 7, 9: 1 << 40}, 3, [(1, 2), (1, 3), (2, 3)]),
    ],
)
def test_near_duplicate_pairs(hashes, distance, expected):
    assert near_duplicate_pairs(hashes, distance) == expected


@pytest.mark.parametrize("distance", [-1, 4, 10])
def test_near_duplicate_pairs_only_up_to_3_bits(distance):
    with pytest.raises(ValueError, match="max_distance"):
        near_duplicate_pairs({1: 1}, distance)


def brute_force_pairs(hashes, distance):
    documents = sorted(document for document, value in hashes.items() if value)
    return [
        (a, b) for i, a in enumerate(documents) for b in documents[i + 1 :] if hamming(hashes[a], hashes[b]) <= distance
    ]


@given(st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=8),
       st.lists(st.tuples(st.integers(0, 7), st.lists(st.integers(0, 63), max_size=4)), max_size=40),
       st.integers(0, 3), st.randoms())  # fmt: skip
def test_near_duplicate_pairs_agree_with_brute_force(seeds, derived, distance, rng):
    # Hashes near the seeds (a few bits flipped: up to 4, one past the distance), so that pairs exist.
    values = list(seeds)
    for seed, bits in derived:
        value = seeds[seed % len(seeds)]
        for bit in bits:
            value ^= 1 << bit
        values.append(value)
    documents = rng.sample(range(1000), len(values))
    hashes = dict(zip(documents, values, strict=True))
    assert near_duplicate_pairs(hashes, distance) == brute_force_pairs(hashes, distance)


URLS = {1: "http://h/a", 2: "http://h/bb", 3: "http://h/ccc", 4: "http://h/dddd", 5: "http://h/e", 6: "http://h/ff"}


@pytest.mark.parametrize(
    ("digests", "canonicals", "expected"),
    [
        ({1: "x", 2: "y", 3: "z"}, {}, {}),  # all different: no group
        ({2: "x", 3: "x"}, {}, {2: 2, 3: 2}),  # same content: the shortest URL
        ({1: "x", 5: "x"}, {}, {1: 1, 5: 1}),  # same length: the smaller number
        ({1: "x", 2: "x", 3: "y"}, {}, {1: 1, 2: 1}),
        ({1: EMPTY_DIGEST, 2: EMPTY_DIGEST}, {}, {}),  # pages that show nothing are not alike
        ({1: "x", 2: "y"}, {1: 2}, {1: 2, 2: 2}),  # a canonical link joins, and names the representative
        ({1: "x", 2: "x"}, {1: 2}, {1: 2, 2: 2}),
        ({1: "x", 2: "x"}, {1: 1}, {1: 1, 2: 1}),  # one names itself
        ({1: "x", 2: "x"}, {1: 1, 2: 2}, {1: 1, 2: 1}),  # both do: the shortest URL
        ({1: "x"}, {1: 1}, {}),  # naming itself makes no group
        ({1: "x", 2: "y", 3: "z"}, {1: 2, 2: 3}, {1: 3, 2: 3, 3: 3}),  # a chain: its end
        (
            {1: "x", 2: "y", 3: "z", 4: "w"},
            {1: 2, 4: 2, 2: 3},
            {1: 3, 2: 3, 3: 3, 4: 3},
        ),  # the end beats the most named
        ({1: "x", 2: "y"}, {1: 2, 2: 1}, {1: 1, 2: 1}),  # a cycle: the shortest URL
        ({2: "x", 3: "y"}, {2: 3, 3: 2}, {2: 2, 3: 2}),
        ({1: "x", 2: "y", 3: "z"}, {1: 3, 2: 3, 3: 3}, {1: 3, 2: 3, 3: 3}),
        ({1: "x", 2: "x", 3: "y", 4: "y"}, {4: 3, 1: 3}, {1: 3, 2: 3, 3: 3, 4: 3}),  # two groups joined by links
        ({1: "x", 2: "x", 3: "z", 4: "z"}, {}, {1: 1, 2: 1, 3: 3, 4: 3}),
        ({1: "x", 2: "y", 3: "x", 4: "y"}, {2: 4, 1: 4, 3: 2}, {1: 4, 2: 4, 3: 4, 4: 4}),  # the most named
        ({}, {1: 2}, {1: 2, 2: 2}),  # documents named only by canonicals
        ({0: "x", 6: "x"}, {}, {0: 6, 6: 6}),  # 0 has no URL: it comes last
    ],
)
def test_duplicate_groups(digests, canonicals, expected):
    assert duplicate_groups(digests, canonicals, URLS) == expected


def components(digests, canonicals):
    """The groups, found by a breadth-first search over an explicit graph."""
    edges = {document: set() for document in [*digests, *canonicals, *canonicals.values()]}
    for a in digests:
        for b in digests:
            if a != b and digests[a] == digests[b] != EMPTY_DIGEST:
                edges[a].add(b)
    for a, b in canonicals.items():
        edges[a].add(b)
        edges[b].add(a)
    seen, found = set(), []
    for start in sorted(edges):
        if start in seen:
            continue
        group, queue = set(), deque([start])
        while queue:
            document = queue.popleft()
            if document not in group:
                group.add(document)
                queue.extend(edges[document] - group)
        seen |= group
        found.append(frozenset(group))
    return {group for group in found if len(group) > 1}


DOCUMENTS = st.integers(0, 30)
GROUP_INPUTS = st.tuples(
    st.dictionaries(DOCUMENTS, st.sampled_from(["a", "b", "c", "d", EMPTY_DIGEST]), max_size=25),
    st.dictionaries(DOCUMENTS, DOCUMENTS, max_size=12),
    st.dictionaries(DOCUMENTS, st.text("abc/", max_size=6).map(lambda path: "http://h/" + path), max_size=31),
)


@given(GROUP_INPUTS, st.randoms())
def test_duplicate_groups_properties(inputs, rng):
    digests, canonicals, urls = inputs
    found = duplicate_groups(digests, canonicals, urls)
    # Each representative stands for itself, and in its own group.
    assert all(found[representative] == representative for representative in found.values())
    # The groups are the connected components of both relations.
    groups = {}
    for document, representative in found.items():
        groups.setdefault(representative, set()).add(document)
    assert {frozenset(group) for group in groups.values()} == components(digests, canonicals)

    # The same whatever the order of the mappings.
    def shuffled(mapping):
        items = list(mapping.items())
        rng.shuffle(items)
        return dict(items)

    assert duplicate_groups(shuffled(digests), shuffled(canonicals), shuffled(urls)) == found


# Groups {1, 2, 3} (representative 2) and {4, 5} (representative 5); 6 in none.
GROUPED = {1: 2, 2: 2, 3: 2, 4: 5, 5: 5}


@pytest.mark.parametrize(
    "ranked, expected, aliases",
    [
        ([], [], {}),
        ([(6, 3.0), (7, 1.0)], [(6, 3.0), (7, 1.0)], {}),  # in no group: as ranked
        ([(1, 3.0), (6, 2.0), (2, 1.0)], [(2, 3.0), (6, 2.0)], {2: [1]}),  # the representative, at its best doc's place
        ([(3, 3.0), (1, 2.0)], [(3, 3.0)], {3: [1]}),  # the representative not answering: the best doc shown
        ([(2, 3.0), (3, 2.0), (1, 1.0)], [(2, 3.0)], {2: [3, 1]}),  # the others in the order they rank
        ([(4, 5.0), (1, 4.0), (5, 3.0), (6, 2.0), (3, 1.0)], [(5, 5.0), (1, 4.0), (6, 2.0)], {5: [4], 1: [3]}),
        ([(5, 1.0)], [(5, 1.0)], {}),  # a representative alone
    ],
)
def test_collapse_duplicates(ranked, expected, aliases):
    assert collapse_duplicates(ranked, GROUPED) == (expected, aliases)


def collapsed_one_at_a_time(ranked, representatives):
    """The rule as its docstring says it, a doc at a time: a group's first doc places its result (the
    representative when it answered, else that doc); every other answering doc is its alias."""
    answered = {doc for doc, _ in ranked}
    shown, results, aliases = {}, [], {}
    for doc, score in ranked:
        group = representatives.get(doc, doc)
        if group not in shown:
            shown[group] = group if group in answered else doc
            results.append((shown[group], score))
        if doc != shown[group]:
            aliases.setdefault(shown[group], []).append(doc)
    return results, aliases


@given(
    st.lists(st.integers(0, 40), unique=True, max_size=40),
    st.dictionaries(st.integers(0, 40), st.integers(0, 40), max_size=40),
    st.lists(st.floats(-10, 10, allow_nan=False), min_size=40, max_size=40),
)
def test_collapse_duplicates_as_one_at_a_time(docs, links, scores):
    # Groups as duplicate_groups makes them: each member (its representative too) named by its group.
    representatives = {doc: links.get(group, group) for doc, group in links.items()}
    representatives.update({group: group for group in representatives.values()})
    ranked = list(zip(docs, scores[: len(docs)], strict=True))
    assert collapse_duplicates(ranked, representatives) == collapsed_one_at_a_time(ranked, representatives)
