"""The search box's query language (rules/queries/searchquery.py) and its snippets (rules/queries/searchsnippet.py)."""
# ruff: noqa: RUF001 (real text in every script: letters that look like Latin ones are the point)

import re
import unicodedata
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.multilingual import fixture_pages
from tse_scrapy.rules.queries import searchsnippet
from tse_scrapy.rules.queries.query import MAX_QUERY_CHARACTERS, MAX_QUERY_WORDS, TOO_MANY_WORDS, size_error
from tse_scrapy.rules.queries.searchquery import SearchQueryError, cased_like, greek_capitals, parse_search_query
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
        # An OR with no clause to join on one side is left out (a query of ORs alone: the word, below).
        ("OR cat", [["cat"]], []),
        ("cat OR", [["cat"]], []),
        ("debian OR python OR", [["debian", "python"]], []),
        ("-python OR debian", [["debian"]], ["python"]),
        ("cat -dog OR emu", [["cat"], ["emu"]], ["dog"]),  # (not cat OR emu: the OR is next to -dog)
        ("debian OR ! python", [["debian", "python"]], []),  # (punctuation alone is as if not typed)
        ("6.2 aptitude", [["6+2"], ["aptitude"]], []),  # a word of several terms is a phrase of them
        ("What's New", [["what+s"], ["new"]], []),
        ("日本語", [["日本+本語"]], []),
        ('"インストール"', [["“イン+ンス+スト+トー+ール"]], []),
        ("Sécurité -Réseau", [["securite"]], ["reseau"]),
        ("cat - dog", [["cat"], ["dog"]], []),  # a lone minus is no exclusion
        ("cat !!! dog", [["cat"], ["dog"]], []),  # punctuation alone is nothing
        ("دليل -التثبيت", [["دلیل"]], ["التثبیت"]),
        # A control character is a space, as on the pages (pagetext: shown and indexed as one).
        ("deb\x01ian", [["deb"], ["ian"]], []),
        ("debian\x00python -\x7fjava", [["debian"], ["python"], ["java"]], []),  # (a lone minus, as "- java")
        ('"boot\x9bloader"', [["“boot+loader"]], []),
        # So is the zero-width space (pasted from web text): not punctuation making a phrase ("deb+ian").
        ("deb\u200bian", [["deb"], ["ian"]], []),
        ("sécurité\u200bréseau -wifi", [["securite"], ["reseau"]], ["wifi"]),
        ('"boot\u200bloader"', [["“boot+loader"]], []),  # (quoted: a phrase, as with a space)
    ],
)
def test_parse(line, required, excluded):
    assert shown(line) == (required, excluded)


@given(st.text(alphabet=st.sampled_from('ab -"\x00\x01\x08\x0e\x1b\x7f\x85\x9f\u200bé日'), max_size=40))
def test_no_clause_holds_a_control_character(line):
    try:
        query = parse_search_query(line)
    except SearchQueryError:
        return
    for clause in [*query.clauses, *query.excluded]:
        assert not any(c < " " or "\x7f" <= c <= "\x9f" or c == "\u200b" for c in clause.text + "".join(clause.words))


# The typographic double quotes are quote marks as '"' is (phones, pasted text, other languages).
@pytest.mark.parametrize(
    "line, required, excluded",
    [
        ("“gnu debian” linux", [["“gnu+debian"], ["linux"]], []),
        ("„Debian GNU/Linux“ installieren", [["“debian+gnu+linux"], ["installieren"]], []),
        ("„gnu debian” linux", [["“gnu+debian"], ["linux"]], []),
        ("«guide d’installation» debian", [["“guide+d+installation"], ["debian"]], []),
        ("« gnu debian » linux", [["“gnu+debian"], ["linux"]], []),  # (French: spaces inside)
        ("»gnu debian« linux", [["“gnu+debian"], ["linux"]], []),  # (Danish, German: reversed)
        ("«Руководство по установке»", [["“руководство+по+установке"]], []),
        ("「日本語 入門」", [["“日本+本語+入門"]], []),
        ("『インストール』 ガイド", [["“イン+ンス+スト+トー+ール"], ["ガイ+イド"]], []),
        ("〝日本語 入門〟", [["“日本+本語+入門"]], []),  # (the double prime quotes: Japanese, Chinese)
        ("‟gnu debian” linux", [["“gnu+debian"], ["linux"]], []),
        ("“安装 指南”", [["“安装+指南"]], []),
        ("＂gnu debian＂ linux", [["“gnu+debian"], ["linux"]], []),
        ("שלום “עולם”", [["שלום"], ["“עולם"]], []),
        ("“a” “b”", [["“a"], ["“b"]], []),  # two phrases, not one from the first mark to the last
        ("„Ärger“ OR „Ende“", [["“arger", "“ende"]], []),
        ("cat -“hot dog”", [["cat"]], ["“hot+dog"]),
        ("debian -«guide d’installation»", [["debian"]], ["“guide+d+installation"]),
        ("open “quote runs to the end", [["open"], ["“quote+runs+to+the+end"]], []),  # (as '"' left open)
        ("「開いた 括弧", [["“開い+いた+括弧"]], []),
        # The single curly quotes are apostrophes: no phrase.
        ("what’s “new” ‘debian’", [["what+s"], ["“new"], ["debian"]], []),
        ("„l’installation“ l’installation", [["“l+installation"], ["l+installation"]], []),
    ],
)
def test_typographic_double_quotes_make_a_phrase(line, required, excluded):
    assert shown(line) == (required, excluded)


# AND in capitals changes nothing (every clause is required already); lowercase "and" is a word.
@pytest.mark.parametrize(
    "line, required, excluded",
    [
        ("debian AND linux", [["debian"], ["linux"]], []),
        ("anderen AND Linux", [["anderen"], ["linux"]], []),
        ("AND debian", [["debian"]], []),
        ("debian AND", [["debian"]], []),
        ("debian AND AND linux", [["debian"], ["linux"]], []),
        ("cat OR dog AND emu", [["cat", "dog"], ["emu"]], []),
        ("cat AND dog OR emu", [["cat"], ["dog", "emu"]], []),
        ("cat OR AND dog", [["cat", "dog"]], []),  # (as if not typed)
        ("debian AND -ubuntu", [["debian"]], ["ubuntu"]),
        ("Руководство AND установке", [["руководство"], ["установке"]], []),
        ("日本語 AND 入門", [["日本+本語"], ["入門"]], []),
        ('"debian AND linux" AND gnu', [["“debian+and+linux"], ["gnu"]], []),  # quoted: a word
        ("“Tom AND Jerry”", [["“tom+and+jerry"]], []),
        ("debian and AND linux", [["debian"], ["and"], ["linux"]], []),  # lowercase: a word
        ("debian And AND linux", [["debian"], ["and"], ["linux"]], []),
        # Nothing else to find: the words, as ORs alone are.
        ("OR AND", [["or"], ["and"]], []),
        ("AND -dog OR", [["and"], ["or"]], ["dog"]),
    ],
)
def test_and_in_capitals_changes_nothing(line, required, excluded):
    assert shown(line) == (required, excluded)


@pytest.mark.parametrize(
    "line, message",
    [
        ("!!!", "no letters or digits"),
        ('""', "no letters or digits"),
        ("-cat", "not excluded"),
        ("-cat -dog", "not excluded"),
        ("x" * (MAX_QUERY_CHARACTERS + 1), "Error: the query is too long (at most 1,000 characters)."),
        (" ".join(["cat"] * (MAX_QUERY_WORDS + 1)), "Error: the query has too many words (at most 100)."),
        ('"cat"' * (MAX_QUERY_WORDS + 1), "Error: the query has too many words (at most 100)."),  # (one to split)
        ("“cat”" * (MAX_QUERY_WORDS + 1), "Error: the query has too many words (at most 100)."),
        ("-“hot dog”", "not excluded"),
        ('"' * (2 * MAX_QUERY_WORDS + 1), "no letters or digits"),  # (no "too many words": a tester's find)
        ("“" * MAX_QUERY_CHARACTERS, "no letters or digits"),
    ],
)
def test_refused(line, message):
    with pytest.raises(SearchQueryError, match=re.escape(message)):
        parse_search_query(line)


@given(
    st.lists(st.sampled_from(["cat", '"hot dog"', '"a""b"', "x" * 30, "OR", "-emu", "!"]), min_size=90, max_size=110)
)
def test_a_query_over_a_limit_is_refused_as_the_search_box_refuses_any_query(pieces):
    line = " ".join(pieces)
    try:
        parse_search_query(line)
    except SearchQueryError as error:
        refused = str(error)
    else:
        refused = None
    if (problem := size_error(line)) is not None:
        assert refused == problem  # (the page and the API refuse it so in any ranking)
    else:
        # More pieces than words to split ('"a""b"' is two), or no word to find (all -emu and !).
        assert refused in (None, TOO_MANY_WORDS) or refused.startswith("Nothing to find"), refused


