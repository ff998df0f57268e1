"""The search box's query language (rules/queries/searchquery.py) and its snippets (rules/queries/searchsnippet.py)."""

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.queries import searchsnippet
from tse_scrapy.rules.queries.query import MAX_QUERY_CHARACTERS, MAX_QUERY_WORDS
from tse_scrapy.rules.queries.searchquery import SearchQueryError, parse_search_query
from tse_scrapy.rules.text import analysis


def shown(line):
    """The query as (required groups, excluded), each clause as its words, a phrase's joined by '+'."""
    query = parse_search_query(line)

    def clause(c):
        return ("“" if c.quoted else "") + "+".join(c.words)

    return [[clause(c) for c in alternatives] for alternatives in query.required], [clause(c) for c in query.excluded]


@pytest.mark.parametrize(
    "line, required, excluded",
    [
        ("a light in the attic", [["a"], ["light"], ["in"], ["the"], ["attic"]], []),
        ('"quoted phrase" word', [["“quoted+phrase"], ["word"]], []),
        ('open "quote runs to the end', [["open"], ["“quote+runs+to+the+end"]], []),
        ("cat -dog", [["cat"]], ["dog"]),
        ('cat -"hot dog"', [["cat"]], ["“hot+dog"]),
        ("cat OR dog emu", [["cat", "dog"], ["emu"]], []),
        ("cat or dog", [["cat"], ["or"], ["dog"]], []),  # lowercase: a word
        ("cat and dog", [["cat"], ["and"], ["dog"]], []),
        ("OR cat", [["or"], ["cat"]], []),  # OR with nothing before it: a word
        ("cat OR", [["cat"], ["or"]], []),
        ("6.2 aptitude", [["6+2"], ["aptitude"]], []),  # a word of several terms is a phrase of them
        ("What's New", [["what+s"], ["new"]], []),
        ("日本語", [["日本+本語"]], []),
        ('"インストール"', [["“イン+ンス+スト+トー+ール"]], []),
        ("Sécurité -Réseau", [["securite"]], ["reseau"]),
        ("cat - dog", [["cat"], ["dog"]], []),  # a lone minus is no exclusion
        ("cat !!! dog", [["cat"], ["dog"]], []),  # punctuation alone is nothing
        ("دليل -التثبيت", [["دلیل"]], ["التثبیت"]),
    ],
)
def test_parse(line, required, excluded):
    assert shown(line) == (required, excluded)


@pytest.mark.parametrize(
    "line, message",
    [
        ("!!!", "no letters or digits"),
        ('""', "no letters or digits"),
        ("-cat", "not excluded"),
        ("-cat -dog", "not excluded"),
        ("x" * (MAX_QUERY_CHARACTERS + 1), "too long"),
        (" ".join(["cat"] * (MAX_QUERY_WORDS + 1)), "too many words"),
    ],
)
def test_refused(line, message):
    with pytest.raises(SearchQueryError, match=message):
        parse_search_query(line)


def test_the_limits_are_exact():
    parse_search_query(" ".join(["x" * 9] * 99 + ["x" * 10]))  # 1,000 characters, 100 words


@given(st.text(max_size=200))
def test_any_line_parses_or_is_refused_with_a_message(line):
    try:
        query = parse_search_query(line)
    except SearchQueryError as error:
        assert str(error)
    else:
        assert query.required and all(clause.words for clause in query.clauses + list(query.excluded))


# Snippets: marks are sequences of positions (a phrase, a word of several bigrams).
def marks(*sequences):
    return [tuple(frozenset(position) for position in sequence) for sequence in sequences]


@pytest.mark.parametrize(
    "text, sequences, marked",
    [
        ("The books are on the shelf", [[["book"]]], ["books"]),
        ("Sécurité du réseau", [[["securite", "securit"]]], ["Sécurité"]),
        # A word of several bigrams is marked where they stand together, not bigram by bigram.
        (
            "インストールとスモークテスト",
            [[["スモ"], ["モー"], ["ーク"], ["クテ"], ["テス"], ["スト"]]],
            ["スモークテスト"],
        ),
        ("一种方法 和 方法将销", [[["方法"], ["法将"], ["将销"]]], ["方法将销"]),
        # A single character: the bigrams it starts (not one ending a run: docs/search.md says why).
        ("书店和书", [[["书"]]], ["书店"]),
        ("nothing here", [[["cat"]]], []),
    ],
)
def test_snippet_marks(text, sequences, marked):
    snippet, ranges = searchsnippet.snippet(text, marks(*sequences), ["en"])
    assert [snippet[start:end] for start, end in ranges] == marked


