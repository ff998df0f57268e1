import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.text.words import page_words as page_words_bytes
from tse_scrapy.rules.text.words import word_counts


def page_words(body):
    return [word.decode("ascii") for word in page_words_bytes(body)]


@pytest.mark.parametrize(
    "body, words",
    [
        (b"The cat sat on the mat", ["the", "cat", "sat", "the", "mat"]),
        (b"<html><title>Home</title>Hello</html>", ["home", "hello"]),
        (b"abc<b>def</b>ghi", ["abc", "def", "ghi"]),  # a tag splits words
        (b'<a href="http://x.org/long">link</a>', ["link"]),  # nothing inside tags
        (b"don't co-op 42nd under_score caf\xc3\xa9s", ["don", "under", "score", "caf"]),
        (b"ab abc ABCD a1bcd", ["abc", "abcd", "bcd"]),
        (b"fish <unclosed tag with words", ["fish"]),  # an unclosed < ends the words
        (b"one > two", ["one", "two"]),  # a lone > is just punctuation
        (b"<script>var answer = 42;</script><style>body{}</style>", ["var", "answer", "body"]),
        (b"fish&amp;chips&nbsp;x", ["fish", "amp", "chips", "nbsp"]),
        (b"tab\tnew\nline\r\nend", ["tab", "new", "line", "end"]),
        (b"", []),
    ],
)
def test_page_words(body, words):
    assert page_words(body) == words


def test_word_counts():
    assert word_counts(b"Dog dog <dog> DOG cat") == {b"dog": 3, b"cat": 1}


@pytest.mark.parametrize(
    "body, counts",
    [
        # In the order they first occur (the document store keeps the words so); short runs left out.
        (b"ab Cat x DOG cat <dog> dog a1b", [(b"cat", 2), (b"dog", 2)]),
        (b"ZZZ<zz>zzz z zz", [(b"zzz", 2)]),
        (b"caf\xc3\xa9s \xff\x00abc\tabc", [(b"caf", 1), (b"abc", 2)]),
        (b"one <two three", [(b"one", 1)]),  # an unclosed < ends the words
        (b"", []),
    ],
)
def test_word_counts_in_order(body, counts):
    assert list(word_counts(body).items()) == counts


def c_model(body: bytes) -> list[str]:
    """The reference indexer's loop (webpage_getNextWord), transliterated."""

    def is_letter(byte):
        return 65 <= byte <= 90 or 97 <= byte <= 122

    words, pos, n = [], 0, len(body)
    while True:
        while pos < n and not is_letter(body[pos]):
            if body[pos] == ord("<"):
                end = body.find(b">", pos)
                if end == -1 or end + 1 >= n:
                    return words
                pos = end + 1
            else:
                pos += 1
        if pos >= n:
            return words
        start = pos
        while pos < n and is_letter(body[pos]):
            pos += 1
        if pos - start >= 3:
            words.append(body[start:pos].decode().lower())


@given(st.lists(st.sampled_from([b"<", b">", b"a", b"Bc", b"def", b" ", b"\xe9", b"1", b"<p>", b"xyzw"])).map(b"".join))
def test_page_words_matches_the_reference_loop(body):
    assert page_words(body) == c_model(body)


@given(
    st.one_of(
        st.binary(),
        st.lists(st.sampled_from([b"<", b">", b"a", b"Bc", b"DEF", b" ", b"\xe9", b"1", b"<p>", b"xyzw", b"\t"])).map(
            b"".join
        ),
    )
)
def test_word_counts_are_the_page_words_counted_in_order(body):
    expected: dict[bytes, int] = {}
    for word in c_model(body):
        expected[word.encode()] = expected.get(word.encode(), 0) + 1
    assert list(word_counts(body).items()) == list(expected.items())


@pytest.mark.parametrize("byte", range(256))
def test_word_counts_take_only_ascii_letters(byte):
    letter = bytes([byte]).isalpha() and byte < 128
    body = b"abc" + bytes([byte]) + b"DEF"
    expected = [(b"abc" + bytes([byte]).lower() + b"def", 1)] if letter else [(b"abc", 1), (b"def", 1)]
    if byte == ord("<"):  # an unclosed tag ends the words
        expected = [(b"abc", 1)]
    assert list(word_counts(body).items()) == expected


@given(st.binary())
def test_words_are_lowercase_letter_runs(body):
    for word in page_words(body):
        assert len(word) >= 3 and word.isascii() and word.isalpha() and word.islower()