def test_the_limits_are_exact():
    parse_search_query(" ".join(["x" * 9] * 99 + ["x" * 10]))  # 1,000 characters, 100 words
    either = parse_search_query(" OR ".join(f"w{n}" for n in range(100)))  # 100 words, 99 ORs
    assert len(either.required) == 1 and len(either.required[0]) == 100


@given(st.text(max_size=200))
def test_any_line_parses_or_is_refused_with_a_message(line):
    try:
        query = parse_search_query(line)
    except SearchQueryError as error:
        assert str(error)
    else:
        assert query.required and all(clause.words for clause in query.clauses + list(query.excluded))


_OR_PIECES = st.lists(
    st.sampled_from(["OR", "OR", "cat", "dog", "or", "-emu", '"hot dog"', '-"big cat"', "!", "-!", '"OR"']), max_size=8
).map(" ".join)


@given(_OR_PIECES)
def test_an_or_with_no_clause_on_one_side_is_left_out(line):
    try:
        query = parse_search_query(line)
    except SearchQueryError:
        assert "OR" not in line.split()  # (ORs alone are the word: never nothing to find)
        return
    typed_or = [clause for clause in query.clauses if clause.text == "OR" and not clause.quoted]
    if typed_or:  # the word "or", found where nothing else is
        assert typed_or == query.clauses and all(clause.words == ("or",) for clause in typed_or)
    else:  # a dangling OR changes nothing
        assert parse_search_query(f"OR {line} OR") == query
        assert parse_search_query(f"{line} -emu OR") == parse_search_query(f"{line} -emu")
        doubled = " ".join("OR OR" if piece == "OR" else piece for piece in line.split(" "))
        assert parse_search_query(doubled) == query  # (OR OR: one OR)
    assert parse_search_query(query.typed()) == query  # (what "Did you mean" shows means the same)


_TYPOGRAPHIC_QUOTES = "“”„‟«»「」『』〝〞〟＂"


@given(
    st.lists(
        st.sampled_from(["cat", "hot dog", "日本語", "what’s", "OR", "AND", "-", '"', '-"', '""', "!", "«", "-emu"]),
        max_size=10,
    ),
    st.lists(st.sampled_from(_TYPOGRAPHIC_QUOTES), min_size=10, max_size=10),
    st.sampled_from(["", " "]),
)
def test_typographic_quotes_parse_as_ascii_ones(pieces, marks, between):
    # Each '"' of a line made a typographic mark, any (opening or closing, of any pair): the same query.
    ascii_line = between.join(pieces)
    typographic = iter(marks * 3)
    line = "".join(next(typographic) if character == '"' else character for character in ascii_line)
    try:
        expected = shown(ascii_line)
    except SearchQueryError as error:
        with pytest.raises(SearchQueryError, match=re.escape(str(error))):
            parse_search_query(line)
        return
    assert shown(line) == expected
    query = parse_search_query(line)
    assert parse_search_query(query.typed()) == query  # (what "Did you mean" shows means the same)


def is_operator(clause):
    """Whether *clause* is an OR or AND typed (found as a word when nothing else is)."""
    return clause.text in ("OR", "AND") and not clause.quoted


@given(
    st.lists(
        st.sampled_from(["AND", "AND", "OR", "cat", "dog", "and", "-emu", '"hot dog"', '"AND"', "“big AND cat”", "!"]),
        max_size=8,
    )
)
def test_and_in_capitals_is_as_if_not_typed(pieces):
    # The same query without its ANDs, unless they and ORs are all there is to find (then the words).
    without = " ".join(piece for piece in pieces if piece != "AND")
    try:
        expected = parse_search_query(without)
    except SearchQueryError:
        expected = None
    if expected is not None and not all(map(is_operator, expected.clauses)):
        assert parse_search_query(" ".join(pieces)) == expected
    elif "AND" in pieces or "OR" in pieces:  # nothing else to find: the ORs and ANDs typed, as words
        query = parse_search_query(" ".join(pieces))
        assert all(map(is_operator, query.clauses))
        assert [clause.text for clause in query.clauses] == [piece for piece in pieces if piece in ("OR", "AND")]


# Titles of the Debian installation guide and the Python docs, and queries typed for them.
@pytest.mark.parametrize(
    "title, query, answered",
    [
        ("1.3. Què és Debian GNU/Linux?", "1.3. Què és Debian GNU/Linux?", True),
        ("1.3. ¿Qué es Debian GNU/Linux?", "1.3. Què és Debian GNU/Linux?", False),  # the accents typed differ
        ("1.3. ¿Qué es Debian GNU/Linux?", "que es debian", True),  # typed without them: any accents
        ("1.3. Què és Debian GNU/Linux?", "que es debian", True),
        ("1.3. Que es Debian", "què és", False),
        ("Vérifier", "vérifier verifier", True),
        ("A.1. Preliminaries", "A.1. Preliminares", False),
        ("A.1. Preliminaries", "preliminaries OR preliminares", True),  # one of a group's alternatives
        ("A.1. Preliminaries", 'preliminaries -"A.1."', True),  # excluded words are not typed for the title
        ("What's New In Python 3.4", "what's new in PYTHON 3.4", True),  # case folded
        ("Ｐｙｔｈｏｎ ３.４", "python 3.4", True),
        ("Глава 2. Системные требования", "системные требования", True),
        ("Κεφάλαιο 2. Απαιτήσεις συστήματος", "απαιτησεις", True),  # (typed without its accent)
        ("Κεφάλαιο 2. Απαιτησεις συστήματος", "απαιτήσεις", False),
        ("第2章 システム要件", "システム要件", True),
        ("第2章システム要件", "システム要件", False),  # a run of a bigram script is one word here
        ("第2章 システム要件", "第2章", True),
        ("الفصل 2. متطلبات النظام", "متطلبات النظام", True),
        # Romanian typed with a cedilla (older keyboards), written with a comma below, and back.
        ("2.5. Cerințe de memorie și spațiu pe disc", "Cerinţe de memorie şi spaţiu", True),
        ("Cerinţe şi spaţiu", "cerințe și spațiu", True),
    ],
)
def test_a_title_answers_the_query_as_typed(title, query, answered):
    assert parse_search_query(query).answered_as_typed(title) is answered


@given(st.text(max_size=200))
def test_a_line_is_answered_as_typed_by_its_own_words(line):
    try:
        query = parse_search_query(line)
    except SearchQueryError:
        return
    assert query.answered_as_typed(line)


def _answered_word_by_word(query, title):
    """``answered_as_typed`` as its docstring says it, without its quick first look at the text."""
    written = analysis.written_words(title)
    folded = {analysis.fold(word) for word in written}
    return all(
        any(
            all(
                word in written or (word in folded and analysis.fold(word) == word)
                for word in analysis.written_words(clause.text)
            )
            for clause in group
        )
        for group in query.required
    )


# Letters that fold or case-fold alike (dotless i, long s): the point.
# A query that is a page's whole title (each of the title's words typed): the larger title bonus.
@pytest.mark.parametrize(
    "title, query, whole",
    [
        ("5.2. Accessibility", "5.2. Accessibility", True),
        ("5.2. Accessibility", "accessibility 5.2", False),  # its words, not in its order
        ("Debian Reference", "debian reference", True),
        ("Référence Debian", "Debian Reference", False),  # (a translation: its words, another order)
        ("5.2. Accessibility", "Accessibility", False),  # not its number
        ("5.2. Accessibilité", "5.2. accessibilite", True),  # typed without accents: any
        ("5.2. Accessibilite", "5.2. accessibilité", False),  # typed with them: those
        ("1.3. ¿Qué es Debian GNU/Linux?", "1.3. ¿Qué es Debian GNU/Linux?", True),
        ("1.3. ¿Qué es Debian GNU/Linux?", "que es debian", False),
        ("A.1. Preliminaries", "A.1. Preliminaries OR Preliminares", True),
        ("A.1. Preliminaries", "A.1. Preliminaries -draft", True),  # excluded words are not the title's
        ("第2章 システム要件", "第2章 システム要件", True),
        ("第2章 システム要件", "システム要件", False),
        ("الفصل 2. متطلبات النظام", "الفصل 2. متطلبات النظام", True),
        ("Cerințe și spațiu", "Cerinţe şi spaţiu", True),  # a cedilla typed, a comma below written
        ("Chapter 2", "chapter 2 installation", False),  # not answered as typed
    ],
)
def test_a_query_is_a_whole_title(title, query, whole):
    assert parse_search_query(query).is_whole_title(title) is whole