def test_snippet_window_is_around_the_first_mark():
    text = " ".join(["filler"] * 200) + " target " + " ".join(["after"] * 200)
    snippet, ranges = searchsnippet.snippet(text, marks([["target"]]))
    assert snippet.startswith("… ") and snippet.endswith(" …") and len(snippet) <= searchsnippet.SNIPPET_CHARACTERS + 4
    assert [snippet[start:end] for start, end in ranges] == ["target"]


@given(st.text(max_size=400), st.lists(st.text(min_size=1, max_size=3), max_size=3))
def test_snippet_ranges_lie_in_the_snippet(text, words):
    snippet, ranges = searchsnippet.snippet(text, marks(*[[[word]] for word in words]), ["en"])
    assert all(0 <= start < end <= len(snippet) for start, end in ranges)
    assert ranges == sorted(ranges)


def ranges_word_by_word(text, sequences, languages):
    """The marks found by reading every word with analysis.tokens (what the fast path must equal),
    overlapping or touching ones joined."""
    tokens = list(analysis.tokens(text, languages))

    def gives(token, terms):
        # A single character of a bigram script gives the bigrams it starts.
        return set(token.terms) & set(terms) or any(
            len(term) == 1 and analysis.is_segmented(term) and token.terms[0].startswith(term) for term in terms
        )

    found = []
    for index in range(len(tokens)):
        for sequence in sequences:
            window = tokens[index : index + len(sequence)]
            if len(window) == len(sequence) and all(
                gives(token, terms) for token, terms in zip(window, sequence, strict=True)
            ):
                found.append((window[0].start, window[-1].end))
    joined = []
    for start, end in sorted(set(found)):
        if joined and joined[-1][1] >= start:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


@given(
    st.text(alphabet=st.sampled_from("abcdé_ -.,Éxyz\u0301ßﬁ1"), max_size=120),
    st.lists(st.sampled_from(["a", "ab", "abc", "cde", "e", "x", "xyz", "1", "ss", "fi"]), min_size=1, max_size=3),
)
def test_marks_found_by_pattern_are_the_words_marked_one_by_one(text, words):
    sequences = marks(*[[[word]] for word in words])
    assert searchsnippet.marked_ranges(text, sequences, ["en"]) == ranges_word_by_word(text, sequences, ["en"])


@given(
    st.text(alphabet=st.sampled_from("ab éx 新书店 _-"), max_size=80),
    st.lists(
        st.lists(st.sampled_from(["a", "ab", "x", "é", "e", "新书", "书店", "书"]), min_size=1, max_size=3), max_size=3
    ),
)
def test_phrases_found_by_pattern_are_the_words_marked_one_by_one(text, sequences):
    sequences = marks(*[[[word] for word in sequence] for sequence in sequences])
    assert searchsnippet.marked_ranges(text, sequences, ["en"]) == ranges_word_by_word(text, sequences, ["en"])


