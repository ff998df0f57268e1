import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.queries.query import (
    Query,
    QueryError,
    is_blank,
    parse_query,
    rank,
    score,
    size_error,
    structure_error,
)

ERRORS = [
    ("cat-dog", "Error: bad character '-' in query."),
    ("cat 2", "Error: bad character '2' in query."),
    ("caf\xe9", "Error: bad character '\xe9' in query."),
    ("and cat", "Error: 'and' cannot be first"),
    ("OR cat", "Error: 'or' cannot be first"),
    ("cat and", "Error: 'and' cannot be last"),
    ("cat or", "Error: 'or' cannot be last"),
    ("and", "Error: 'and' cannot be first"),
    ("and cat or", "Error: 'and' cannot be first"),  # first before last
    ("cat or and dog", "Error: 'or' and 'and' cannot be adjacent"),
    ("cat and or dog or or emu", "Error: 'and' and 'or' cannot be adjacent"),  # left to right
    ("cat and and dog", "Error: 'and' and 'and' cannot be adjacent"),
]


def error_of(line):
    try:
        query = parse_query(line)
    except QueryError as error:
        return str(error)
    return structure_error(query)


@pytest.mark.parametrize("line, message", ERRORS)
def test_errors(line, message):
    assert error_of(line) == message


@pytest.mark.parametrize(
    "line, tokens, clauses",
    [
        ("cat", ("cat",), (("cat",),)),
        ("Cat DOG", ("cat", "dog"), (("cat", "dog"),)),
        ("cat and dog", ("cat", "and", "dog"), (("cat", "dog"),)),
        ("\tcat\t OR  dog ", ("cat", "or", "dog"), (("cat",), ("dog",))),
        ("a b or c and d or e", ("a", "b", "or", "c", "and", "d", "or", "e"), (("a", "b"), ("c", "d"), ("e",))),
    ],
)
def test_parse(line, tokens, clauses):
    assert parse_query(line) == Query(tokens, clauses)
    assert structure_error(parse_query(line)) is None


INDEX = {"cat": {1: 2, 3: 1, 4: 1}, "dog": {1: 1, 2: 3, 4: 1}, "emu": {2: 1, 3: 2}}


def lookup(word):
    return INDEX.get(word, {})


@pytest.mark.parametrize(
    "line, ranked",
    [
        ("cat", [(1, 2), (3, 1), (4, 1)]),
        ("cat dog", [(1, 1), (4, 1)]),
        ("cat or dog", [(1, 3), (2, 3), (4, 2), (3, 1)]),
        ("dog or dog", [(2, 6), (1, 2), (4, 2)]),
        ("emu and cat or dog", [(2, 3), (1, 1), (3, 1), (4, 1)]),
        ("yak", []),
        ("yak or emu", [(3, 2), (2, 1)]),
        ("cat yak", []),
    ],
)
def test_scores(line, ranked):
    assert rank(score(parse_query(line), lookup)) == ranked


# What a search box refuses (the page, the API, and tse query --rank relevance alike): the limit named.
@pytest.mark.parametrize(
    "line, message",
    [
        ("x" * 1001, "Error: the query is too long (at most 1,000 characters)."),
        (" ".join(["cat"] * 101), "Error: the query has too many words (at most 100)."),
        (" ".join(["x" * 20] * 101), "Error: the query is too long (at most 1,000 characters)."),  # both: characters
        # OR between words is no word (51 words joined by OR were refused: a tester's find); "or" is one.
        (" OR ".join(["cat"] * 100), None),
        (" OR ".join(["cat"] * 101), "Error: the query has too many words (at most 100)."),
        (" or ".join(["cat"] * 51), "Error: the query has too many words (at most 100)."),
    ],
)
def test_size_error(line, message):
    assert size_error(line) == message


def test_blank():
    assert is_blank("") and is_blank(" \t ") and not is_blank(" x ")


words = st.sampled_from(["cat", "dog", "emu", "yak", "and", "or", "AND", "Or"])
lines = st.one_of(
    st.text(max_size=40), st.lists(st.one_of(words, st.sampled_from([" ", "\t"])), max_size=12).map(" ".join)
)


@given(lines)
def test_any_line_gives_an_answer_or_a_listed_error(line):
    if is_blank(line):
        return
    message = error_of(line)
    if message is not None:
        assert message.startswith(("Error: bad character '", "Error: '"))
        assert message.endswith(("' in query.", "cannot be first", "cannot be last", "cannot be adjacent"))
        return
    ranked = rank(score(parse_query(line), lookup))
    assert all(value > 0 for _, value in ranked)
    assert ranked == sorted(ranked, key=lambda item: (-item[1], item[0]))


index_strategy = st.dictionaries(
    st.sampled_from(["cat", "dog", "emu"]), st.dictionaries(st.integers(1, 20), st.integers(1, 50), min_size=1)
)


@given(index_strategy, st.sampled_from(["cat", "dog", "emu"]))
def test_or_with_itself_doubles(index, word):
    single = score(parse_query(word), lambda w: index.get(w, {}))
    double = score(parse_query(f"{word} or {word}"), lambda w: index.get(w, {}))
    assert double == {doc_id: 2 * value for doc_id, value in single.items()}


@given(index_strategy)
def test_and_scores_exactly_the_minimum(index):
    # SPEC 4: a word scores its count in the document; `A and B` scores the minimum of the two
    # counts, and only documents containing both words match.  Expected values come from the index itself.
    cats, dogs = index.get("cat", {}), index.get("dog", {})
    both = score(parse_query("cat and dog"), lambda w: index.get(w, {}))
    assert both == {doc_id: min(cats[doc_id], dogs[doc_id]) for doc_id in set(cats) & set(dogs)}