@given(
    st.lists(st.text(alphabet="aeéèıßsſ日本1", min_size=1, max_size=6), min_size=1, max_size=6),
    st.text(alphabet="xyz", min_size=1, max_size=4),
)
def test_a_line_of_words_is_its_own_whole_title_and_no_more(words, more):
    line = " ".join(words)
    try:
        query = parse_search_query(line)
    except SearchQueryError:
        return
    assert query.is_whole_title(line)
    assert query.is_whole_title(f"{line} {more}") is False  # (a word not typed)


_LETTERS_ACCENTED_OR_NOT = st.text(alphabet="aeEéÉèıIİßsſ日本 -.'\"", max_size=30)


@given(_LETTERS_ACCENTED_OR_NOT, _LETTERS_ACCENTED_OR_NOT)
def test_a_title_answers_as_typed_word_by_word(title, line):
    try:
        query = parse_search_query(line)
    except SearchQueryError:
        return
    assert query.answered_as_typed(title) == _answered_word_by_word(query, title)


# A correction (as pages spell it, folded) in the case of the word typed.
@pytest.mark.parametrize(
    ("spelling", "typed", "shown"),
    [
        ("debian", "Debain", "Debian"),
        ("debian", "debain", "debian"),
        ("debian", "DEBAIN", "DEBIAN"),
        ("café", "CAFFE", "CAFÉ"),  # (French capitals keep their accents)
        ("größe", "GRÖSE", "GRÖSSE"),  # (German capitals write ß as SS)
        ("ёлка", "ЁЛКК", "ЁЛКА"),  # (the Cyrillic Ё keeps its diaeresis)
        # Greek capitals carry no accent (the installation guide's "ΠΡΟΕΙΔΟΠΟΙΗΣΗ"), but a diaeresis.
        ("ελλάδα", "ΕΛΛΑΔ", "ΕΛΛΑΔΑ"),
        ("ελλάδα", "Ελλαδ", "Ελλάδα"),  # (a capital first keeps it: "Άλλο" as sentences begin)
        ("πρωϊνό", "ΠΡΩΪΝ", "ΠΡΩΪΝΟ"),
        ("ΐσως".lower(), "ΙΣΩΣΣ", "ΪΣΩΣ"),
        ("ἀρχή", "ΑΡΧΗΗ", "ΑΡΧΗ"),  # (polytonic: the breathing goes too)
        ("διανομής", "ΔΙΑΝΟΜΗΣΣ", "ΔΙΑΝΟΜΗΣ"),
        ("ελληνικά", "12", "ελληνικά"),  # (no letter typed: as pages spell it)
        # Turkish: typed with its dotted capital I (or its dotless small i), an i's capital is dotted; typed with I, I.
        ("için", "İÇİNN", "İÇİN"),
        ("için", "İçinn", "İçin"),
        ("ıspanak", "ISPANAKK", "ISPANAK"),
        ("istanbul", "İSTANBULL", "İSTANBUL"),
        ("kılıç", "KILICC", "KILIÇ"),
        ("için", "ICINN", "IÇIN"),
        # A page's "İstanbul" folds to "i" and a combining dot: its capital is dotted once (a reviewer's find).
        ("i\u0307stanbul", "İstanbull", "İstanbul"),
        ("i\u0307stanbul", "İSTANBULL", "İSTANBUL"),
        ("i\u0307stanbul", "Istanbull", "İstanbul"),
        ("i\u0307\u00e7i\u0307n", "İÇİNN", "İÇİN"),
    ],
)
def test_a_correction_is_shown_in_the_case_typed(spelling, typed, shown):
    assert cased_like(spelling, typed) == shown


def _clusters(text: str) -> list[tuple[str, str]]:
    """*text*'s letters (decomposed), each with the marks on it."""
    found: list[tuple[str, str]] = []
    for character in unicodedata.normalize("NFD", text):
        if unicodedata.combining(character) and found:
            found[-1] = (found[-1][0], found[-1][1] + character)
        else:
            found.append((character, ""))
    return found


def _is_greek(character: str) -> bool:
    return "\u0370" <= character <= "\u03ff" or "\u1f00" <= character <= "\u1fff"


_GREEK_OR_NOT = st.text(alphabet="αάὰᾶἀἁΆΑϊΐΰέΈήώίόύabcéÉëñßёЁ -", max_size=20)