@given(
    st.lists(
        st.sampled_from(["cats", "cat", "Dogs", "the", "installation", "installer", "café", "Straße", "新书店"]),
        max_size=60,
    ),
    st.lists(
        st.lists(
            st.sampled_from(["cat", "dog", "instal", "installer", "cafe", "strass", "新书"]), min_size=1, max_size=2
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_stemmed_marks_are_the_words_marked_one_by_one(words, sequences):
    """Words marked by their stems (``cats`` for ``cat``), by one mark or several, each word or in phrases."""
    text, sequences = " ".join(words), marks(*[[[word] for word in sequence] for sequence in sequences])
    for languages in (["en"], [None, "en"], [None, "fr"]):
        assert searchsnippet.marked_ranges(text, sequences, languages) == ranges_word_by_word(
            text, sequences, languages
        )


@given(
    st.lists(st.sampled_from(["cat", "cats", "dog", "the", "hot", "新书店", "書", "-", "café", "cafe"]), max_size=400),
    st.lists(
        st.lists(st.sampled_from(["cat", "dog", "hot", "新书", "書", "cafe"]), min_size=1, max_size=2), max_size=3
    ),
    st.integers(min_value=1, max_value=300),
)
def test_a_snippet_read_from_beginnings_is_the_whole_texts(words, sequences, first_read):
    """Reading longer and longer beginnings of the text (searchsnippet.FIRST_READ) finds the
    snippet and marks that reading it whole does."""
    text, sequences = " ".join(words), marks(*[[[word] for word in sequence] for sequence in sequences])
    kept = searchsnippet.FIRST_READ
    try:
        searchsnippet.FIRST_READ = first_read
        from_beginnings = searchsnippet.snippet(text, sequences, ["en"], size=40)
        searchsnippet.FIRST_READ = len(text) + 1
        whole = searchsnippet.snippet(text, sequences, ["en"], size=40)
    finally:
        searchsnippet.FIRST_READ = kept
    assert from_beginnings == whole


@pytest.mark.parametrize(
    "line, corrections, typed",
    [
        ('cat OR dog "hot dog" -emu -"big cat"', {}, 'cat OR dog "hot dog" -emu -"big cat"'),
        ("instalaltion debian", {"instalaltion": "installation"}, "installation debian"),
        ('"instalaltion" -instalaltion', {"instalaltion": "installation"}, '"instalaltion" -instalaltion'),
        ('open "quote runs on', {}, 'open "quote runs on"'),
    ],
)
def test_a_query_typed_again(line, corrections, typed):
    assert parse_search_query(line).typed(corrections) == typed


# Pages' words in several scripts (real words: Debian's installation guide in those languages).
HEAD_WORDS = [
    "Installation",
    "installer",
    "Debian",
    "système",
    "systeme",
    "установка",
    "системы",
    "Εγκατάσταση",
    "تثبيت",
    "نصب",
    "cài",
    "đặt",
    "-",
    ",",
    "3.11",
]


@given(
    st.lists(st.sampled_from(HEAD_WORDS), max_size=300),
    st.lists(
        st.lists(
            st.sampled_from(["install", "instal", "debian", "systeme", "установк", "نصب", "cai", "dat", "3"]),
            min_size=1,
            max_size=2,
        ),
        max_size=3,
    ),
    st.sampled_from([None, "en", "fr", "ru", "ar", "vi", "fa"]),
    st.integers(min_value=1, max_value=300),
)
def test_a_snippet_from_a_stored_head_is_the_snippet_worked_out(words, sequences, language, first_read):
    """The head stored when a page is indexed (searchsnippet.snippet_head) gives the snippet and marks
    that working it out at the query gives, packed and unpacked."""
    text, sequences = " ".join(words), marks(*[[[word] for word in sequence] for sequence in sequences])
    kept = searchsnippet.FIRST_READ
    try:
        searchsnippet.FIRST_READ = first_read
        head = searchsnippet.snippet_head(text, language)
        stored = searchsnippet.unpacked_head(head.packed()) if head else None
        assert stored == head
        languages = (None, language)
        assert searchsnippet.snippet(text, sequences, languages, size=40, head=stored) == searchsnippet.snippet(
            text, sequences, languages, size=40
        )
    finally:
        searchsnippet.FIRST_READ = kept


def test_a_head_serves_only_the_text_and_language_it_was_made_for():
    text = "Debian Installation du système " * 60
    wanted = marks([["instal"]])  # English's stem of "installation" (French's is "install")
    head = searchsnippet.snippet_head(text, "en")
    assert head is not None and head.stems and head.folded.startswith("debian installation du systeme")
    # The page changed since it was indexed (the same length): its head is not taken.
    changed = "Installation Debian du système " + text[len("Debian Installation du système ") :]
    worked_out = searchsnippet.snippet(changed, wanted, (None, "en"))
    assert worked_out[1][0][0] == 0
    assert searchsnippet.snippet(changed, wanted, (None, "en"), head=head) == worked_out
    # A head of another language (whose stems would mark "Debian", were it taken) is not taken either.
    stems = ["instal" if word == "debian" else word for word in head.distinct]
    french = searchsnippet.Head(head.digest, "fr", head.folded, head.distinct, stems)
    assert searchsnippet.snippet(text, wanted, (None, "en"), head=french) == searchsnippet.snippet(
        text, wanted, (None, "en")
    )


def test_a_head_serves_only_the_analysis_it_was_made_by(monkeypatch):
    text = "Debian Installation du système " * 60
    wanted = marks([["instal"]])
    monkeypatch.setattr(analysis, "ANALYSIS_VERSION", "another Unicode, another Snowball")
    head = searchsnippet.snippet_head(text, "en")
    monkeypatch.undo()
    # Its stems would mark "Debian", were it taken.
    stems = tuple("instal" if word == "debian" else stem for word, stem in zip(head.distinct, head.stems, strict=True))
    older = searchsnippet.Head(head.digest, "en", head.folded, head.distinct, stems)
    assert searchsnippet.snippet(text, wanted, (None, "en"), head=older) == searchsnippet.snippet(
        text, wanted, (None, "en")
    )


def test_a_head_without_stems_does_not_serve_a_stemmed_snippet():
    text = "Installations of Debian"  # read whole: the head would be the only reading
    head = searchsnippet.snippet_head(text, None)
    assert head is not None and not head.stems
    worked_out = searchsnippet.snippet(text, marks([["instal"]]), (None, "en"))
    assert worked_out[1] == [(0, 13)]
    assert searchsnippet.snippet(text, marks([["instal"]]), (None, "en"), head=head) == worked_out


def test_a_mark_past_the_first_read_is_found_in_the_rest():
    text = "lorem " * 200 + "debian"  # read twice: 1,000 characters, then all of it
    head = searchsnippet.snippet_head(text, "en")
    worked_out = searchsnippet.snippet(text, marks([["debian"]]), (None, "en"))
    assert worked_out[1]
    assert searchsnippet.snippet(text, marks([["debian"]]), (None, "en"), head=head) == worked_out


def test_a_head_serves_the_first_read_only():
    # The first read ends with "debian"; "installation", just past it, is marked too.
    text = "lorem " * 166 + "debian installation " + "lorem " * 1000  # read again at 5,000
    assert searchsnippet.first_read(text).endswith("debian")
    wanted, head = marks([["debian"]], [["installation"]]), searchsnippet.snippet_head(text, "en")
    worked_out = searchsnippet.snippet(text, wanted, (None, "en"))
    assert len(worked_out[1]) == 2
    assert searchsnippet.snippet(text, wanted, (None, "en"), head=head) == worked_out


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"not zlib",
        zlib.compress(b"no separators"),
        zlib.compress(b"d\x00en\x00a b\x00x\x00a b"),
        zlib.compress(b"\xff\xfe\x00\x00\x00\x00"),
        zlib.compress(b"d\x00\x00a\x00\x00" + b"a" * 300_000),
    ],
)
def test_a_damaged_head_is_none(blob):
    assert searchsnippet.unpacked_head(blob) is None


@pytest.mark.parametrize(
    "value",
    [
        "text",
        5,
        None,
        zlib.compress(b"d\x00en\x00a  b\x00\x00a b"),  # an empty word: found at the same place forever
        zlib.compress(b"d\x00en\x00a b\x00x y z\x00a b"),
    ],
)
def test_a_tampered_head_is_none(value):
    assert searchsnippet.unpacked_head(value) is None


def test_a_head_keeps_an_empty_stem():
    head = searchsnippet.snippet_head("Όταν το Debian", "el")  # Greek's stem of "όταν" is ""
    assert head is not None and "" in head.stems
    assert searchsnippet.unpacked_head(head.packed()) == head


def test_an_empty_word_is_never_found():
    assert analysis.word_positions("a b", {"": None, "b": None}) == [(2, "b")]


def test_text_in_a_bigram_script_or_that_folding_moves_has_no_head():
    assert searchsnippet.snippet_head("新书店的书 " * 10, "zh") is None
    assert searchsnippet.snippet_head("ﬁle Straße " * 10, "en") is None  # ﬁ, ß fold to two letters