@given(_GREEK_OR_NOT)
def test_greek_capitals_lose_only_greek_accents_and_breathings(text):
    capitals = text.upper()
    before, after = _clusters(capitals), _clusters(greek_capitals(capitals))
    assert [letter for letter, _ in after] == [letter for letter, _ in before]
    for (letter, marks), (_, kept) in zip(before, after, strict=True):
        if _is_greek(letter):  # its diaeresis, and nothing else
            assert kept == "\u0308" * ("\u0308" in marks), (letter, marks, kept)
        else:
            assert kept == marks


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
        # A single character: itself, where it starts a bigram and where it ends a run (starting none).
        ("书店和书", [[["书"]]], ["书", "书"]),
        ("书店和书。", [[["书"]]], ["书", "书"]),
        ("书店", [[["书店"]]], ["书店"]),
        ("我的猫", [[["猫"]]], ["猫"]),
        # ... but in no phrase (the index has no term for it there: "章 1" does not find 序章 1).
        ("序章 1. 免責事項", [[["章"], ["1"]]], []),
        ("序章 1. 免責事項", [[["章"]], [["1"]]], ["章", "1"]),
        ("序章", [[["序"], ["章"]]], []),
        ("nothing here", [[["cat"]]], []),
        # A mark takes the combining marks of its last character: the tone mark of ที่ ("here", Thai).
        ("ที่นี่", [[["ที"]]], ["ที่"]),
        ("Die Instal\u00adlation von Debian", [[["installation"]]], ["Instal\u00adlation"]),
        # A word joiner and a right-to-left mark inside a word: the whole word marked.
        ("Built with Word\u2060press and PHP", [[["wordpress"]]], ["Word\u2060press"]),
        ("Guia d'instal·lació de Debian", [[["installacio"]]], ["instal·lació"]),
        ("Energia: 2·10 kW·h", [[["10"]], [["kwh"]]], ["10", "kW·h"]),
        # A name written in Chinese with a middle dot (Leonardo da Vinci): the bigrams across it, as indexed.
        ("《蒙娜丽莎》是列奥纳多·达·芬奇的画作", [[["达芬"], ["芬奇"]]], ["达·芬奇"]),
        ("دليل التثبيت\u200fات", [[["التثبیتات"]]], ["التثبيت\u200fات"]),
        ("开发了大量用于 Unix™ 的自由软件工具和类 Unix 操作系统", [[["unix"]]], ["Unix", "Unix"]),
        # Half-width katakana: デビアン typed, ﾃﾞﾋﾞｱﾝ written (NFKC composes each sound mark).
        ("ﾊﾝｶｸ ｶﾀｶﾅ の ﾃﾞﾋﾞｱﾝ ｲﾝｽﾄｰﾙ ｶﾞｲﾄﾞ", [[["デビ"], ["ビア"], ["アン"]]], ["ﾃﾞﾋﾞｱﾝ"]),
        ("ﾊﾝｶｸ ｶﾀｶﾅ の ﾃﾞﾋﾞｱﾝ ｲﾝｽﾄｰﾙ ｶﾞｲﾄﾞ", [[["ガイ"], ["イド"]]], ["ｶﾞｲﾄﾞ"]),
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
    and a run's last character where a single character of a bigram script is a mark alone (it starts
    no bigram; in no phrase), overlapping or touching ones joined; such a character alone given by a
    bigram it starts marks itself, not the bigram."""
    tokens = list(analysis.tokens(text, languages))
    alone = {term for sequence in sequences if len(sequence) == 1 for term in sequence[0] if len(term) == 1}
    run_ends = []
    for word_run in analysis._WORD_RUN.finditer(text.replace("_", " ")):
        for run in analysis._SCRIPT_RUN.finditer(word_run.group()):
            words, end = analysis.words(run.group(1) or ""), word_run.start() + run.end()
            if len(run.group()) > 1 and len(words) == len(run.group()) - 1 and words[-1][1:] in alone:
                run_ends.append((end - 1, end))

    def gives(token, terms):
        # A single character of a bigram script gives the bigrams it starts.
        return set(token.terms) & set(terms) or any(
            len(term) == 1 and analysis.is_segmented(term) and token.terms[0].startswith(term) for term in terms
        )

    found = run_ends
    for index in range(len(tokens)):
        for sequence in sequences:
            window = tokens[index : index + len(sequence)]
            if len(window) == len(sequence) and all(
                gives(token, terms) for token, terms in zip(window, sequence, strict=True)
            ):
                if len(sequence) == 1 and not set(window[0].terms) & set(sequence[0]):
                    found.append((window[0].start, window[0].start + 1))  # one character typed: itself
                else:
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
        # The punctuation typed with a corrected word is kept (brackets stay balanced).
        (
            "(instalaltion debian) OR guide",
            {"(instalaltion": "installation"},
            "(installation debian) OR guide",
        ),
        ("instalaltion, debian", {"instalaltion,": "installation"}, "installation, debian"),
        (
            "¡sécuritée! ¿instalaltion?",
            {"¡sécuritée!": "sécurité", "¿instalaltion?": "instalación"},
            "¡sécurité! ¿instalación?",
        ),
        # A phrase in typographic quotes is typed again in ASCII ones; a quote mark in a word is kept.
        ("«sécuritée» debian", {"sécuritée": "sécurité"}, '"sécurité" debian'),
        ("“gnu debian” instalaltion”", {"instalaltion”": "installation"}, '"gnu debian" installation”'),
        ("(re\u0301sume\u0301e)", {"(re\u0301sume\u0301e)": "résumé"}, "(résumé)"),  # (a mark is the word's)
        ("(ที่นี่x)", {"(ที่นี่x)": "ที่นี่"}, "(ที่นี่)"),
        (
            "⼈⼉⼊⼋⼌",
            {"⼈⼉⼊⼋⼌": "人儿入八冂"},
            "人儿入八冂",
        ),  # (Kangxi radicals: Han once NFKC, no word run as typed)
        # A quoted word corrected (it is when no page holds it: the phrase matches none), an excluded one never.
        ('"instalaltion" -instalaltion', {"instalaltion": "installation"}, '"installation" -instalaltion'),
        ('open "quote runs on', {}, 'open "quote runs on"'),
        # An OR left out is not typed again.
        ("instalaltion OR", {"instalaltion": "installation"}, "installation"),
        ("-python OR debian OR", {}, "debian -python"),
    ],
)
def test_a_query_typed_again(line, corrections, typed):
    assert parse_search_query(line).typed(corrections) == typed


@given(
    st.lists(
        st.sampled_from(["(instalaltion", "debian)", "OR", "«sécuritée»", "guiide,", "-emu", '"big cat"', "¿y?", "z"]),
        min_size=1,
        max_size=8,
    ).map(" ".join)
)
def test_a_word_corrected_as_it_is_leaves_the_query_as_typed(line):
    try:
        query = parse_search_query(line)
    except SearchQueryError:  # (only excluded words)
        return
    corrections = {clause.text: clause.text.strip("()«»,¿?") for clause in query.clauses if not clause.quoted}
    assert query.typed(corrections) == query.typed()


# Pages' words in several scripts (real words: Debian's installation guide in those languages).
LANGUAGES = [None, "en", "fr", "ru", "el", "ar", "vi", "fa", "ja", "zh"]
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
    "インストール",
    "新书店的书",
    "설치",
    "Straße",
    "ﬁle",
    "…",
]


@given(
    st.lists(st.sampled_from(HEAD_WORDS), max_size=300),
    st.lists(
        st.lists(
            st.sampled_from(
                [
                    "install",
                    "instal",
                    "debian",
                    "systeme",
                    "установк",
                    "نصب",
                    "cai",
                    "dat",
                    "3",
                    "スト",
                    "书店",
                    "설치",
                    "strasse",
                    "file",
                ]
            ),
            min_size=1,
            max_size=2,
        ),
        max_size=3,
    ),
    st.sampled_from(LANGUAGES),
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


@given(
    st.lists(st.lists(st.sampled_from([*HEAD_WORDS, "書", "本"]), max_size=200), min_size=1, max_size=4),
    st.lists(
        st.lists(st.sampled_from(["install", "debian", "cai", "3", "スト", "书店", "書", "strasse"]), max_size=2),
        max_size=3,
    ),
    st.sampled_from(LANGUAGES),
)
def test_marks_prepared_once_give_each_texts_snippet(texts, sequences, language):
    """A page of results prepares its query's marks once (``PreparedMarks``) for all its snippets: each
    is the snippet of the marks as given, with its head and without."""
    sequences = marks(*[[[word] for word in sequence] for sequence in sequences])
    prepared = searchsnippet.PreparedMarks(sequences)
    languages = (None, language)
    for words in texts:
        text = " ".join(words)
        head = searchsnippet.snippet_head(text, language)
        for given_head in (head, None):
            assert searchsnippet.snippet(text, prepared, languages, size=40, head=given_head) == searchsnippet.snippet(
                text, sequences, languages, size=40, head=given_head
            )
        assert searchsnippet.marked_ranges(text, prepared, languages) == searchsnippet.marked_ranges(
            text, sequences, languages
        )


@given(st.lists(st.sampled_from([*HEAD_WORDS, "cats", "Dogs", "ΌΤΑΝ", "ǅ"]), max_size=300), st.sampled_from(LANGUAGES))
def test_a_heads_words_are_the_analyzers(words, language):
    text = " ".join(words)
    head = searchsnippet.snippet_head(text, language)
    tokens = list(analysis.tokens(searchsnippet.first_read(text), (None, language)))
    assert head.spans(range(head.words)) == {number: (token.start, token.end) for number, token in enumerate(tokens)}
    expected: dict[str, tuple[list[int], list[int]]] = {}
    for number, token in enumerate(tokens):
        for rank, term in enumerate(token.terms):
            expected.setdefault(term, ([], []))
            expected[term][0].append(number)
            expected[term][1].append(rank)
    assert head.terms == tuple(expected)
    places = head.places(set(head.terms))
    assert {term: (list(numbers), list(ranks)) for term, (numbers, ranks) in places.items()} == expected


def test_a_head_serves_only_the_text_and_language_it_was_made_for():
    text = "Debian Installation du système " * 60
    wanted = marks([["instal"]])  # English's stem of "installation" (French's is "install")
    head = searchsnippet.snippet_head(text, "en")
    assert head is not None and "instal" in head.terms
    # The page changed since it was indexed (the same length): its head is not taken.
    changed = "Installation Debian du système " + text[len("Debian Installation du système ") :]
    worked_out = searchsnippet.snippet(changed, wanted, (None, "en"))
    assert worked_out[1][0][0] == 0
    assert searchsnippet.snippet(changed, wanted, (None, "en"), head=head) == worked_out
    # A head of another language (which, were it taken, would mark nothing) is not taken either.
    french = searchsnippet.snippet_head(text, "fr")
    assert french is not None and "instal" not in french.terms
    worked_out = searchsnippet.snippet(text, wanted, (None, "en"))
    assert worked_out[1]
    assert searchsnippet.snippet(text, wanted, (None, "en"), head=french) == worked_out


def swapped(head, one, other):
    """*head* with the places of terms *one* and *other* swapped."""
    terms = tuple(other if term == one else one if term == other else term for term in head.terms)
    return searchsnippet.Head.of(head.digest, head.language, head.size, terms, head.numbers)


def test_a_head_serves_only_the_analysis_it_was_made_by(monkeypatch):
    text = "Debian Installation du système " * 60
    wanted = marks([["instal"]])
    monkeypatch.setattr(analysis, "ANALYSIS_VERSION", "another Unicode, another Snowball")
    head = searchsnippet.snippet_head(text, "en")
    monkeypatch.undo()
    older = swapped(head, "instal", "debian")  # would mark "Debian", were it taken
    assert searchsnippet.snippet(text, wanted, (None, "en"), head=older) == searchsnippet.snippet(
        text, wanted, (None, "en")
    )
    current = swapped(searchsnippet.snippet_head(text, "en"), "instal", "debian")
    assert searchsnippet.snippet(text, wanted, (None, "en"), head=current)[1][0] == (0, 6)  # taken: "Debian"


def test_a_head_without_stems_does_not_serve_a_stemmed_snippet():
    text = "Installations of Debian"  # read whole: the head would be the only reading
    head = searchsnippet.snippet_head(text, None)
    assert head is not None and "instal" not in head.terms
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


@given(
    st.lists(st.sampled_from(["3.11", "python", "a", "b", "gnu/linux", "c", "新书店"]), max_size=80),
    st.lists(
        st.sampled_from(
            [
                [["3"], ["11"], ["python"]],
                [["11"], ["python"]],
                [["python"]],
                [["a"], ["b"]],
                [["b"]],
                [["a"], ["b", "a"]],
                [["gnu"], ["linux"]],
                [["linux"]],
                [["linux"], ["c"], ["3"]],
                [["新书"], ["书店"]],
                [["书店"]],
            ]
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(min_value=1, max_value=60),
    st.integers(min_value=1, max_value=200),
)
def test_a_heads_marks_are_those_read_word_by_word(words, sequences, size, first_read):
    """Marks ending at the same word, phrases longer than the window, marks just past it: a head's
    set operations find what reading word by word finds, the first mark (which places the window)
    the same."""
    text, sequences = " ".join(words), marks(*sequences)
    kept = searchsnippet.FIRST_READ
    try:
        searchsnippet.FIRST_READ = first_read
        head = searchsnippet.snippet_head(text, "en")
        worked_out = searchsnippet.snippet(text, sequences, (None, "en"), size=size)
        assert searchsnippet.snippet(text, sequences, (None, "en"), size=size, head=head) == worked_out
    finally:
        searchsnippet.FIRST_READ = kept


@given(
    st.lists(
        st.sampled_from([*HEAD_WORDS, "書", "ß", "a\u0301b", "installations", "x" * 30]), min_size=10, max_size=300
    ),
    st.lists(
        st.lists(
            st.sampled_from(
                ["install", "debian", "systeme", "установк", "cai", "3", "11", "スト", "书店", "書", "strasse", "file"]
            ),
            min_size=1,
            max_size=3,
        ),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from(LANGUAGES),
    st.integers(min_value=1, max_value=400),
    st.integers(min_value=1, max_value=100),
    st.integers(min_value=2, max_value=5),
    st.booleans(),
)
def test_a_snippets_marks_read_in_parts_are_those_of_the_whole_text(
    words, terms, language, window, first_read, growth, with_head
):
    """A snippet reads longer and longer beginnings of its text, and after the first read only the
    words past it (past one of its last words through which no mark runs): the marks that reading
    the whole text word by word with the window finds (``marked_ranges``), with a head and without."""
    text, sequences = " ".join(words), marks(*[[[term] for term in sequence] for sequence in terms])
    kept = searchsnippet.FIRST_READ, searchsnippet.READ_GROWTH
    try:
        searchsnippet.FIRST_READ, searchsnippet.READ_GROWTH = first_read, growth
        head = searchsnippet.snippet_head(text, language) if with_head else None
        languages = (None, language)
        expected = searchsnippet.marked_ranges(text, sequences, languages, window)
        prepared = searchsnippet.PreparedMarks(sequences)
        assert searchsnippet._window_ranges(text, prepared, languages, window, head) == expected
    finally:
        searchsnippet.FIRST_READ, searchsnippet.READ_GROWTH = kept


def test_the_window_read_on_is_placed_by_the_first_reads_first_mark():
    # The first read (to the space after 17 characters) holds "3.11" twice: the window of 27 from
    # its first runs to character 27, so "debian" at 19 is marked and the one at 28 is not, though
    # the words read on past the first read would place a window of their own further on.
    text = "3.11 3.11 y x z,11 debian 3 debian,3 11 y y"
    sequences = marks([["3"], ["11"]], [["debian"]])
    kept = searchsnippet.FIRST_READ
    try:
        searchsnippet.FIRST_READ = 17
        prepared = searchsnippet.PreparedMarks(sequences)
        assert searchsnippet._window_ranges(text, prepared, (None, "en"), 27) == [(0, 4), (5, 9), (19, 25)]
    finally:
        searchsnippet.FIRST_READ = kept


def test_the_first_mark_of_a_head_is_the_first_the_words_give():
    # "python" ends two marks ("11 python" and "3 11 python"); the one the reading tries first places
    # the window, and so whether "a b", ending just past it, is marked (visible: no space to cut at).
    text = "3.11 python-a b"
    phrases = [["11"], ["python"]], [["3"], ["11"], ["python"]], [["a"], ["b"]]
    for wanted in (marks(*phrases), marks(*phrases[::-1])):
        for size in range(1, 20):  # windows shorter than a mark too
            assert searchsnippet.snippet(
                text, wanted, (None, "en"), size=size, head=searchsnippet.snippet_head(text, "en")
            ) == searchsnippet.snippet(text, wanted, (None, "en"), size=size), size
    assert searchsnippet.snippet(text, marks(*phrases), (None, "en"), size=13)[1] == [(0, 11), (12, 13)]


@pytest.mark.parametrize(
    "text, phrases",
    [
        # "release installer" ends nowhere: the first mark at "installer" is "installer", not it.
        (
            "debian-installer-guide-debian",
            [[["release"], ["installer"]], [["installer"]], [["debian"], ["installer"]], [["guide"], ["debian"]]],
        ),
        # "installation" gives "installation" (its first term) before "instal": tried in that order.
        ("debian-installation-guide-debian", [[["debian"], ["instal"]], [["installation"]], [["guide"], ["debian"]]]),
    ],
)
def test_the_first_mark_of_a_head_is_one_that_ends_there(text, phrases):
    wanted, head = marks(*phrases), searchsnippet.snippet_head(text, "en")
    for size in range(1, 40):
        worked_out = searchsnippet.snippet(text, wanted, (None, "en"), size=size)
        assert searchsnippet.snippet(text, wanted, (None, "en"), size=size, head=head) == worked_out, size


def packed_head(digest=b"d", language=b"en", size=b"10", count=b"1", terms=b"a", numbers=(0, 2, 0, 0, 0, 1)):
    return b"\x00".join([digest, language, size, count, terms, array("H", numbers).tobytes()])


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"not a head",
        b"d\x00en\x00no size\x001\x00a\x00" + array("H", (0, 2, 0, 0, 0, 1)).tobytes(),
        packed_head(count=b"2"),  # terms missing
        packed_head(count=b"01"),  # a count not written as packed writes it
        packed_head(count=b" 1"),
        packed_head()[:-1],  # numbers cut short
        packed_head(numbers=(1, 2, 0, 0, 0, 1)),  # the first term's places not at the start
        packed_head(numbers=()),
        packed_head() + b"\x00\x00" * 100_000,  # too large
    ],
)
def test_a_damaged_head_is_none(blob):
    assert searchsnippet.unpacked_head(packed_head()) is not None  # each blob one change from it
    assert searchsnippet.unpacked_head(blob) is None


def test_a_head_whose_terms_are_not_utf8_gives_none_of_them():
    # Its terms are searched for as bytes, never decoded: a query's term (valid UTF-8) is not found there.
    head = searchsnippet.unpacked_head(packed_head(terms=b"\xff\xfe"))
    assert head is not None
    assert head.places({"a", "\udcff\udcfe", "\xff\xfe"}) == {}
    assert searchsnippet.snippet("a b c", marks([["a"]]), (None, None), head=head) == ("a b c", [(0, 1)])


@pytest.mark.parametrize("value", ["text", 5, None, bytearray(b"d\x00en")])
def test_what_is_not_a_head_is_none(value):
    assert searchsnippet.unpacked_head(value) is None


@pytest.mark.parametrize(
    "numbers, read",
    [
        ((0, 2, 0, 0, 0, 9), True),  # a word past the first read
        ((0, 2, 0, 0, 1, 1), True),  # a word that ends where it starts
        ((0, 2, 3, 0, 0, 1), True),  # a place of a word that is not there
        ((0, 3, 0, 0, 0, 0, 1), True),  # a place of three numbers
        ((0, 9, 0, 0, 0, 1), False),  # places past the numbers
        ((0, 0, 0, 1), True),  # a term without a place
    ],
)
def test_a_tampered_head_gives_the_snippet_worked_out(numbers, read):
    text = "a b c"
    head = searchsnippet.snippet_head(text, None)
    tampered = searchsnippet.Head.of(head.digest, head.language, head.size, ("a",), array("H", numbers))
    stored = searchsnippet.unpacked_head(tampered.packed())
    assert (stored == tampered) is read  # (its places are checked when read)
    assert searchsnippet.snippet(text, marks([["a"]]), (None, None), head=stored) == ("a b c", [(0, 1)])


def test_a_head_whose_words_are_out_of_order_gives_the_snippet_worked_out():
    text = "a b c d e f"
    head = searchsnippet.snippet_head(text, None)
    numbers = array("H", head.numbers)
    numbers[-4:] = array("H", head.numbers[-2:] + head.numbers[-4:-2])  # the last two words swapped
    tampered = searchsnippet.Head.of(head.digest, head.language, head.size, head.terms, numbers)
    wanted = marks([["e"], ["f"]])
    worked_out = searchsnippet.snippet(text, wanted, (None, None))
    assert worked_out == ("a b c d e f", [(8, 11)])
    assert searchsnippet.snippet(text, wanted, (None, None), head=tampered) == worked_out


def test_a_head_keeps_an_empty_stem():
    head = searchsnippet.snippet_head("Όταν το Debian", "el")  # Greek's stem of "όταν" is ""
    assert head is not None and "" in head.terms
    assert searchsnippet.unpacked_head(head.packed()) == head


def test_an_empty_word_is_never_found():
    assert analysis.word_positions("a b", {"": None, "b": None}) == [(2, "b")]


def test_text_in_a_bigram_script_or_that_folding_moves_has_a_head():
    for text, language, wanted in (
        ("新书店的书 " * 10, "zh", marks([["书店"]], [["新书", "书店"]])),
        ("ﬁle Straße " * 10, "en", marks([["file"]], [["strasse"]])),  # ﬁ, ß fold to two letters
    ):
        head = searchsnippet.snippet_head(text, language)
        worked_out = searchsnippet.snippet(text, wanted, (None, language))
        assert head is not None and worked_out[1]
        assert searchsnippet.snippet(text, wanted, (None, language), head=head) == worked_out


@pytest.mark.parametrize(
    "text, language, one, other",
    [("新书店的书 " * 10, "zh", "书店", "新书"), ("ﬁle Straße " * 10, "en", "file", "strasse")],
)
def test_a_head_of_such_text_is_used(text, language, one, other):
    # Its terms' places swapped: were the text read instead, the snippet would not change.
    tampered = swapped(searchsnippet.snippet_head(text, language), one, other)
    worked_out = searchsnippet.snippet(text, marks([[one]]), (None, language))
    assert (
        searchsnippet.snippet(text, marks([[one]]), (None, language), head=tampered)
        == searchsnippet.snippet(text, marks([[other]]), (None, language))
        != worked_out
    )


def fixture_text(*folders):
    """The visible text of the multilingual fixture's pages in *folders*, one after the other."""
    return " ".join(page.text for folder in folders for page in fixture_pages() if page.name.startswith(f"{folder}/"))


def query_marks(word, language):
    """The marks of a query of one *word*: its words (bigrams: a sequence), each unstemmed or stemmed."""
    return [tuple(frozenset({term, analysis.stem_word(term, language)}) for term in analysis.words(word))]


# A page's text past what its results show (real pages' text, the mark past its first 2,000
# characters): the snippet around the first word giving the query's terms, "… " before it.
@pytest.mark.parametrize(
    "folders, word, language, starts, marked",
    [
        (
            ["en"],
            "lowmem",
            "en",
            "… so. It can however be enabled manually by appending the lowmem=1",
            ["lowmem", "lowmem"],
        ),
        # Typed without accents; a stem (разметка, разметке).
        (["de"], "qualitatsstandards", "de", "… für Freie Software und das Paket entspricht", ["Qualitätsstandards"]),
        (["ru"], "разметка", "ru", "… чтобы выделить место для Debian GNU/Linux. Всегда при", ["разметке"]),
        (["el"], "δίσκο", "el", "… Τι είναι το GNU/Linux; 2.5. Απαιτήσεις Μνήμης", ["Δίσκου", "Δίσκου", "δίσκο"]),
        (["vi"], "Murdock", "vi", "… Mềm Tự Do. Dự Án Debian mới tạo trong năm 1993", ["Murdock"]),
        # Bigram scripts: the word's bigrams together.
        (["ja"], "メーリングリスト", "ja", "… (#debian あるいは #debian-boot)", ["メーリングリスト"]),
        (["ko"], "브라우저", "ko", "… 들어 있습니다. dhelp 를 설치하면", ["브라우저", "브라우저", "브라우저"]),
        (["zh_CN"], "探测", "zh", "… 模式只是借助安装程序强大的硬件", ["探测"]),
        # Right to left, past English text.
        (["en", "ar"], "المستند", "ar", "… اخترتها. الآن اطبع صفحة اختبار.", ["مستند", "المستند"]),
        (["en", "fa"], "موجودیت", "fa", "… داخل یک توضیح یا دستورالعمل", ["موجودیت", "موجودیت\u200cهای", "موجودیت"]),
    ],
)
def test_a_later_snippet_is_around_the_first_mark_in_the_text(folders, word, language, starts, marked):
    text = fixture_text(*folders)
    plain = analysis.fold(analysis.normalize(marked[0]))
    assert plain not in analysis.fold(analysis.normalize(text[:2000]))  # (the mark is well into the text)
    shown, ranges = searchsnippet.later_snippet(text, query_marks(word, language), (None, language))
    assert shown.startswith(starts)
    assert [shown[start:end] for start, end in ranges] == marked


def test_a_later_snippet_of_text_without_spaces_reads_a_bounded_window():
    text = fixture_text("ja", "zh_CN").replace(" ", "")  # (as Japanese and Chinese are written)
    shown, ranges = searchsnippet.later_snippet(text, query_marks("探测", "zh"), (None, "zh"))
    assert shown.startswith("… ") and shown.endswith(" …") and len(shown) <= searchsnippet.SNIPPET_CHARACTERS + 4
    assert [shown[start:end] for start, end in ranges] == ["探测"]


def test_a_later_snippet_of_text_without_a_mark_is_none():
    text = fixture_text("en", "ru")
    assert searchsnippet.later_snippet(text, query_marks("zyzzyva", "en"), (None, "en")) is None
    assert searchsnippet.later_snippet(text, [], (None, "en")) is None
    assert searchsnippet.later_snippet("", query_marks("debian", "en"), (None, "en")) is None


def test_a_later_snippet_looks_at_most_at_its_places_and_reads_at_most_its_tries():
    # "cat" inside longer words: places looked at, not read (their words give no wanted term).
    inside = "concatenate " * (searchsnippet.LATER_PLACES - 1)
    shown, ranges = searchsnippet.later_snippet(inside + "the cat sat", query_marks("cat", "en"), (None, "en"))
    assert [shown[start:end] for start, end in ranges] == ["cat"]
    too_many = "concatenate " * searchsnippet.LATER_PLACES + "the cat sat"
    assert searchsnippet.later_snippet(too_many, query_marks("cat", "en"), (None, "en")) is None
    # The phrase "new york", its words everywhere but never together: each window read gives no mark.
    phrase = [(frozenset({"new"}), frozenset({"york"}))]
    apart = "york and new days " * 20
    shown, ranges = searchsnippet.later_snippet(apart + "in new york", phrase, (None, "en"))
    assert [shown[start:end] for start, end in ranges] == ["new york"]
    too_far = apart * 20 + "in new york"  # (6 windows read: no more)
    assert searchsnippet.later_snippet(too_far, phrase, (None, "en")) is None


# Places whose words give no wanted term are passed over, however many come first; a word written
# with accents is found past a place spelled without them; a read never cuts a word of a script with
# spaces (its piece would be a word of its own).
@pytest.mark.parametrize(
    "text, word, language, marked",
    [
        ("when where " * 400 + "whetted your appetite", "whetted", "en", ["whetted"]),
        ("Asia oriental " * 50 + "los países asiáticos", "asiaticos", "es", ["asiáticos"]),
        ("Asia oriental " * 50 + "los países asiáticos", "asiáticos", "es", ["asiáticos"]),
        ("lorem ipsum " * 300 + "İngilizce öğretmeni", "ingilizce", "tr", ["İngilizce"]),
        ("Ｄｅｂｉａｎ " * 3 + "の" * 300 + " ｄｅｂｉａｎ", "debian", "ja", ["Ｄｅｂｉａｎ"] * 3),
        ("中文文本没有空格" * 40 + "在Windows系统" + "中文" * 40, "win", "en", None),
        ("dog," * 60 + "catalog," + "dog," * 60, "cat", "en", None),
        ("," * 150 + "e\u0301catalog and more", "catalog", "en", None),  # (écatalog)
    ],
)
def test_a_later_snippet_reads_only_where_a_word_gives_a_wanted_term(text, word, language, marked):
    found = searchsnippet.later_snippet(text, query_marks(word, language), (None, language))
    if marked is None:
        assert found is None
    else:
        shown, ranges = found
        assert [shown[start:end] for start, end in ranges][: len(marked)] == marked


def test_a_later_snippet_looks_for_a_phrase_where_its_rarest_word_stands():
    # "os.path.join" on the page of os.path (Python's docs): "path" is everywhere, "join" in one place;
    # the phrase was looked for at "path" only, whose first places (LATER_TRIES) hold no "join".
    text = "os.path.exists(path) returns True if path refers to an existing path. " * 40
    text += "os.path.join(path, *paths) joins one or more path segments."
    phrase = [(frozenset({"os"}), frozenset({"path"}), frozenset({"join"}))]
    shown, ranges = searchsnippet.later_snippet(text, phrase, (None, "en"))
    assert [shown[start:end] for start, end in ranges] == ["os.path.join"]


def test_a_later_snippet_counts_a_phrases_words_without_their_accents():
    # "syst\u00e8me" everywhere, written with its accent, counted as "systeme" (the piece looked for):
    # counted as written, it was on no place, taken as the rarest word, and no place held the phrase.
    text = (
        "Le syst\u00e8me est pr\u00eat et le syst\u00e8me d\u00e9marre. " * 40 + "Monter un syst\u00e8me de fichiers."
    )
    phrase = [(frozenset({"systeme"}), frozenset({"de"}), frozenset({"fichiers", "fichi"}))]
    shown, ranges = searchsnippet.later_snippet(text, phrase, (None, "fr"))
    assert [shown[start:end] for start, end in ranges] == ["syst\u00e8me de fichiers"]


def test_a_later_snippet_looks_for_the_longest_pieces_only():
    query = [(frozenset({f"word{number:03d}x"}),) for number in range(100)]
    looked = searchsnippet._later_pieces(searchsnippet.PreparedMarks(query), "")
    assert [len(kind.pieces) for kind in looked] == [searchsnippet.LATER_PIECES]


# A read is cut at a space near its bound, else where no word of a script with spaces is cut.
@pytest.mark.parametrize(
    "text, at, before, after",
    [
        ("one two three", 5, 4, 7),
        ("中文在Windows系统中文", 6, 3, 10),  # (in "Windows": its ends; a bigram script is cut anywhere)
        ("中文文本没有空格", 4, 4, 4),
        ("x,e\u0301catalog,y", 4, 2, 11),  # (between a letter and its mark: the word's ends)
        ("abc", 0, 0, 0),
        ("abc", 3, 3, 3),
    ],
)
def test_a_later_read_is_cut_between_words(text, at, before, after):
    assert searchsnippet._cut_before(text, at) == before
    assert searchsnippet._cut_after(text, at) == after


def test_a_later_snippet_looks_for_the_telling_words_first():
    # "B.1. Introduction": the phrase b 1 is looked for only where no page's word introduction is.
    text = "a b c 1 2 " * 400 + "see the introduction here"
    query = [(frozenset({"b"}), frozenset({"1"})), (frozenset({"introduction", "introduct"}),)]
    shown, ranges = searchsnippet.later_snippet(text, query, (None, "en"))
    assert [shown[start:end] for start, end in ranges] == ["introduction"]
    shown, ranges = searchsnippet.later_snippet("a b c " * 20 + "b 1", query, (None, "en"))
    assert [shown[start:end] for start, end in ranges] == ["b 1"]
    assert searchsnippet.later_snippet("b c 1 " * 400 + "b 1", query, (None, "en")) is None  # b and 1 everywhere


@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "δέλτα", "эпсилон", "ζήτα", "書", "ab"]), max_size=1500),
    st.integers(min_value=0),
    st.sampled_from(["zebra", "zebras", "Zèbre", "ЗЕБРА"]),
)
def test_a_later_snippet_finds_a_word_anywhere_and_shows_it(filler, at, word):
    at %= len(filler) + 1
    text = " ".join([*filler[:at], word, *filler[at:]])
    shown, ranges = searchsnippet.later_snippet(text, query_marks(word, "en"), (None, "en"))
    assert shown.startswith("… ") and len(shown) <= searchsnippet.SNIPPET_CHARACTERS + 4
    assert [shown[start:end] for start, end in ranges] == [word]


def test_a_first_read_without_spaces_past_the_bound_has_no_head():
    assert searchsnippet.snippet_head("新" * searchsnippet.HEAD_CHARACTERS, "zh") is not None
    assert searchsnippet.snippet_head("新" * (searchsnippet.HEAD_CHARACTERS + 1), "zh") is None


@given(
    st.lists(st.text(st.characters(blacklist_characters=" \x00"), max_size=6), unique=True, max_size=20),
    st.sets(st.text(st.characters(blacklist_characters=" \x00"), max_size=6), max_size=20),
)
def test_a_heads_places_are_those_of_its_terms_found_whole(terms, others):
    """A head's terms are found in its UTF-8 listing by a search each: only whole terms (not one
    inside another, the empty term too), at their own places."""
    count = len(terms)
    numbers = array("H", [2 * number for number in range(count + 1)])  # each term one place: word i, rank 0
    for number in range(count):
        numbers.extend((number, 0))
    for number in range(count):
        numbers.extend((2 * number, 2 * number + 1))
    head = searchsnippet.Head.of("d", "", 2 * count, terms, numbers)
    assert searchsnippet.unpacked_head(head.packed()) == head
    assert head.terms == tuple(terms)
    wanted = others | set(terms[::2])
    places = head.places(wanted)
    assert {term: (list(words), list(ranks)) for term, (words, ranks) in places.items()} == {
        term: ([terms.index(term)], [0]) for term in wanted if term in terms
    }


def test_a_heads_places_table():
    head = searchsnippet.snippet_head("in installation instal Éé 书店 in", None)
    assert head.terms == ("in", "installation", "instal", "ee", "书店")
    # (A term holding a space, which no query gives, is not found across two terms.)
    wanted = {"in", "inst", "instal", "installatio", "installation", "n", "e", "ee", "书", "书店", ""}
    wanted.add("in installation")
    places = head.places(wanted)
    assert {term: list(words) for term, (words, _) in places.items()} == {
        "in": [0, 5],
        "installation": [1],
        "instal": [2],
        "ee": [3],
        "书店": [4],
    }


# A page's marks: without another language's stems of a word typed (matching.stemmed_only_in).
INIT = {"in": frozenset({"ca"})}


@pytest.mark.parametrize(
    ("marks", "only_in", "language", "kept"),
    [
        ([(frozenset({"init", "in"}),)], INIT, "en", [(frozenset({"init"}),)]),
        ([(frozenset({"init", "in"}),)], INIT, "ca", [(frozenset({"init", "in"}),)]),
        ([(frozenset({"init", "in"}),)], INIT, None, [(frozenset({"init"}),)]),
        # A page whose words are not stemmed (Japanese has no stemmer) holds English stems.
        ([(frozenset({"booting", "boot"}),)], {"boot": frozenset({"en"})}, "ja", [(frozenset({"booting", "boot"}),)]),
        ([(frozenset({"init", "in"}),)], INIT, "ja", [(frozenset({"init"}),)]),
        # A mark left with a position of nothing is no mark; the other marks stay.
        ([(frozenset({"in"}),), (frozenset({"python"}),)], INIT, "en", [(frozenset({"python"}),)]),
        ([(frozenset({"in"}), frozenset({"python"}))], INIT, "fr", []),
        ([(frozenset({"in"}), frozenset({"python"}))], {}, "fr", [(frozenset({"in"}), frozenset({"python"}))]),
    ],
)
def test_a_pages_marks_leave_out_other_languages_stems(marks, only_in, language, kept):
    assert searchsnippet.marks_in(marks, only_in, language) == kept


@given(
    st.lists(st.lists(st.frozensets(st.sampled_from("abcdef"), min_size=1), min_size=1, max_size=3), max_size=4),
    st.dictionaries(st.sampled_from("abcdef"), st.frozensets(st.sampled_from(["ca", "en", "fr"]))),
    st.sampled_from(["ca", "en", "fr", None]),
)
def test_a_pages_marks_are_the_marks_with_only_its_languages_terms(marks, only_in, language):
    kept = searchsnippet.marks_in(marks, only_in, language)
    stems = "en" if language is None else language  # (a page of no language said holds English stems)
    allowed = {term for term in "abcdef" if term not in only_in or stems in only_in[term]}
    expected = [tuple(position & allowed for position in sequence) for sequence in marks]
    assert kept == [sequence for sequence in expected if all(sequence)]
    assert searchsnippet.marks_in(marks, {}, language) == [tuple(map(frozenset, sequence)) for sequence in marks]


# A sentence of the installation guide in German (de/apbs04.html) after a page of other text: "der" is on
# most German pages, "Partitionierung" on few.
PARTITIONING = " ".join(["Die Konfiguration der Uhr und der Zeitzone."] * 12) + (
    " B.4.7. Partitionierung Die Möglichkeiten der Voreinstellung der Partitionierung der Festplatte"
    " sind auf das beschränkt, was von partman-auto unterstützt wird."
)


@pytest.mark.parametrize(
    "placing, rarer_marked, placed",
    [
        # The first place of a rarer word places the window (after the characters shown before it);
        # the other words in it are marked too.
        ([[["partitionierung"]]], ["Partitionierung", "Partitionierung", "Festplatte"], True),
        ([[["festplatte"]], [["partitionierung"]]], ["Partitionierung", "Partitionierung", "Festplatte"], True),
        ([[["festplatte"]]], ["Partitionierung", "Festplatte"], True),
        # A placing word the text does not hold: the others; none: the first mark of any ("der").
        ([[["grub"]], [["festplatte"]]], ["Partitionierung", "Festplatte"], True),
        ([[["grub"]]], [], False),
        ([], [], False),
    ],
)
def test_the_rarest_word_the_text_holds_places_the_snippet(placing, rarer_marked, placed):
    every = marks([["der"]], [["partitionierung"]], [["festplatte"]])
    placing_marks = searchsnippet.Placing([mark for sequence in placing for mark in marks(sequence)])
    found = searchsnippet.placed_snippet(PARTITIONING, every, ["de"], placing=placing_marks)
    snippet, ranges = found[:2]
    shown = [snippet[start:end] for start, end in ranges]
    assert [word for word in shown if word != "der"] == rarer_marked and found[2] is placed, snippet
    assert shown.count("der") >= 2  # the common word marked wherever the window shows it
    assert snippet.startswith("… " if placed else "Die Konfiguration der Uhr")
    assert searchsnippet.snippet(PARTITIONING, every, ["de"], placing=placing_marks) == (snippet, ranges)


@given(
    st.lists(st.sampled_from([*HEAD_WORDS, "filler", "words", "der"]), max_size=400),
    st.lists(
        st.sampled_from(["install", "debian", "der", "3", "スト", "书店", "strasse", "words"]), min_size=2, max_size=4
    ),
    st.sampled_from(LANGUAGES),
    st.integers(min_value=1, max_value=300),
)
def test_a_placed_snippet_from_a_stored_head_is_the_snippet_worked_out(words, terms, language, first_read):
    """The window a rarer mark places: the same marks read from the stored head as from the text, and
    that mark's first place among them."""
    text, sequences = " ".join(words), marks(*[[[term]] for term in terms])
    placing = searchsnippet.Placing(sequences[1:])
    kept = searchsnippet.FIRST_READ
    try:
        searchsnippet.FIRST_READ = first_read
        head = searchsnippet.snippet_head(text, language)
        languages = (None, language)
        # (A window wider than the characters shown before its first mark: that mark is in it.)
        size = 2 * searchsnippet.BEFORE_CHARACTERS
        with_head = searchsnippet.placed_snippet(text, sequences, languages, size=size, head=head, placing=placing)
        assert with_head == searchsnippet.placed_snippet(text, sequences, languages, size=size, placing=placing)
        snippet, ranges, placed = with_head
        holding = searchsnippet.marked_ranges(text, placing.together, languages)
        assert placed is bool(holding)
        if holding:  # the first place of one of them is marked in the snippet
            first_start, first_end = holding[0]
            shown = [snippet[start:end] for start, end in ranges]
            assert text[first_start:first_end] in shown, (snippet, shown)
    finally:
        searchsnippet.FIRST_READ = kept


def test_one_word_of_a_phrase_does_not_stand_for_the_phrase_that_places_the_snippet():
    # (A review's find: the window that showed "grub" was kept for the phrase "grub installation".)
    text = "debian grub " * 300 + "the grub installation step."
    every = marks([["grub"]], [["grub"], ["instal"]])
    snippet, ranges = searchsnippet.snippet(text, every, ["en"], placing=searchsnippet.Placing(every[1:]))
    assert "grub installation" in [snippet[start:end] for start, end in ranges], snippet


# later_snippet keeps the texts it read, lowercased and folded (``_later_text``): a page's rest is read
# again by the next searches.  Asked of a text kept, it answers as it does of a text read the first time.
_LATER_WORDS = ["Système", "systeme", "de", "fichiers", "FICHIERS", "os.path", "join", "Ärger", "ärger", "naïve", "x"]


@given(
    st.lists(st.lists(st.sampled_from(_LATER_WORDS), max_size=300), min_size=1, max_size=3),
    st.lists(st.lists(st.sampled_from(_LATER_WORDS), min_size=1, max_size=3), min_size=1, max_size=4),
)
def test_a_later_snippet_of_a_text_kept_is_that_of_the_text_read_anew(texts, queries):
    texts = [" ".join(words) for words in texts]
    marks = [[tuple(frozenset(analysis.words(word)) for word in words)] for words in queries]
    marks = [[sequence for sequence in mark if all(sequence)] for mark in marks]
    for mark in marks:
        for text in texts:
            searchsnippet._later_texts.clear()
            anew = searchsnippet.later_snippet(text, mark, (None, "fr"))
            kept = searchsnippet.later_snippet(text, mark, (None, "fr"))
            assert text in searchsnippet._later_texts
            assert kept == anew
    # Texts of the same length, read one after the other, kept apart.
    assert searchsnippet.later_snippet("zzz naïve", [(frozenset({"naive"}),)], (None, "fr")) is not None
    assert searchsnippet.later_snippet("zzz paris", [(frozenset({"naive"}),)], (None, "fr")) is None


def test_the_texts_later_snippet_keeps_are_bounded(monkeypatch):
    monkeypatch.setattr(searchsnippet, "LATER_TEXTS_KEPT", 30)
    searchsnippet._later_texts.clear()
    monkeypatch.setattr(searchsnippet, "_later_texts_kept", 0)
    mark = [(frozenset({"join"}),)]
    assert searchsnippet.later_snippet("join them", mark, (None, "en")) is not None  # 27 kept
    assert list(searchsnippet._later_texts) == ["join them"]
    assert searchsnippet.later_snippet("a join", mark, (None, "en")) is not None  # 18 more: the first forgotten
    assert list(searchsnippet._later_texts) == ["a join"]
    assert searchsnippet.later_snippet("x" * 11 + " join", mark, (None, "en")) is not None  # 48: not kept
    assert list(searchsnippet._later_texts) == []


# A head is checked against a first read by its digest, kept for the next searches (``_first_read_digest``).
@given(st.lists(st.text(max_size=30), max_size=12))
def test_a_first_reads_digest_kept_is_its_digest(firsts):
    for first in [*firsts, *firsts]:
        assert searchsnippet._first_read_digest(first) == searchsnippet._digest(first)
        assert len(searchsnippet._digests) <= searchsnippet.DIGESTS_KEPT


def test_the_first_reads_digests_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(searchsnippet, "DIGESTS_KEPT", 2)
    searchsnippet._digests.clear()
    for first in ("one", "two", "one", "three"):
        searchsnippet._first_read_digest(first)
    assert list(searchsnippet._digests) == ["three"]


# _found keeps the folds of the long texts past ASCII it read (``_kept_fold``): a page's text past its
# first read is read again, cut at the same places, by the next searches.  Asked of a text kept, it
# finds what it finds in a text read the first time (a Greek, a Japanese word: not folded in place,
# or in a bigram script).
_FOLDED_WORDS = [*_LATER_WORDS, "ΣΥΣΤΗΜΑ", "σύστημα", "ﬁle", "İstanbul", "システム", "étoile"]


# (No deadline: a loaded machine took 300 ms over an example, past hypothesis's 200 ms.)
@settings(deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_FOLDED_WORDS), min_size=1, max_size=30), min_size=1, max_size=3),
    st.lists(st.lists(st.sampled_from(_FOLDED_WORDS), min_size=1, max_size=3), min_size=1, max_size=4),
    st.integers(1, 3),
)
def test_the_marks_of_a_long_text_kept_folded_are_those_of_the_text_read_anew(texts, queries, times):
    # (Past FIRST_READ characters: a text read on; a few words repeated, as a page repeats its words.)
    texts = [" ".join(words * (times * 1_000 // len(" ".join(words)))) for words in texts]
    marks = [[tuple(frozenset(analysis.words(word)) for word in words)] for words in queries]
    marks = [[sequence for sequence in mark if all(sequence)] for mark in marks]
    for mark in marks:
        for text in texts:
            searchsnippet._folds.clear()
            anew = searchsnippet.marked_ranges(text, mark, (None, "fr"), 200)
            kept = searchsnippet.marked_ranges(text, mark, (None, "fr"), 200)
            assert (text in searchsnippet._folds) == (len(text) > searchsnippet.FIRST_READ and not text.isascii())
            assert kept == anew


def test_the_folds_found_keeps_are_bounded(monkeypatch):
    monkeypatch.setattr(searchsnippet, "FOLDS_KEPT", 4_000)
    searchsnippet._folds.clear()
    monkeypatch.setattr(searchsnippet, "_folds_kept", 0)
    mark = [(frozenset({"naive"}),)]
    first, second, long = "naïve " * 200, "étoile naïve " * 100, "naïve " * 500
    assert searchsnippet.marked_ranges(first, mark, (None, "fr"))[:1] == [(0, 5)]  # 2,400 kept
    assert list(searchsnippet._folds) == [first]
    assert searchsnippet.marked_ranges(second, mark, (None, "fr"))[:1] == [(7, 12)]  # 2,600 more: the first forgotten
    assert list(searchsnippet._folds) == [second]
    assert searchsnippet.marked_ranges(long, mark, (None, "fr"))[:1] == [(0, 5)]  # 6,000: not kept
    assert list(searchsnippet._folds) == []
    assert searchsnippet.marked_ranges("naïve ok", mark, (None, "fr")) == [(0, 5)]  # short: read, not kept
    assert list(searchsnippet._folds) == []
