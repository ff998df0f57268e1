"""rank=relevance end to end, on real pages in twelve languages (tests/fixtures/multilingual/): written
as a page directory, indexed by `tse index`, searched through the app (Starlette's test client, as
tests/test_search.py does) and `tse query`.

Every expected value comes from the pages themselves, read with plain regular expressions
(tests/support/multilingual.py), or is written here literally: never from the engine.
"""

# ruff: noqa: RUF001, RUF002 (the pages' own words, in Greek, Cyrillic and typographic punctuation)

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import pytest
from starlette.testclient import TestClient

from tests.conftest import run_tse
from tests.support.inprocess import tse_ok_here
from tests.support.multilingual import (
    FixturePage,
    fixture_pages,
    indexed_fixture_directory,
    page_named,
    write_fixture_directory,
)
from tests.support.pages import write_pages
from tse_scrapy.fulltext import matching
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.search.app import create_app

TOP_KEYS = {"query", "rank", "total", "page", "per_page", "lang", "partial", "missing", "suggestion", "results"}
RESULT_KEYS = {"docid", "url", "score", "title", "snippet", "highlights", "lang", "also", "pdf"}
# Scripts written without spaces: a word or phrase there is a run of characters, found as a substring.
UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
PAGES = {page.doc_id: page for page in fixture_pages()}


def index_pages(pages, index):
    """*pages* indexed as `tse index` indexes them (in this process: a set-up, ~0.5 s of CPU saved a call)."""
    tse_ok_here("index", pages, index)
    assert index.with_name(index.name + ".search").is_file()
    return index


def app_client(pages, index) -> TestClient:
    """The app `tse serve PAGES INDEX --answer-cache 0` runs, over Starlette's test client: tests here
    change the search's bounds between two searches of the same words (monkeypatch), which no server's
    code does, so no answer is kept to be sent again (tests/test_answercache.py tests the kept ones)."""
    return TestClient(create_app(QueryEngine(pages, IndexReader(index)), answer_bytes=0))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return indexed_fixture_directory(tmp_path_factory.mktemp("multilingual"))


@pytest.fixture(scope="module")
def client(corpus):
    return app_client(*corpus)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """sentences_client's app, made once in the module for each list of (language, sentence) texts: the
    cases of a parametrized test search the same index (a `tse index` each case was a second or more of
    the module's time), and only read it."""
    made: dict[tuple, TestClient] = {}

    def client_of(texts: list[tuple[str, str]]) -> TestClient:
        key = tuple(texts)
        if key not in made:
            made[key] = sentences_client(tmp_path_factory.mktemp("sentences"), texts)
        return made[key]

    return client_of


def search(client, query, known=PAGES, **params):
    """The JSON answer to *query* (rank=relevance, 100 a page), checked for what every answer must be:
    its keys, highlights inside the snippet in order, and each result's URL, title and language those
    of the page (for the fixture's pages, *known*)."""
    response = client.get("/api/search", params={"q": query, "rank": "relevance", "per_page": 100, **params})
    assert response.status_code == 200, (query, response.text)
    body = response.json()
    assert set(body) == TOP_KEYS and body["rank"] == "relevance" and body["query"] == query
    assert body["lang"] == params["lang"] if "lang" in params else body["lang"] in (None, "")
    for result in body["results"]:
        assert set(result) == RESULT_KEYS, result
        end = 0
        for start, stop in result["highlights"]:
            assert end <= start < stop <= len(result["snippet"]), (query, result["highlights"])
            end = stop
        page = known.get(result["docid"])
        if page is not None:
            assert (result["url"], result["title"]) == (page.url, page.title)
            assert result["lang"] == page.lang, (query, page.name, result["lang"])
    return body


def doc_ids(body) -> list[int]:
    return [result["docid"] for result in body["results"]]


def result_for(body, page: FixturePage) -> dict:
    (result,) = [result for result in body["results"] if result["docid"] == page.doc_id]
    return result


def marked(result) -> list[str]:
    """The snippet's highlighted pieces, adjacent ranges joined (a CJK word may be marked bigram by bigram)."""
    pieces, last = [], None
    for start, stop in result["highlights"]:
        if last is not None and start == last[1]:
            last = (last[0], stop)
            pieces[-1] = result["snippet"][last[0] : stop]
        else:
            last = (start, stop)
            pieces.append(result["snippet"][start:stop])
    return pieces


def holds(page: FixturePage, words: str, accents: bool = True) -> bool:
    """Whether the page's title or visible text holds *words* (ignoring case, and accents unless
    *accents*): as a substring in scripts written without spaces, else as whole words."""
    text, words = f"{page.title} {page.text}".casefold(), words.casefold()
    if not accents:
        text, words = without_accents(text), without_accents(words)
    if UNSPACED.search(words):
        return words in text
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text) is not None


def without_accents(text: str) -> str:
    """*text* with its combining marks dropped (``é`` → ``e``, ``ά`` → ``α``, ``مُ`` → ``م``)."""
    return unicodedata.normalize(
        "NFC", "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    )


# Known-item search: each page's own title, as typed.


def test_every_page_is_found_by_its_title(client):
    titles = [page.title.casefold() for page in PAGES.values()]
    ranks = {}
    for page in PAGES.values():
        if titles.count(page.title.casefold()) > 1:
            continue  # a title two pages share names neither
        ids = doc_ids(search(client, page.title))
        ranks[page.name] = ids.index(page.doc_id) + 1 if page.doc_id in ids else None
    assert len(ranks) == 44
    mrr = sum(1 / rank for rank in ranks.values() if rank) / len(ranks)
    missed = {name: rank for name, rank in ranks.items() if rank not in (1, 2)}
    assert mrr >= 0.95 and not missed, (mrr, missed)
    languages = {name.split("/")[0] for name in ranks}  # every language is in the measure
    assert languages == {"ar", "de", "el", "en", "es", "fa", "fr", "ja", "ko", "ru", "vi", "zh_CN"}


# Each script: a word, the word without accents, a phrase and its reverse, an exclusion.


@dataclass(frozen=True)
class Case:
    script: str
    page: str  # the fixture page the word and the phrase come from
    word: str  # as the page writes it
    bare: str | None  # the word typed without its accents (None: the script has none, or the word)
    phrase: str  # three consecutive words (characters in CJK) of the page
    exclusion: tuple[str, str]  # "a -b": a word some pages hold without b, some with it


CASES = [
    Case("Latin (French)", "fr/ch07s01.html", "fumée", "fumee", "premier écran que", ("Debian", "Windows")),
    Case(
        "Latin (German)", "de/apes01.html", "Übersetzung", "Ubersetzung", "der Übersetzung dieses", ("Debian", "Sarge")
    ),
    Case(
        "Latin (Spanish)", "es/ch08s06.html", "cósmicos", "cosmicos", "rayos cósmicos golpearon", ("Linux", "Windows")
    ),
    Case("Cyrillic", "ru/ch03s02.html", "надёжном", "надежном", "что вы сохранили", ("Debian", "установки")),
    Case(
        "Greek",
        "el/ch07s01.html",
        "ηλεκτρολόγοι",
        "ηλεκτρολογοι",
        "οι ηλεκτρολόγοι μηχανικοί",
        ("Debian", "συστήματος"),
    ),
    Case("Arabic", "ar/apt.html", "مُعتمدات", "معتمدات", "تعذرت المصادقة على", ("هذه", "الطابعة")),
    Case("Persian", "fa/colors.html", "مثلث", None, "مثلث داخلی انتخاب", ("یک", "رنگ")),
    Case("Han", "zh_CN/ch08s06.html", "宇宙射线", None, "小心翼", ("系统", "启动")),
    Case("Kana", "ja/ch07s01.html", "スモークテスト", None, "パニッ", ("システム", "ブート")),
    Case("Hangul", "ko/ch08s06.html", "응급복구", None, "방사선", ("시스템", "부팅")),
    Case("Vietnamese", "vi/ch07s03.html", "nhắc", "nhac", "dấu nhắc đăng", ("của", '"phát hành"')),
]
BY_SCRIPT = pytest.mark.parametrize("case", CASES, ids=[case.script for case in CASES])
UNACCENTED = pytest.mark.parametrize(
    "case", [case for case in CASES if case.bare], ids=[case.script for case in CASES if case.bare]
)


def test_the_cases_come_from_their_pages():
    for case in CASES:
        page = page_named(case.page)
        assert holds(page, case.word) and holds(page, case.phrase), case
        if case.bare:
            assert case.bare != case.word and not holds(page, case.bare), case  # the page has it with accents only


@BY_SCRIPT
def test_a_word_finds_its_page(client, case):
    page = page_named(case.page)
    body = search(client, case.word)
    assert page.doc_id in doc_ids(body)[:10], (case.word, [PAGES[d].name for d in doc_ids(body)[:10]])
    assert body["partial"] is False


@BY_SCRIPT
def test_highlights_mark_the_word_as_the_page_writes_it(client, case):
    result = result_for(search(client, case.word), page_named(case.page))
    pieces = marked(result)
    assert pieces and all(piece.casefold() == case.word.casefold() for piece in pieces), (case.word, pieces)


@UNACCENTED
def test_the_word_typed_without_accents_finds_its_page_and_marks_the_pages_spelling(client, case):
    page = page_named(case.page)
    body = search(client, case.bare)
    assert page.doc_id in doc_ids(body)[:10], (case.bare, [PAGES[d].name for d in doc_ids(body)[:10]])
    pieces = marked(result_for(body, page))
    assert pieces and all(piece.casefold() == case.word.casefold() for piece in pieces), (case.bare, pieces)


def reversed_phrase(phrase: str) -> str:
    return " ".join(reversed(phrase.split())) if " " in phrase else phrase[::-1]


@BY_SCRIPT
def test_a_phrase_finds_its_page_and_the_reversed_phrase_finds_nothing(client, case):
    page = page_named(case.page)
    backwards = reversed_phrase(case.phrase)
    assert backwards != case.phrase and not any(holds(other, backwards) for other in PAGES.values())
    assert page.doc_id in doc_ids(search(client, f'"{case.phrase}"'))
    body = search(client, f'"{backwards}"')
    assert body["total"] == 0 and body["results"] == [], [PAGES[d].name for d in doc_ids(body)]


@BY_SCRIPT
def test_an_excluded_word_is_in_no_result(client, case):
    a, b = case.exclusion
    b_text = b.strip('"')
    # Some pages hold a without b (there must be answers), and some hold both (the exclusion bites).
    assert any(holds(page, a) and not holds(page, b_text) for page in PAGES.values())
    assert any(holds(page, a) and holds(page, b_text) for page in PAGES.values())
    body = search(client, f"{a} -{b}")
    # No answer holds b, even spelled with other accents (they are optional); some answer holds a.
    holding = [PAGES[d].name for d in doc_ids(body) if holds(PAGES[d], b_text, accents=False)]
    assert not holding, (f"{a} -{b}", holding)
    assert any(holds(PAGES[d], a) for d in doc_ids(body)), (f"{a} -{b}", [PAGES[d].name for d in doc_ids(body)])


# Another language's stem of a word typed is another word on a page of another language: "their" is
# "the" stemmed in Spanish, "does" "do" in French and "dos" in German; the English pages hold "the" and
# "do" as the English words.
@pytest.mark.parametrize(("word", "page_name"), [("their", "en/ch01s01.html"), ("does", "en/ch08s06.html")])
def test_a_word_finds_no_page_through_another_languages_stem_of_it(client, word, page_name):
    assert [page.name for page in PAGES.values() if holds(page, word)] == [page_name]
    body = search(client, word)
    assert [PAGES[doc_id].name for doc_id in doc_ids(body)] == [page_name]
    # ... nor marks the other language's stem on the page: "the" is no "their".
    assert {piece.casefold() for piece in marked(result_for(body, page_named(page_name)))} == {word}


@pytest.mark.parametrize("query", ["their zzzyqx", 'their OR "zzzyqx qxzzy"'])
def test_partial_matches_and_or_groups_hold_a_word_in_their_languages_only(client, query):
    # "zzzyqx" is on no page (partial matches: the pages answering some word), and a phrase on none in
    # an OR group: the answers are still the pages holding "their", not those holding "the".
    assert [PAGES[doc_id].name for doc_id in doc_ids(search(client, query))] == ["en/ch01s01.html"]


@pytest.mark.parametrize(
    "query, missing",
    [
        ("their zzzyqx", ["zzzyqx"]),
        ("zzzyqx their qxzzyq", ["zzzyqx", "qxzzyq"]),
        ('their "zzzyqx qxzzy"', ['"zzzyqx qxzzy"']),
        ("their zzzyqx OR qxzzyq", ["zzzyqx OR qxzzyq"]),
        ("their zzzyqx zzzyqx", ["zzzyqx"]),  # (typed twice: one word, "the other word" is "their")
        # Each word on some page, none on a page with the other: no word named.
        ("fumée Übersetzung", []),
    ],
)
def test_partial_matches_name_the_words_no_page_holds(client, query, missing):
    assert all(not holds(page, word) for page in PAGES.values() for word in ("zzzyqx", "qxzzyq", "qxzzy"))
    body = search(client, query)
    assert body["partial"] is True and body["missing"] == missing and body["results"], body["missing"]
    page = client.get("/search", params={"q": query}).text
    notice = re.search(r'<p class="notice">(No page has .*?)</p>', page).group(1)
    # The count says so too ("2217 documents match" under "No page has every word" read as a contradiction).
    assert re.search(r'<p class="count">\d+ documents? match(es)? some words of “<bdi>', page), page
    if missing:
        named = re.findall(r"“<bdi>(.*?)</bdi>”", notice)
        assert [name.replace("&#34;", '"') for name in named] == missing, notice
        assert notice.endswith(": these pages have the other word."), notice  # ("their", once)
    else:
        assert notice == "No page has every word: these pages have some of them.", notice


def test_a_whole_answer_names_no_missing_word_and_a_corrected_word_is_not_missing(client):
    assert search(client, "their")["missing"] == []
    # A misspelt word is corrected, not missing: "their" is on a page, "debain" (debian) on many.
    body = search(client, "their debain zzzyqx")
    assert body["partial"] is True and body["missing"] == ["zzzyqx"], body["missing"]


def test_pages_whose_words_are_not_stemmed_answer_a_words_english_stem(client):
    # Japanese, Chinese and Korean have no stemmer: a page's words are as written, and "boot" there is
    # English ("booting"'s stem), as on the English pages.
    holding = {page.name for page in PAGES.values() if page.lang in ("ja", "zh", "ko") and holds(page, "boot")}
    assert len(holding) >= 3
    found = {PAGES[doc_id].name for doc_id in doc_ids(search(client, "booting"))}
    assert holding <= found, sorted(holding - found)


def test_an_excluded_word_leaves_in_the_pages_holding_another_languages_stem_of_it(client):
    # "-their" leaves out the page holding "their", not those holding "the" (its Spanish stem).
    holding_the = [page for page in PAGES.values() if holds(page, "debian") and holds(page, "the")]
    kept = [page.name for page in holding_the if not holds(page, "their")]
    assert len(kept) >= 2
    found = [PAGES[doc_id].name for doc_id in doc_ids(search(client, "debian -their"))]
    assert set(kept) <= set(found), sorted(set(kept) - set(found))
    assert not [name for name in found if holds(page_named(name), "their")]


def test_a_stemmed_match_is_marked_as_the_page_writes_it(client):
    page = page_named("en/ch02s05.html")  # "2.5. Memory and Disk Space Requirements"
    assert not holds(page, "requirement")
    pieces = marked(result_for(search(client, "requirement"), page))
    assert pieces and set(pieces) == {"Requirements"}, pieces


@pytest.mark.parametrize(
    "phrase",
    ["disk space requirement", "Disk Space Requirements", "disk spaces requirements", "memory and disks"],
)
def test_a_quoted_phrase_is_the_words_as_typed_and_unquoted_words_any_form(client, phrase):
    """Quoted, the words must stand as typed (case and accents aside); unquoted, any form finds them."""
    page = page_named("en/ch02s05.html")  # "2.5. Memory and Disk Space Requirements"
    quoted = doc_ids(search(client, f'"{phrase}"'))
    assert [PAGES[d].name for d in quoted if not holds(PAGES[d], phrase)] == [], phrase
    assert (page.doc_id in quoted) == holds(page, phrase), phrase
    assert page.doc_id in doc_ids(search(client, phrase))  # unquoted: stems
    # Excluded quoted, the phrase as typed only.
    assert (page.doc_id in doc_ids(search(client, f'memory -"{phrase}"'))) != holds(page, phrase), phrase
    pieces = marked(result_for(search(client, f'"{phrase}"'), page)) if holds(page, phrase) else []
    assert all(piece.casefold() == phrase.casefold() for piece in pieces), pieces


def test_or_in_capitals_is_either_and_lowercase_or_is_a_word(client):
    fumee, uebersetzung = page_named("fr/ch07s01.html"), page_named("de/apes01.html")
    either = search(client, "fumée OR Übersetzung")
    assert set(doc_ids(either)) == {fumee.doc_id, uebersetzung.doc_id} and either["partial"] is False
    scripts = search(client, "スモークテスト OR 응급복구 OR مثلث")
    expected = {page_named(name).doc_id for name in ("ja/ch07s01.html", "ko/ch08s06.html", "fa/colors.html")}
    assert set(doc_ids(scripts)) == expected and scripts["partial"] is False
    # Lowercase "or" is a word to find: no page has all three words, so only partial matches.
    assert not any(holds(page, w) for w in ("fumée", "Übersetzung") for page in PAGES.values() if holds(page, "or"))
    word = search(client, "fumée or Übersetzung")
    assert word["partial"] is True
    # And pages that have both words: only those holding "or" (the English ones here).
    both = search(client, "Debian or")
    assert both["partial"] is False and both["results"]
    assert all(holds(PAGES[d], "or") for d in doc_ids(both)), [PAGES[d].name for d in doc_ids(both)]
    assert {p.doc_id for p in PAGES.values() if holds(p, "Debian") and holds(p, "or")} <= set(doc_ids(both))


@pytest.mark.parametrize(
    "name, word",
    [("ja/ch07s01.html", "スモークテスト"), ("zh_CN/ch08s06.html", "宇宙射线"), ("ko/ch08s06.html", "응급복구")],
)
def test_a_typo_in_a_word_of_a_bigram_script_alone_gives_partial_matches(client, name, word):
    # Its last character mistyped: the bigram it ends is broken, the others stand.  No page has the
    # word so spelt; the pages holding most of its bigrams are the partial matches.
    typo = word[:-1] + "猫"
    assert not any(holds(page, typo) for page in PAGES.values())
    body = search(client, typo)
    assert body["partial"] is True and doc_ids(body)[0] == page_named(name).doc_id, typo
    assert word[:-1] in marked(body["results"][0]), marked(body["results"][0])  # its bigrams that matched


@pytest.mark.parametrize(
    "query, language, word",
    [("Debian설치", "ko", "설치"), ("Debian을설치", "ko", "설치"), ("Debianのインストール", "ja", "インストール")],
)
def test_a_latin_word_typed_against_a_bigram_script_gives_partial_matches(client, query, language, word):
    # Japanese and Korean join a particle or the next word to a Latin one; no page has them as one
    # phrase: the pages holding its words and bigrams are the partial matches (there were none), the
    # first one in that script holding its word ("Debian", on most pages, weighs little).
    body = search(client, query)
    first = PAGES[doc_ids(body)[0]] if body["results"] else None
    assert body["partial"] is True and first is not None, (query, body["total"])
    assert first.lang == language and holds(first, word), (query, first.name)
    # What matched is marked: the word of the bigram script (its bigrams joined), which the phrase
    # typed, held by no page, marked nowhere; not a lone particle, on every page (을, の: a tester's find).
    pieces = marked(result_for(body, first))
    assert word in pieces and "을" not in pieces and "の" not in pieces, (query, pieces)


def test_a_particle_typed_against_a_latin_word_is_not_marked_wherever_a_page_has_it(tmp_path):
    # (The installation guide in Korean, ko/ch02s02.html.)  "Debian을" is "Debian" and its particle 을:
    # the partial matches marked every 을 of their snippets.
    client = sentences_client(tmp_path, [("ko", "하지만 고급 기능을 사용하려면 올바른 펌웨어 파일을 설치해야 합니다.")])
    body = search(client, "Debian을 설치해야", known={})
    assert body["partial"] is True and doc_ids(body) == [1], body
    assert marked(body["results"][0]) == ["설치해야"], marked(body["results"][0])


def test_every_result_has_its_pages_language(client):
    for query in ("Debian", "Linux", "1.1", "システム", "시스템", "系统", "یک", "هذه", "Debian OR هذه OR یک"):
        body = search(client, query)  # search() checks each result's lang against the page's
        assert body["results"], query
    langs = {result["lang"] for result in search(client, "Debian OR هذه OR یک")["results"]}
    assert langs == {"ar", "de", "el", "en", "es", "fa", "fr", "ja", "ko", "ru", "vi", "zh"}


# Ranking, typos, bad input, the language filter.


def test_a_title_match_beats_a_body_match(tmp_path):
    body_page = (
        b"<html lang='en'><head><title>Walking the Crozon Peninsula</title></head><body>"
        b"<p>The coastal path runs from Camaret to Morgat along the cliffs. From the headland at Pen-Hir you"
        b" can see the lighthouse on the rocks of the Tas de Pois, and on a clear day the island of Ouessant."
        b" Allow a full day, carry water, and check the tide tables before going down to the beaches.</p>"
        b"</body></html>"
    )
    title_page = (
        b"<html lang='en'><head><title>The Ar-Men Lighthouse</title></head><body>"
        b"<p>Built between 1867 and 1881 on a rock off the Ile de Sein, the tower stands where the currents"
        b" of the Raz meet the open Atlantic. The keepers were relieved by boat when the weather allowed,"
        b" which in winter could mean weeks of waiting. The light has been automatic since 1990.</p>"
        b"</body></html>"
    )
    tides = (
        b"<html lang='en'><head><title>Tide Tables for the Bay of Douarnenez</title></head><body>"
        b"<p>High and low water times for each day of the month, with the coefficients that tell spring"
        b" tides from neap tides. Times are local; add an hour in summer. Fishing boats leave the harbour"
        b" two hours before high water.</p></body></html>"
    )
    pages = write_pages(
        tmp_path / "pages",
        {
            1: ("http://h/crozon.html", 0, body_page),
            2: ("http://h/ar-men.html", 1, title_page),
            3: ("http://h/tides.html", 1, tides),
        },
    )
    client = app_client(pages, index_pages(pages, tmp_path / "index"))
    for query in ("lighthouse", "Lighthouse", "lighthouses"):
        assert doc_ids(search(client, query, known={})) == [2, 1], query


def test_a_word_on_every_page_matches_as_a_word_on_some(tmp_path):
    # The site's name is in every title: the searcher leaves such a word out of the expression that
    # finds the pages (it matches them all), which must not change which pages answer.
    def page(title: str, text: str) -> bytes:
        head = f"<html lang='en'><head><title>{title} - Kerbreizh</title></head>"
        return f"{head}<body><p>{text}</p></body></html>".encode()

    pages = write_pages(
        tmp_path / "pages",
        {
            1: ("http://h/tides.html", 0, page("Tide tables", "Boats leave the harbour before high water.")),
            2: ("http://h/light.html", 1, page("The lighthouse", "The lighthouse stands above the harbour.")),
            3: ("http://h/walks.html", 1, page("Coastal walks", "The path follows the cliffs to the point.")),
        },
    )
    client = app_client(pages, index_pages(pages, tmp_path / "index"))
    answers = {
        "Kerbreizh": [1, 2, 3],
        "harbour Kerbreizh": [1, 2],
        "Kerbreizh harbour -lighthouse": [1],
        "lighthouse Kerbreizh": [2],
        '"The lighthouse - Kerbreizh"': [2],
        "Kerbreizh -Kerbreizh": [],
    }
    for query, expected in answers.items():
        body = search(client, query, known={})
        assert sorted(doc_ids(body)) == expected and not body["partial"], query


TYPOS = [  # a title word of six letters or more, two adjacent letters swapped
    ("en/ch08s06.html", "Recovering", "Recoevring"),
    ("en/ch02s05.html", "Requirements", "Reqiurements"),
    ("de/ch08s01.html", "herunterfahren", "herutnerfahren"),
    ("ru/ch08s01.html", "Выключение", "Вылкючение"),
    ("fr/ch04s07.html", "authenticité", "authetnicité"),
    ("el/ch04s06.html", "Εγκατάσταση", "Εγκατάτσαση"),
    ("es/ch04s06.html", "automática", "autmoática"),
]
TYPO_IDS = [f"{page.split('/')[0]}-{word}" for page, word, _ in TYPOS]


@pytest.mark.parametrize(("page", "word", "typo"), TYPOS, ids=TYPO_IDS)
def test_a_swapped_pair_of_letters_still_finds_the_page(client, page, word, typo):
    page = page_named(page)
    assert word in page.title and not holds(page, typo) and len(word) >= 6
    body = search(client, typo)
    assert page.doc_id in doc_ids(body)[:3], (typo, [PAGES[d].name for d in doc_ids(body)[:3]])


@pytest.mark.parametrize(("page", "word", "typo"), TYPOS, ids=TYPO_IDS)
def test_the_suggestion_is_the_word_as_pages_spell_it(client, page, word, typo):
    suggestion = search(client, typo)["suggestion"]
    assert suggestion is not None and word.casefold() in suggestion.casefold(), (typo, suggestion)


# Typos that another language's stemmer turns into a term some page holds ("necessaries" is the
# plural of an English word, stemmed "necessari" as "necessary" is): no page has them as words.
STEMMED_TYPOS = [
    ("fr/ch02s05.html", "nécessaires", "necessaries"),
    ("fr/ch04s07.html", "Vérifier", "verifeir"),
]


@pytest.mark.parametrize(("page", "word", "typo"), STEMMED_TYPOS, ids=[typo for _, _, typo in STEMMED_TYPOS])
def test_a_typo_held_only_by_a_stem_is_corrected_when_a_close_word_is_on_more_pages(client, page, word, typo):
    page = page_named(page)
    assert word in page.title and not holds(page, typo)
    body = search(client, typo)
    assert body["suggestion"] == word.casefold(), (typo, body["suggestion"])
    assert page.doc_id in doc_ids(body)[:3], (typo, [PAGES[d].name for d in doc_ids(body)[:3]])


def assert_corrected(client, page: FixturePage, word: str, typo: str) -> None:
    """*typo*, on no page, suggests *word*, which *page* holds, and finds *page*."""
    assert holds(page, word) and not any(holds(other, typo) for other in PAGES.values())
    body = search(client, typo)
    assert body["suggestion"] == word, (typo, body["suggestion"])
    assert page.doc_id in doc_ids(body), (typo, [PAGES[d].name for d in doc_ids(body)])


# Typos held only by a stem of some languages (the English "gui" of "guieds", the French "clar" of
# "clarie"): such a stem counts for those languages' share of the pages, as it is another word on
# the others' (matching._pages_of), and a close word on more pages is the correction.
@pytest.mark.parametrize(
    ("page", "word", "typo"),
    [
        ("en/ch01s01.html", "guides", "guieds"),
        ("en/ch02s05.html", "former", "fromer"),
        ("fr/ch01s01.html", "claire", "clarie"),
    ],
)
def test_a_typo_held_by_some_languages_stem_is_corrected_to_a_word_on_more_pages(client, page, word, typo):
    assert_corrected(client, page_named(page), word, typo)


# Typos whose stems are held only where they are other words, on pages of other languages: "imaegs"
# is stemmed "imag" in German, on no German page (the English and French "images" are "imag" there),
# "vraios" "vrai" in Spanish, the French "vrai".
@pytest.mark.parametrize(
    ("page", "word", "typo"), [("en/ch02s05.html", "images", "imaegs"), ("es/ch07s03.html", "varios", "vraios")]
)
def test_a_typo_held_only_by_other_languages_pages_is_corrected(client, page, word, typo):
    assert_corrected(client, page_named(page), word, typo)


# Typos held only by a stem another close word shares, farther than the closest word: "entusiasten"
# is stemmed "entusiast" as the Spanish "entusiastas" (two edits) is, and is one edit from the German
# "enthusiasten"; "verwendar" is "verwenden"'s stem (two edits), one edit from "verwendbar".
@pytest.mark.parametrize(
    ("page", "word", "typo"),
    [("de/ch01s01.html", "enthusiasten", "entusiasten"), ("de/ch01s04.html", "verwendbar", "verwendar")],
)
def test_a_typo_sharing_a_stem_only_with_a_farther_word_is_corrected_to_the_closest(client, page, word, typo):
    assert_corrected(client, page_named(page), word, typo)


def test_a_form_no_page_has_of_a_word_pages_have_is_not_corrected_to_a_commoner_word(tmp_path):
    # "routers" is on no page; its stem is "router"'s, on 3 pages; "routes", one edit away, is on 8.
    def page(text: bytes) -> bytes:
        return b'<html lang="en"><head><title>t</title></head><body><p>' + text + b"</p></body></html>"

    # (Each page its own number: pages alike are one result.)
    routers = {n: (f"http://h/{n}", 0, page(b"configure the router %d here" % n)) for n in range(1, 4)}
    routes = {n: (f"http://h/{n}", 0, page(b"the app routes requests %d" % n)) for n in range(4, 12)}
    pages = write_pages(tmp_path / "pages", {**routers, **routes})
    client = app_client(pages, index_pages(pages, tmp_path / "index"))
    body = search(client, "routers", known={})
    assert body["suggestion"] is None and sorted(doc_ids(body)) == [1, 2, 3], body


# Real sentences of the Debian installation guide (installation-guide-amd64, en and ca, ch02s02.html).
ENGLISH_FIRMWARE = [
    "some USB devices and even some hard disk controllers also require firmware.",
    "appropriate firmware file to be installed in the system.",
    "images can include non-free firmware packages.",
]
CATALAN_FIRMWARE = (
    "En bastants dispositius antics que necessiten microprogramari (\u00abfirmware\u00bb) per a funcionar."
)
# Python's docs (python3.11-doc) and the Catalan guide's chapter on RAID (partman-raid).
PYTHON_EXCEPTION = [
    "or propagate an exception if one occurred.",
    "stateless case (which might raise an exception).",
    "with an exception set).",
]
CATALAN_EXCEPT = "\u00c9s similar a RAID5 excepte pel fet que utilitza dos dispositius de paritat en comptes d'un."


def sentences_client(tmp_path, texts: list[tuple[str, str]]) -> TestClient:
    """The app over an index of one page a (language, sentence) of *texts*, docIDs 1, 2, ... in order."""
    pages = write_pages(
        tmp_path / "pages",
        {
            n: (
                f"http://h/{n}",
                0,
                f'<html lang="{language}"><head><title>t</title></head><body><p>{text}</p></body></html>'.encode(),
            )
            for n, (language, text) in enumerate(texts, 1)
        },
    )
    return app_client(pages, index_pages(pages, tmp_path / "index"))


# Sentences of the installation guide in French (installation-guide-amd64: fr/apbs*.html, fr/ch05*.html),
# the first three cut to say "installation" once.
FRENCH_INSTALLATION_ONCE = [
    "Installation du système de base Peu d'éléments peuvent être préconfigurés à cette étape.",
    "Pour savoir où trouver des images d'installation, lisez la Section 4.1.",
    "Il reproduit le processus d'installation et donne des informations valables pour la plupart des cas.",
]
FRENCH_INSTALLATION_MORE = (
    "Exécuter des commandes pendant l'installation Une option très puissante offerte par les outils de"
    " préconfiguration est la possibilité de lancer des commandes ou des scripts à certains moments de"
    " l'installation. De cette manière les installations utilisent automatiquement le bon miroir et la suite"
    " de l'installation peut se faire interactivement."
)


def test_a_word_on_most_pages_still_ranks_them_by_how_often_they_hold_it(tmp_path):
    # (A tester's find: on a small site whose pages all say "installation", FTS5's BM25 weighs it 1e-6
    # (an IDF at most 0) and the body was not scored: a page saying it 4 times tied with those saying
    # it once, in docID order.)  The titles say nothing of it.
    texts = [("fr", text) for text in FRENCH_INSTALLATION_ONCE] + [("fr", FRENCH_INSTALLATION_MORE)]
    client = sentences_client(tmp_path, texts)
    body = search(client, "installation", known={})
    assert doc_ids(body)[0] == 4 and sorted(doc_ids(body)) == [1, 2, 3, 4], body
    assert body["results"][0]["score"] > body["results"][1]["score"]


def test_a_typo_sharing_a_stem_only_in_a_language_of_few_of_the_close_words_pages_is_corrected(tmp_path):
    # "firmwre" and "firmware" are both "firmw" in Catalan; "firmware" is on English pages mostly, where
    # it is "firmwar": a typo, not a Catalan form of it (it was kept as typed, with Catalan pages only).
    texts = [("en", text) for text in ENGLISH_FIRMWARE] + [("ca", CATALAN_FIRMWARE)]
    client = sentences_client(tmp_path, texts)
    body = search(client, "firmwre", known={})
    assert body["suggestion"] == "firmware" and sorted(doc_ids(body)) == [1, 2, 3, 4], body


def test_a_typo_whose_stem_in_one_language_is_a_close_words_stem_in_another_is_corrected(tmp_path):
    # "exceptoin" is "except" in Catalan, as "excepte" is; "except" is "exception"'s English stem: a
    # coincidence across two languages, not a form of "exception" (it was kept as typed).
    texts = [("en", text) for text in PYTHON_EXCEPTION] + [("ca", CATALAN_EXCEPT)]
    client = sentences_client(tmp_path, texts)
    body = search(client, "exceptoin", known={})
    assert body["suggestion"] == "exception" and sorted(doc_ids(body)) == [1, 2, 3], body


# The installation guide in German and English (installation-guide-amd64, de/ch06s03.html, en/ch06s*).
GERMAN_PARTITIONING = [
    "Partitionierungsprogramme bieten immer eine M\u00f6glichkeit, existierende Partitionen anzuzeigen, ohne"
    " \u00c4nderungen vorzunehmen.",
    "Obwohl dies in den meisten F\u00e4llen sehr gut funktioniert, sind \u00c4nderungen an der Partitionierung"
    " einer Festplatte von Natur aus eine gef\u00e4hrliche Aktion.",
]
ENGLISH_PARTITIONING = [
    "This concludes the guided partitioning.",
    "This type of automated partitioning is easy to get wrong.",
    "Recommended partitioning tool in Debian.",
]


def test_with_results_kept_to_a_language_a_typo_is_corrected_to_a_word_of_that_language(tmp_path):
    # "Partitionierng" is closest to the German "partitionierung"; with lang=en that word would find no
    # page: the English "partitioning" is the correction there (the German one was, answering 0 pages).
    texts = [("de", text) for text in GERMAN_PARTITIONING] + [("en", text) for text in ENGLISH_PARTITIONING]
    client = sentences_client(tmp_path, texts)
    assert search(client, "Partitionierng", known={})["suggestion"] == "Partitionierung"  # (in the case typed)
    body = search(client, "Partitionierng", known={}, lang="en")
    assert body["suggestion"] == "Partitioning" and sorted(doc_ids(body)) == [3, 4, 5], body
    following = search(client, body["suggestion"], known={}, lang="en")
    assert sorted(doc_ids(following)) == [3, 4, 5], following


# Debian's reference (debian-reference, ch02 in English, French and Japanese: the Japanese has the typo),
# and the installation guide (installation-guide-amd64, apds03.html in English, French and Catalan).
ENGLISH_DEBIAN = [
    "The Debian system is 100% free and its packages are hosted by Debian servers in the main area.",
    "The Debian system offers a consistent set of binary packages through its versioned binary dependency"
    " declaration mechanism in the control file fields.",
    "Download the debootstrap .deb from the pool, copy the package to the work folder, and extract the files from it.",
]
FRENCH_DEBIAN = [
    "Le syst\u00e8me Debian est totalement libre et ses paquets sont h\u00e9berg\u00e9s par les serveurs"
    " Debian dans la section main de l\u2019archive.",
    "Le syst\u00e8me Debian offre un ensemble coh\u00e9rent de paquets binaires par l\u2019interm\u00e9diaire"
    " de son m\u00e9canisme de d\u00e9claration de d\u00e9pendances binaires versionn\u00e9es.",
    "T\u00e9l\u00e9chargez le debootstrap .deb \u00e0 partir de pool, copiez le paquet dans le r\u00e9pertoire"
    " de travail, et d\u00e9compressez les fichiers.",
]
CATALAN_DEB = (
    "Descarregueu el \u00ab.deb\u00bb debootstrap del repositori, copieu el paquet al directori i extraieu-ne"
    " els fitxers."
)
JAPANESE_DEBAIN = (
    "\u3042\u306a\u305f\u306e 100% \u30d5\u30ea\u30fc\u30bd\u30d5\u30c8\u30a6\u30a8\u30a2\u30fc\u306e"
    " Debain \u30b7\u30b9\u30c6\u30e0\u3078\u306e\u6c5a\u67d3"
)


# Sentences of the Debian Reference (debian-reference-es: docs/ch02.en.html, ch02.es.html), with and
# without "Debian".
ENGLISH_DEBIAN_ONCE = [
    "The Debian archive is offered by many remote mirror sites for access through HTTP and FTP methods.",
    "The serious Debian system administrator who runs mission critical servers, should use extra precautions.",
    "The 3rd and following arguments are the list of valid archive area names of the Debian archive.",
]
SPANISH_DEBIAN_ONCE = "Examinemos el archivo de Debian desde el punto de vista de un usuario del sistema."
ENGLISH_WITHOUT_IT = [
    "This chapter is written assuming the latest stable release is codename: bullseye.",
    "If you manually activate a service with some security risks, you are responsible for the risk containment.",
    "Do not overwrite system files by installing software programs directly compiled from source.",
]


def test_a_words_stems_in_several_languages_weigh_as_one_word(tmp_path):
    # Spanish stems "Debian" as "debi", a form no English page holds: weighed apart, its fewer pages gave
    # it the higher IDF, and a Spanish page saying "Debian" once ranked above an English one saying it
    # twice (the known-item index: every Spanish and Catalan page above the English and French ones).
    texts = [
        ("en", ENGLISH_DEBIAN[0]),  # (twice)
        *(("en", text) for text in ENGLISH_DEBIAN_ONCE),
        ("es", SPANISH_DEBIAN_ONCE),
        *(("en", text) for text in ENGLISH_WITHOUT_IT),
        *(("fr", text) for text in FRENCH_INSTALLATION_ONCE),
    ]
    client = sentences_client(tmp_path, texts)
    for query in ("debian", "Debian"):
        body = search(client, query, known={})
        assert sorted(doc_ids(body)) == [1, 2, 3, 4, 5] and doc_ids(body)[0] == 1, body
    # The reader's language still first.
    answer = client.get("/api/search", params={"q": "debian"}, headers={"Accept-Language": "es"})
    assert doc_ids(answer.json())[0] == 5, answer.json()


@pytest.mark.parametrize(("language", "pages"), [("en", [1, 2]), ("fr", [4, 5])])
def test_with_results_kept_to_a_language_a_word_only_another_languages_page_has_is_corrected(indexed, language, pages):
    # "Debain", a typo on one Japanese page, is a word the index holds: kept as typed (the documented
    # rule), it finds that page (and the Catalan one by its stem: both forms weighed as one word, their
    # order is their texts').  With lang=en or lang=fr no page of
    # the language has it: it was kept as typed all the same (its Catalan stem "deb" is a word there),
    # and found nothing, without a suggestion; it is "debian" there ("debain" and "debian" share that
    # stem in Catalan only).
    texts = [("en", text) for text in ENGLISH_DEBIAN] + [("fr", text) for text in FRENCH_DEBIAN]
    client = indexed([*texts, ("ca", CATALAN_DEB), ("ja", JAPANESE_DEBAIN)])
    body = search(client, "debain", known={})
    assert body["suggestion"] is None and sorted(doc_ids(body)) == [7, 8], body  # (the Catalan page by its stem)
    body = search(client, "debain", known={}, lang=language)
    assert body["suggestion"] == "debian" and sorted(doc_ids(body)) == pages, body
    following = search(client, body["suggestion"], known={}, lang=language)
    assert sorted(doc_ids(following)) == pages, following


# The installation guide (installation-guide-amd64: fr/pr01.html and ch01s03.html, ca/ch01s08.html).
FRENCH_INSTALLER = [
    "Nous comprenons bien que beaucoup d'entre vous voudront installer Debian sans lire ce manuel ; la"
    " conception de l'installateur le permet.",
    "Ces outils donnent \u00e0 l'administrateur d'un syst\u00e8me Debian un contr\u00f4le complet sur les"
    " paquets install\u00e9s sur le syst\u00e8me ; c'est, par exemple, la possibilit\u00e9 d'installer un seul"
    " paquet ou celle de mettre \u00e0 jour l'ensemble du syst\u00e8me.",
]
CATALAN_INSTALLAR = (
    "La vostra llibertat per instal\u00b7lar i utilitzar el sistema us la d\u00f3na directament Debian al"
    " basar-se en programari lliure."
)


def test_with_results_kept_to_a_language_the_suggestion_is_a_word_of_that_language(tmp_path):
    # "instalaar" is one edit from the Catalan "instal\u00b7lar" (folded "installar"), whose French stem
    # "install" French pages hold: with lang=fr it was suggested, and the suggestion, a word no French
    # page has, typed, found nothing there.  The suggestion is a word pages of the language have.
    texts = [("fr", text) for text in FRENCH_INSTALLER] + [("ca", CATALAN_INSTALLAR)]
    client = sentences_client(tmp_path, texts)
    assert search(client, "instalaar", known={})["suggestion"] == "installar"
    body = search(client, "instalaar", known={}, lang="fr")
    assert body["suggestion"] == "installer" and sorted(doc_ids(body)) == [1, 2], body
    following = search(client, body["suggestion"], known={}, lang="fr")
    assert sorted(doc_ids(following)) == [1, 2], following


# The Catalan installation guide (installation-guide-amd64, ca/ch03s01.html and ch03s04.html).
CATALAN_INSTALLATION = [
    "Nombrosos sistemes operatius d'\u00fas generalitzat poden requerir una instal\u00b7laci\u00f3 completa quan es"
    " donen fallades cr\u00edtiques o quan cal actualitzar-los.",
    "A continuaci\u00f3 hi ha les respostes recomanades de diverses fases de la instal\u00b7laci\u00f3.",
]


@pytest.mark.parametrize(
    "query", ["instal\u00b7laci\u00f3 completa", "installaci\u00f3 completa", "instal laci\u00f3 completa"]
)
def test_a_catalan_word_with_a_middle_dot_is_found_with_it_without_it_or_a_space_for_it(indexed, query):
    # "instal\u00b7laci\u00f3" is one word: typed with its dot, without, or with a space for the dot (as
    # "letters only" types it: the two words typed apart also match the word they make joined).
    texts = [("ca", text) for text in CATALAN_INSTALLATION] + [("en", text) for text in ENGLISH_FIRMWARE]
    client = indexed(texts)
    body = search(client, query, known={})
    assert body["partial"] is False and doc_ids(body) == [1], body
    marked = [result["snippet"][start:end] for result in body["results"] for start, end in result["highlights"]]
    assert marked == ["instal\u00b7laci\u00f3", "completa"], marked


# Sentences of the Python 3.11 documentation (python3.11-doc: library/index.html, howto/unicode.html).
PYTHON_INSTALLATION_AND_LATIN = [
    "Support for building and installing Python modules into an existing Python installation.",
    "Accented characters in the Latin-1 set are also included.",
]


@pytest.mark.parametrize(
    "typed", ["instal lation", "python instal lation", "instal\x01lation", "instal lation installation"]
)
def test_two_words_a_page_has_joined_are_not_corrected(indexed, typed):
    # The words typed apart match the word they make joined; neither is taken as misspelt then: "lation"
    # (one edit from "latin") is not corrected, no "Did you mean instal latin" above the page of
    # "installation".  A control character typed between them is a space, as on the pages.
    client = indexed([("en", text) for text in PYTHON_INSTALLATION_AND_LATIN])
    assert search(client, "lation", known={})["suggestion"] == "latin"  # (alone, it is corrected)
    body = search(client, typed, known={})
    assert body["suggestion"] is None and body["partial"] is False and doc_ids(body) == [1], body


# The installation guide in Greek (installation-guide-amd64: el/ch01s08.html).
GREEK_NON_FREE = (
    "Σημειώστε ότι το Σχέδιο Debian διαθέτει, σαν μια πραγματική προσφορά στους χρήστες του, μερικά πακέτα που"
    " δεν πληρούν τα κριτήρια ώστε να είναι ελεύθερα. Αυτά τα πακέτα δεν είναι όμως μέρος της επίσημης διανομής."
)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("επίσημηςς", "επίσημης"), ("διανομηςς", "διανομής"), ("ΔΙΑΝΟΜΗΣΣ", "ΔΙΑΝΟΜΗΣ"), ("ΠΡΑΓΜΑΤΙΚΗΗ", "ΠΡΑΓΜΑΤΙΚΗ")],
)
def test_a_greek_suggestion_ends_its_words_with_a_final_sigma(indexed, typed, meant):
    # Case folding makes every sigma U+03C3: "Did you mean" showed how the page spelled it, folded.
    # Typed in capitals, it is in Greek capitals, which carry no accent (it was "ΔΙΑΝΟΜΉΣ").
    client = indexed([("el", GREEK_NON_FREE)])
    body = search(client, typed, known={})
    assert body["suggestion"] == meant and doc_ids(body) == [1], body


# Sentences of the installation guide in German (installation-guide-amd64: de/apcs01.html, de/ch08s04.html).
GERMAN_SHARP_S = [
    "Um eine vorhandene FAT- oder NTFS-Partition innerhalb des debian-installers in seiner Größe zu verändern,"
    " gehen Sie zum Schritt Festplatten partitionieren.",
    "E-Mails nach außerhalb verschicken",
]


@pytest.mark.parametrize(
    ("typed", "meant", "page"), [("Gröse", "Größe", 1), ("ausserhlab", "außerhalb", 2), ("AUSERHALB", "AUSSERHALB", 2)]
)
def test_a_german_suggestion_keeps_its_sharp_s(indexed, typed, meant, page):
    # Case folding spells ß "ss": "Did you mean" showed "grosse" and "ausserhalb", no German's spelling.
    # In the case typed: a capital first, or all in capitals (where German writes ß as SS).
    client = indexed([("de", text) for text in GERMAN_SHARP_S])
    body = search(client, typed, known={})
    assert body["suggestion"] == meant and doc_ids(body) == [page], body
    following = search(client, meant, known={})  # the suggestion, followed, finds the page
    assert following["suggestion"] is None and doc_ids(following) == [page], following


# Sentences of the installation guide in Russian and French (installation-guide-amd64: ru/ch08s06.html,
# fr/ch02s01.html): words of four letters that folding changes ("идёт" is "идет", "très" "tres").
SHORT_ACCENTED = [
    ("ru", "Иногда что-то идёт неправильно, и система, которую вы аккуратно установили больше не загружается."),
    ("fr", "L'installation de Debian sur un portable se passe très bien."),
]


@pytest.mark.parametrize(
    ("typed", "meant", "page"), [("идётт", "идёт", 1), ("ИДЕТТ", "ИДЁТ", 1), ("trèss", "très", 2), ("tress", "très", 2)]
)
def test_a_suggestion_one_letter_shorter_than_the_vocabulary_is_spelled_as_pages_spell_it(indexed, typed, meant, page):
    # A typo of five letters is corrected to a word of four, which the vocabulary does not list (too
    # short): "Did you mean" showed it folded, "идет", "tres".  It is spelled as the first page holding it does.
    client = indexed(SHORT_ACCENTED)
    body = search(client, typed, known={})
    assert body["suggestion"] == meant and doc_ids(body) == [page], body


# Sentences of the installation guide in Chinese (installation-guide-amd64: zh-cn/ch01s07.html,
# zh-cn/ch06s03.html, zh-cn/ch02s01.html), and of the Debian FAQ in Korean (debian-faq-ko).
CHINESE_NETWORK = [
    "其中涉及选择语言、设置周边驱动模块、设置网络连接以从 Debian 服务器上获得后续安装文件。",
    "如果以后可以通过网络访问系统，则需要安装 SSH 并设置访问权限。",
    "无线网络也能得到很好地支持。",
]
KOREAN_ARCHIVE = [
    "데비안 메일링 리스트 아카이브 https://lists.debian.org/.",
    'BIN-DIR은 데비안 아카이브 파일(보통 ".deb"의 확장자를 가짐)이 저장되는 디렉터리.',
    "아카이브에 복사됩니다. 기밀 또는 무면허 자료를 목록에 보내지 마십시오.",
]


@pytest.mark.parametrize(
    ("typed", "pages"),
    [
        ("设置网络", [1, 2]),  # (set up the network) as typed first, then its characters apart
        ("设置网络 Debian", [1]),  # and every other word
        ("设置网络 -SSH", [1]),
        ('"设置网络"', [1]),  # quoted: as typed only
        ("网络设置", [1, 2]),  # (network settings) no page says so: the pages holding it apart, not partial
    ],
)
def test_a_chinese_run_typed_without_spaces_finds_its_words_apart_after_it(indexed, typed, pages):
    # Chinese is typed without spaces: "设置网络" was a phrase of its bigrams only (2 pages of the
    # all-languages index, where "设置 网络" finds 36).
    client = indexed([("zh", text) for text in CHINESE_NETWORK])
    body = search(client, typed, known={})
    assert doc_ids(body) == pages and body["partial"] is False, body
    marks = {result["docid"]: marked(result) for result in body["results"]}
    if typed == "设置网络":  # the page holding it marks it whole, the other its words
        assert "设置网络" in marks[1] and "设置网络" not in marks[2] and {"设置", "网络"} <= set(marks[2]), marks


def test_korean_words_typed_together_are_partial_matches(tmp_path):
    # "데비안아카이브" (Debian archive, typed without its space): Hangul is written with spaces, and a
    # syllable is on most Korean pages (안): no page holds the run, and the pages holding its syllable
    # pairs are the partial matches, those with both words first.
    client = sentences_client(tmp_path, [("ko", text) for text in KOREAN_ARCHIVE])
    body = search(client, "데비안아카이브", known={})
    assert body["partial"] is True and sorted(doc_ids(body)[:2]) == [1, 2] and doc_ids(body)[2:] == [3], body
    assert sorted(doc_ids(search(client, "데비안 아카이브", known={}))) == [1, 2]


# Debian's reference and installation guide in Japanese (debian-reference-ja ch05, installation-guide-ja
# ch06s03 and ch08s04): "the network's settings", a heading, then two sentences saying it otherwise.
JAPANESE_NETWORK = [
    "5. ネットワークの設定",
    "ネットワーク設定に続き、ユーザアカウントの作成を行います。",
    "GUI 経由でネットワークを設定します。",
    "ユーザアカウントの作成を行います。",
    "インストーラがダウンしたら、もう一度ロードしてください。",  # ダウン and ロード apart
]


@pytest.mark.parametrize(
    ("typed", "pages", "partial"),
    [
        ("ネットワークの設定", [1, 2, 3], False),  # as typed, then its katakana word and kanji apart
        ("ネットワークの設定 -GUI", [1, 2], False),
        # A katakana word is held whole or not at all: its bigrams, partial (ウン of アカウント too).
        ("ダウンロード", [5, 4, 2], True),
    ],
)
def test_a_japanese_run_typed_without_spaces_finds_its_words_apart(indexed, typed, pages, partial):
    client = indexed([("ja", text) for text in JAPANESE_NETWORK])
    body = search(client, typed, known={})
    assert doc_ids(body) == pages and body["partial"] is partial, body


# Sentences of the installation guide (en/ch02s04.html) and of the Python docs (whatsnew/changelog.html,
# library/functools.html, library/ctypes.html).
NUMBERED_NAMES = [
    "The standard Debian 12 kernel image has been compiled with support for many devices.",
    "PEP 8 recommends that all six rich comparisons be implemented.",
    "bpo-42726: Fixed Python 3 compatibility issue with gdb/libpython.",
    "$ python3 -c import ctypes",
    "Debian has 12 architectures and PEP numbers run to 8 digits.",  # (the words apart: no answer)
]


@pytest.mark.parametrize(
    ("typed", "pages"),
    [
        ("debian12", [1]),  # found nothing: pages write "Debian 12"
        ("Debian12 kernel", [1]),
        ("PEP8", [2]),
        ("pep8 -comparisons", []),
        ("python3", [4]),  # a word pages have: as typed, not "Python 3"
        ("pyhton3", [4]),  # a typo of it is corrected still (the split "pyhton 3" stopped it)
        ('"debian12"', []),  # quoted: as typed
    ],
)
def test_a_name_typed_with_its_number_joined_finds_the_pages_writing_them_apart(indexed, typed, pages):
    client = indexed([("en", text) for text in NUMBERED_NAMES])
    body = search(client, typed, known={})
    assert doc_ids(body) == pages and body["partial"] is False, body


# Debian's reference in Japanese (ch02, where "Debian" is misspelt) and ten sentences of the installation
# guide in English.
DEBAIN_ONCE = [("ja", "あなたの 100% フリーソフトウエアーの Debain システムへの汚染を防ぐ")] + [
    ("en", text)
    for text in [
        "Create and mount the partitions on which Debian will be installed.",
        "For a Debian GNU/Linux server we recommend tftpd-hpa.",
        "ISC DHCP server (the isc-dhcp-server Debian package).",
        "In some cases the driver you need may not be available as a Debian package.",
        "Looks for and mounts a Debian installation media.",
        "Many, many Debian users and developers contributed to this document.",
        "Now you've got a real Debian system, though rather lean, on disk.",
        "Basics of the Debian Package Management System.",
        "Chapter 7, Booting Into Your New Debian System.",
        "Installing Debian GNU/Linux using PPP over Ethernet.",
    ]
]


@pytest.mark.parametrize(
    ("typed", "meant"), [("debain", "debian"), ("Debain", "Debian"), ("debain system", "debian system")]
)
def test_a_typo_one_page_made_is_searched_as_typed_and_its_commoner_word_suggested(indexed, typed, meant):
    # A page has "Debain": it was never taken as misspelt, and no "Did you mean" (a tester's find).
    # It still finds that page as typed; the suggestion, ten times commoner, finds the others.
    client = indexed(DEBAIN_ONCE)
    body = search(client, typed, known={})
    assert body["suggestion"] == meant and doc_ids(body)[0] == 1, body
    assert len(doc_ids(search(client, "debian", known={}))) == 10
    assert search(client, "debain", known={}, lang="ja")["suggestion"] is None  # (held there: as typed)


def test_another_form_of_a_commoner_word_is_no_typo_of_it(tmp_path):
    # "routers" on one page, "router" on twelve: the plural was suggested its singular (a review's find).
    texts = [("en", "Broadband routers usually perform NAT for the consumer LAN environment.")] + [
        ("en", f"The broadband router of room {number} usually performs NAT for the LAN.") for number in range(12)
    ]
    client = sentences_client(tmp_path, texts)
    assert search(client, "routers", known={})["suggestion"] is None
    assert search(client, "Routers", known={})["suggestion"] is None


# A sentence of the installation guide in French (fr/ch06s04.html) and three of the Python docs.
RESEAU_AND_RESET = [
    ("fr", "Choisissez l'option de ne pas configurer le réseau et utilisez seulement les paquets du CD."),
    ("en", "payload, encode it, and reset the payload to this newly encoded value."),
    ("en", "Connection reset by peer."),
    ("en", "Restart the shell to clean the environment and reset display and exception handling."),
]


@pytest.mark.parametrize(("typed", "meant"), [("réseu", "réseau"), ("Réseu", "Réseau"), ("reseu", "reset")])
def test_a_typo_typed_with_accents_is_corrected_to_the_word_spelled_closest(indexed, typed, meant):
    # "reseu" is one edit from "reset" (3 pages) and from "reseau" (1): the commoner first.  Typed with its
    # accent, "réseu" meant "réseau" ("Did you mean: reset" led to Python's pages, a tester's find).
    client = indexed(RESEAU_AND_RESET)
    assert search(client, typed, known={})["suggestion"] == meant


# Sentences of the installation guide in German and English (installation-guide-amd64: de/ch02s02.html,
# en/ch06s04.html): the German one says the word twice.
FIRMWARE_DE_EN = [
    (
        "de",
        "Bei vielen Grafikkarten sind die Grundfunktionen auch ohne zusätzliche Firmware verfügbar, aber"
        " erweiterte Funktionalitäten erfordern es, dass passende Firmware in das System geladen wird.",
    ),
    ("en", "The installer will prompt you to load firmware."),
]


def test_the_readers_language_ranks_first_where_no_language_is_kept(tmp_path):
    # A word many languages write alike: an English reader's first result was in Swedish, Danish or
    # German ("installation" 27th on the all-languages index, a tester's find).
    client = sentences_client(tmp_path, FIRMWARE_DE_EN)

    def ranked(headers=None, **params):
        answer = client.get("/api/search", params={"q": "firmware", **params}, headers=headers or {})
        assert answer.status_code == 200 and answer.headers["vary"] == "Accept-Language", answer.headers
        return [(result["docid"], result["lang"]) for result in answer.json()["results"]]

    assert ranked() == [(1, "de"), (2, "en")]  # (the German page says it twice)
    assert ranked({"Accept-Language": "en-US,en;q=0.9,de;q=0.8"}) == [(2, "en"), (1, "de")]
    assert ranked({"Accept-Language": "de-DE"}) == [(1, "de"), (2, "en")]
    assert ranked({"Accept-Language": "fr-FR, en;q=0.5"}) == [(2, "en"), (1, "de")]  # the first the index holds
    assert ranked({"Accept-Language": "ja"}) == ranked({"Accept-Language": "*"}) == ranked()  # none it holds
    assert ranked({"Accept-Language": "en"}, lang="de") == [(1, "de")]  # kept to one: nothing to prefer
    page = client.get("/search", params={"q": "firmware"}, headers={"Accept-Language": "en"})
    assert page.headers["vary"] == "Accept-Language"
    assert page.text.index("load <mark>firmware</mark>") < page.text.index("zusätzliche <mark>Firmware</mark>")


# Sentences of the installation guide (installation-guide-amd64: en/apbs01.html, en/ch05s04.html,
# en/ch02s01.html) and of the Python docs (library/importlib.html, two).
PRESEEDING_AND_EMAIL = [
    "There are three methods that can be used for preseeding.",
    "The following table shows which preseeding methods can be used with which installation methods.",
    "Make sure that you use an e-mail address that you do not mind being made public.",
    "Installations on laptops nowadays usually work out of the box, including things like automatically"
    " suspending the system on closing the lid and laptop specfic hardware buttons like those for disabling"
    " the wifi interfaces (\u201cairplane mode\u201d).",
    "An abstract base class for a loader which implements the optional PEP 302 protocol for loaders that"
    " inspect modules.",
    "For those same reasons, the loader\u2019s create_module() method must return None or a type for which its"
    " __class__ attribute can be mutated along with not using slots.",
]


@pytest.mark.parametrize(
    ("typed", "pages"),
    [
        ("pre-seeding", [1, 2]),
        ("pre-seeding methods", [1, 2]),
        ("e-mail address", [3]),
        # Excluded, it leaves out the pages writing the word too (as "-preseeding" would).
        ("methods -pre-seeding", [6]),  # (6: "method", not pre-seeding)
        ("pre-seeding -pre-seeding", []),
        # In an OR, as alone ("pre-seeding OR airplane" found only the page of "airplane").
        ("pre-seeding OR airplane", [1, 2, 4]),
        # A word joined of fewer than 5 letters, which the vocabulary does not list.
        ("wi-fi", [4]),
        ("laptops -wi-fi", []),
        # Typed apart, as "Word press" is (two words of two letters or more).
        ("Wi Fi", [4]),
        ("wi fi interfaces", [4]),
        # Not by an apostrophe: "loader's" is no "loaders" (whose stem is "loader"'s: every loader).
        ("loader\u2019s", [6]),
        ('"pre-seeding"', []),  # quoted: as typed
    ],
)
def test_two_words_joined_by_punctuation_also_match_the_word_they_make(indexed, typed, pages):
    # "pre-seeding" was the phrase "pre seeding", on no page: nothing found (nor suggested, "pre-seeing"
    # finding nothing either); the word it makes joined is one pages write.
    client = indexed([("en", text) for text in PRESEEDING_AND_EMAIL])
    body = search(client, typed, known={})
    assert sorted(doc_ids(body)) == pages and body["suggestion"] is None and body["partial"] is False, body


# A sentence of the installation guide (en/ch06s03.html) and two of the Python docs (library/unittest.html,
# library/ctypes.html): "loads" is on more pages than "loader", both one edit from "loadr".
BOOT_LOADER_AND_LOADS = [
    ("en", "Grub is a flexible and robust boot loader and a good default choice for new users and old hands alike."),
    ("en", "Test discovery loads tests by importing them."),
    ("en", "Class which loads shared libraries."),
]


def test_a_misspelt_word_of_a_phrase_is_the_close_word_making_a_phrase_pages_hold(tmp_path):
    # "boot-loadr" was "Did you mean boot-loads" (as close as "loader", on more pages), a phrase on no
    # page: the close word that makes the phrase one a page holds is taken.
    client = sentences_client(tmp_path, BOOT_LOADER_AND_LOADS)
    assert search(client, "loadr", known={})["suggestion"] == "loads"  # (alone, the commonest)
    body = search(client, "boot-loadr", known={})
    assert body["suggestion"] == "boot-loader" and doc_ids(body) == [1], body


# Sentences of the installation guide in German (installation-guide-amd64: de/apbs04.html, de/apbs01.html)
# and one of the guide in English (en/apbs01.html), as in PRESEEDING_AND_EMAIL.
HYPHEN_TYPOS = [
    (
        "de",
        "Der Hack erzwingt, dass die Netzwerkkonfiguration erneut abläuft, nachdem die Voreinstellungsdatei"
        " geladen wurde.",
    ),
    (
        "de",
        "Die Voreinstellung der Netzwerkkonfiguration funktioniert natürlich nicht, wenn Sie Ihre"
        " Voreinstellungsdatei vom Netzwerk laden.",
    ),
    ("en", "There are three methods that can be used for preseeding."),
    ("en", "The following table shows which preseeding methods can be used with which installation methods."),
    ("en", "The Hurd is a set of servers running on top of a microkernel called Mach."),  # (a page of neither)
    # Python's docs (whatsnew/changelog.html, library/socket.html): words pages hold in another form.
    ("en", "Removed a number of out-of-dated and non-working for a long time Tkinter tests."),
    ("en", "socket \u2014 Low-level networking interface"),
]


@pytest.mark.parametrize(
    ("typed", "suggestion", "pages"),
    [
        ("pre-seding", "preseeding", [3, 4]),
        ("Netzwerk-Konfiguraton", "Netzwerkkonfiguration", [1, 2]),
        ("NETZWERK-KONFIGURATON", "NETZWERKKONFIGURATION", [1, 2]),
        ("pre-seding methods", "preseeding methods", [3, 4]),
        ("pre\u2013seding", "preseeding", [3, 4]),  # (an en dash)
        # As before: two words pages hold, joined on no page, are as typed; a joined word pages hold is found.
        ("pre-seeding", None, [3, 4]),
        ("Netzwerk-Konfiguration", None, [1, 2]),
        ("set-servers", None, []),
        # Not a hyphen: a word with a typo beside another, each corrected alone (as before).
        ("pre seding", None, []),
        # Each word on a page in another form ("working": "work"): no typo (a review's find: "non-working"
        # was "Did you mean networking").
        ("non-working", None, [6]),
        ("Low-Levels", None, [7]),
    ],
)
def test_a_hyphenated_word_with_a_typo_is_corrected_as_the_word_it_makes_joined(indexed, typed, suggestion, pages):
    # "pre-seding" and "Netzwerk-Konfiguraton" found nothing and suggested nothing (a tester's find): a
    # word of each is on no page, the phrase corrected a word at a time ("pre seeing") on none either,
    # and the word they make joined was looked up only as typed.
    client = indexed(HYPHEN_TYPOS)
    body = search(client, typed, known={})
    assert body["suggestion"] == suggestion and sorted(doc_ids(body)) == pages, body


@pytest.mark.parametrize(
    "typed", ["deb\x01ian", "deb\x00ian", "instal\x7flation", "deb\u200bian", "instal\u200blation"]
)
def test_a_control_character_in_a_query_is_a_space(client, typed):
    # As on the pages: "deb\x01ian" is "deb ian", which also finds "debian"; never in a suggestion.  So is
    # a zero-width space (a tester's find: "deb\u200bian" found nothing, a phrase of "deb" and "ian").
    body = search(client, typed)
    assert body["suggestion"] is None and doc_ids(body) == doc_ids(
        search(client, re.sub("[\x00-\x1f\x7f\u200b]", " ", typed))
    )
    assert doc_ids(body)


def test_only_a_querys_first_unknown_words_are_looked_for_among_close_words(client, monkeypatch):
    # A word's search among close words costs milliseconds: a query of 100 made-up words took a second.
    typos = "Reqiurements herutnerfahren Вылкючение"
    assert search(client, typos)["suggestion"].casefold() == "requirements herunterfahren выключение"
    monkeypatch.setattr(matching, "LOOKED_UP", 2)
    assert search(client, typos)["suggestion"].casefold() == "requirements herunterfahren вылкючение"


@pytest.mark.parametrize("typo", ["l'authetnicité", "L’authetnicité des", "d'instlalation"])
def test_a_misspelt_word_joined_to_another_by_punctuation_is_corrected(client, typo):
    # Words joined by an apostrophe are a phrase ("l'authenticité" is the phrase "l authenticite"); a
    # misspelt one was not corrected, and the phrase found nothing.
    page = page_named("fr/ch04s07.html")  # 4.7. Vérifier l'authenticité des fichiers d'installation
    body = search(client, typo)
    assert body["suggestion"] and body["suggestion"].casefold() in (
        "l'authenticité",
        "l’authenticité des",
        "d'installation",
    ), body["suggestion"]
    assert not body["partial"] and page.doc_id in doc_ids(body)[:3], [PAGES[d].name for d in doc_ids(body)[:3]]


def test_a_word_typed_twice_is_corrected_wherever_it_was_typed(client):
    # In the case typed each time; "Did you mean" spelled a correction as case folding spells it.
    assert search(client, "Recoevring recoevring")["suggestion"] == "Recovering recovering"
    assert search(client, "recoevring RECOEVRING Recoevring")["suggestion"] == "recovering RECOVERING Recovering"


@pytest.mark.parametrize("word", ["installations", "installing", "Recovering", "automática"])
def test_a_word_pages_hold_is_never_corrected(client, word):
    assert search(client, word)["suggestion"] is None


@pytest.mark.parametrize(
    ("typed", "once"),
    [
        ("installation installation", "installation"),
        ("Installation OR installation", "installation"),
        ("vérifier verifier", "vérifier"),
        ("系统 系统", "系统"),
        ("installation OR partition partition OR installation", "installation OR partition"),
    ],
)
def test_a_word_typed_twice_counts_once(client, typed, once):
    def ranked(query):
        return [(result["docid"], result["score"]) for result in search(client, query)["results"]]

    assert ranked(typed) == ranked(once) != []


def test_did_you_mean_and_the_language_menu_on_the_html_page(client):
    html = client.get("/search", params={"q": "Recoevring"}).text
    notice = re.search(r'<p class="notice">(.*?)</p>', html, re.S)
    assert notice and "Did you mean" in notice.group(1) and "recovering" in notice.group(1).casefold()
    menu = re.search(r'<select id="lang" name="lang">(.*?)</select>', html, re.S)
    assert menu and set(re.findall(r'<option value="(\w+)"', menu.group(1))) == {p.lang for p in PAGES.values()}
    # Each language by its name and code (the codes alone were shown).
    names = dict(re.findall(r'<option value="(\w+)">([^<]*)</option>', menu.group(1)))
    assert {code: names[code] for code in ("en", "fa", "ja", "ko", "vi", "zh")} == {
        "en": "English (en)",
        "fa": "Persian (fa)",
        "ja": "Japanese (ja)",
        "ko": "Korean (ko)",
        "vi": "Vietnamese (vi)",
        "zh": "Chinese (zh)",
    }
    html = client.get("/search", params={"q": "اختر طابعة شبكة"}).text
    item = re.search(r'<li lang="ar">(.*?)</li>', html, re.S).group(1)
    assert re.search(r'<div class="title" dir="auto">', item) and re.search(r'<div class="snippet" dir="auto">', item)
    assert "<mark>" in item


@pytest.mark.parametrize("query", ["!!!", '"', "-", "...", " ?! ", "「」、。", "؟،", '"" -""', "— – -"])
def test_a_query_of_punctuation_is_refused_in_one_message(client, query):
    response = client.get("/api/search", params={"q": query, "rank": "relevance"})
    assert response.status_code == 400 and list(response.json()) == ["error"], (query, response.text)
    message = response.json()["error"]
    assert message.startswith("Nothing to find") and "Traceback" not in message and "\n" not in message
    page = client.get("/search", params={"q": query, "rank": "relevance"})
    assert page.status_code == 400 and message in page.text.replace("&#39;", "'") and "Traceback" not in page.text


def test_size_limits(client):
    assert client.get("/api/search", params={"q": "x" * 1001}).status_code == 400
    assert "error" in client.get("/api/search", params={"q": "x" * 1001}).json()
    assert search(client, "x" * 1000)["total"] == 0
    assert client.get("/api/search", params={"q": " ".join(["Debian"] * 101)}).status_code == 400
    assert search(client, " ".join(["Debian"] * 100))["results"]


def test_an_unbalanced_quote_is_a_phrase_to_the_end(client):
    page = page_named("fr/ch07s01.html")
    closed, open_ = search(client, '"premier écran que"'), search(client, '"premier écran que')
    assert doc_ids(open_) == doc_ids(closed) and page.doc_id in doc_ids(open_)
    assert search(client, '"que écran premier')["total"] == 0  # a phrase, not three words
    assert page.doc_id in doc_ids(search(client, "que écran premier"))


@pytest.mark.parametrize(
    ("lang", "query"), [("fr", "Debian"), ("ja", "Debian"), ("zh", "Debian"), ("ar", "هذه OR یک"), ("fa", "هذه OR یک")]
)
def test_the_language_filter_keeps_that_language_only(client, lang, query):
    body = search(client, query, lang=lang)
    ids = set(doc_ids(body))
    assert ids and all(PAGES[d].lang == lang for d in ids)
    words = query.split(" OR ")
    assert {p.doc_id for p in PAGES.values() if p.lang == lang and any(holds(p, w) for w in words)} <= ids
    assert len(search(client, query)["results"]) > len(ids)  # without the filter, more


@pytest.mark.parametrize("tag", ["FR", "fr-CA", "fr_BE", " fr "])
def test_the_language_filter_takes_a_tag_as_browsers_send_it(client, tag):
    response = client.get("/api/search", params={"q": "Debian", "per_page": 100, "lang": tag})
    assert response.status_code == 200, response.text
    body = response.json()  # the filter applied, as its code
    assert body["lang"] == "fr" and doc_ids(body) == doc_ids(search(client, "Debian", lang="fr"))


# ISO 639-2's codes, terminology (eng) and bibliographic (fre), are the pages' two-letter ones.
@pytest.mark.parametrize(
    ("tag", "code", "query"),
    [
        ("eng", "en", "Debian"),
        ("ENG-us", "en", "Debian"),
        ("fra", "fr", "Debian"),
        ("fre", "fr", "Debian"),
        ("ger", "de", "Debian"),
        ("chi", "zh", "Debian"),
        ("jpn", "ja", "Debian"),
        ("ara", "ar", "هذه OR یک"),
        ("per", "fa", "هذه OR یک"),
    ],
)
def test_the_language_filter_takes_a_three_letter_code(client, tag, code, query):
    response = client.get("/api/search", params={"q": query, "per_page": 100, "lang": tag})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["lang"] == code and doc_ids(body) == doc_ids(search(client, query, lang=code))


def test_a_withdrawn_code_no_page_is_in_is_refused_as_its_new_one(client):
    response = client.get("/api/search", params={"q": "debian", "lang": "in"})  # Indonesian's old code
    assert response.status_code == 400
    assert response.json()["error"].startswith("no page of the index is in language id (its languages: ")


# Real sentences: the installation guide's ch01s01 in Indonesian and English (installation-guide-amd64),
# a message of python-apt's Hebrew catalog (python-apt-common).
INDONESIAN_WHAT_IS_DEBIAN = (
    "Debian adalah sebuah organisasi sukarelawan yang didedikasikan untuk mengembangkan perangkat lunak bebas dan"
    " mempromosikan cita-cita komunitas perangkat lunak bebas."
)
ENGLISH_WHAT_IS_DEBIAN = (
    "Debian is an all-volunteer organization dedicated to developing free software and promoting the ideals of"
    " the Free Software community."
)
HEBREW_UBUNTU_CD = 'תקליטור אובונטו 6.06 LTS "Dapper Drake"'


def test_pages_declaring_a_withdrawn_or_three_letter_code_are_in_its_two_letter_language(tmp_path):
    # <html lang="in"> (Java's locales wrote Indonesian and Hebrew so), "eng-US", "iw": the page is in
    # id, en, he; and lang= finds it asked either way.
    texts = [("in", INDONESIAN_WHAT_IS_DEBIAN), ("eng-US", ENGLISH_WHAT_IS_DEBIAN), ("iw", HEBREW_UBUNTU_CD)]
    client = sentences_client(tmp_path, texts)
    query = "Debian OR אובונטו"
    body = search(client, query, known={})
    assert sorted((result["docid"], result["lang"]) for result in body["results"]) == [(1, "id"), (2, "en"), (3, "he")]
    for asked, code, doc_id in [
        ("in", "id", 1),
        ("id", "id", 1),
        ("ind", "id", 1),
        ("eng", "en", 2),
        ("en", "en", 2),
        ("iw", "he", 3),
        ("he-IL", "he", 3),
        ("heb", "he", 3),
    ]:
        response = client.get("/api/search", params={"q": query, "lang": asked})
        assert response.status_code == 200, (asked, response.text)
        assert (response.json()["lang"], doc_ids(response.json())) == (code, [doc_id]), asked


def test_a_language_no_page_is_in_is_refused_with_the_index_languages(client):
    response = client.get("/api/search", params={"q": "debian", "lang": "xx"})
    assert response.status_code == 400
    message = response.json()["error"]
    assert message.startswith("no page of the index is in language xx (its languages: ")
    assert all(page.lang in message for page in PAGES.values() if page.lang)
    html = client.get("/search", params={"q": "debian", "lang": "xx"})
    assert html.status_code == 400 and "no page of the index is in language xx" in html.text


@pytest.mark.parametrize("asked", ["und", "MUL", "zxx-Latn", "mis"])
def test_a_code_of_no_one_language_is_refused_saying_so(client, asked):
    # ISO 639-2's undetermined, multiple, no linguistic content, uncoded: a filter of none of the languages.
    code = asked.lower().split("-")[0]
    message = f"lang={code} names no one language: leave lang out to search every language"
    response = client.get("/api/search", params={"q": "debian", "lang": asked})
    assert (response.status_code, response.json()) == (400, {"error": message})
    html = client.get("/search", params={"q": "debian", "lang": asked})
    assert html.status_code == 400 and message in html.text


@pytest.mark.parametrize("rank", ["bm25", "tse"])
def test_the_language_filter_needs_rank_relevance(client, rank):
    response = client.get("/api/search", params={"q": "debian", "rank": rank, "lang": "fr"})
    assert response.status_code == 400 and list(response.json()) == ["error"]


# `tse query --rank relevance`


def query_blocks(stdout: str) -> dict[str, list[tuple[str, int, str]]]:
    """Each query's (score, docID, URL) lines, by the query as echoed."""
    blocks, current = {}, None
    for line in stdout.splitlines():
        if line.startswith("Query: "):
            current = blocks.setdefault(line.removeprefix("Query: ").strip(), [])
        elif found := re.match(r"score +(\S+) doc +(\d+): (.*)$", line):
            current.append((found.group(1), int(found.group(2)), found.group(3)))
    return blocks


UNHELD_QUERIES = ["their zzzyqx qxzzyq", "fumée Übersetzung"]


@pytest.fixture(scope="module")
def tse_query_sections(corpus):
    """`tse query --rank relevance` on the corpus, one run for the two tests below (each reads its own
    queries' answers, answered one by one): {query: its lines}."""
    pages, index = corpus
    queries = ["スモークテスト", page_named("ar/printers.html").title, *UNHELD_QUERIES]
    result = run_tse("query", pages, index, "--rank", "relevance", input="".join(q + "\n" for q in queries).encode())
    assert result.returncode == 0, result.stderr.decode()
    sections = re.split(r"^(?=Query: )", result.stdout.decode(), flags=re.M)
    found = {section.split("\n", 1)[0].removeprefix("Query: ").strip(): section for section in sections[1:]}
    assert list(found) == queries, list(found)
    return found


def test_tse_query_answers_japanese_and_arabic(tse_query_sections):
    japanese, arabic = page_named("ja/ch07s01.html"), page_named("ar/printers.html")
    blocks = query_blocks(tse_query_sections["スモークテスト"] + tse_query_sections[arabic.title])
    assert blocks["スモークテスト"][0][1:] == (japanese.doc_id, japanese.url)
    assert blocks[arabic.title][0][1:] == (arabic.doc_id, arabic.url)


def test_tse_query_names_the_words_no_page_holds(tse_query_sections):
    said = "".join(tse_query_sections[query] for query in UNHELD_QUERIES)
    counts = re.findall(r"^Matches \d+ documents \((.*)\):$", said, re.M)
    assert counts == [
        "partial matches: no document has zzzyqx or qxzzyq",
        "partial matches: no document has every word",
    ]


def test_tse_query_without_the_search_index_is_one_line(corpus, tmp_path):
    pages, _ = corpus
    index = index_pages(pages, tmp_path / "old.index")
    (tmp_path / "old.index.search").unlink()  # as an index written before the search index existed
    result = run_tse("query", pages, index, "--rank", "relevance", input="スモークテスト\n".encode())
    lines = result.stderr.decode().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and "Traceback" not in lines[0], lines
    assert lines[0].startswith("tse query: ") and "search index" in lines[0]
    # The SPEC rankings still answer from that index.
    assert run_tse("query", pages, index, "--rank", "bm25", input=b"debian\n").returncode == 0


# `tse index --update`


UPDATE_QUERIES = [
    "What is Debian?",
    "Debian",
    "Linux -Windows",
    "スモークテスト",
    "決定的瞬間",
    "RAM",
    "Memory",
    "Memory and Disk Space Requirements",
    "fumee",
    '"premier écran que"',
    '"Disk Space Requirements"',
    'memory -"disk space requirements"',
    "fumée OR Übersetzung",
    "Reqiurements",
    "宇宙射线",
    "응급복구",
    "اختر طابعة شبكة",
    "مثلث",
    "Выключение системы",
    "εγκατασταση",
    "dấu nhắc đăng nhập",
    "system or",
]


def answers(client, query, **params):
    body = search(client, query, known={}, **params)
    results = [(r["docid"], r["score"], r["title"], r["lang"]) for r in body["results"]]
    return body["total"], body["partial"], body["suggestion"], results


def test_an_updated_index_answers_as_a_fresh_one(tmp_path):
    pages = write_fixture_directory(tmp_path / "pages")
    index_pages(pages, tmp_path / "updated.index")
    memory, moment = page_named("en/ch02s05.html"), page_named("ja/ch07s01.html")
    # Two pages changed (written anew, as the crawler writes), one new page (the English 1.1 on a mirror).
    changed = {
        memory.doc_id: (memory.url, 1, memory.body.replace(b"Memory", b"RAM")),
        moment.doc_id: (moment.url, 1, re.sub("<p>[^\n]*スモークテスト.*?</p>".encode(), b"", moment.body)),
    }
    assert (
        all(changed[d][2] != PAGES[d].body for d in changed)
        and "スモークテスト".encode() not in changed[moment.doc_id][2]
    )
    mirror = page_named("en/ch01s01.html")
    new = {len(PAGES) + 1: ("https://www.debian.org/releases/bookworm/amd64/ch01s01.en.html", 1, mirror.body)}
    for doc_id, (url, depth, body) in {**changed, **new}.items():
        staged = tmp_path / "staged"
        write_pages(staged, {doc_id: (url, depth, body)})
        (staged / str(doc_id)).replace(pages / str(doc_id))
    result = run_tse("index", pages, tmp_path / "updated.index", "--update")
    assert result.returncode == 0 and "cannot update" not in result.stderr.decode(), result.stderr.decode()
    fresh = app_client(pages, index_pages(pages, tmp_path / "fresh.index"))
    updated = app_client(pages, tmp_path / "updated.index")
    # (No page holds the word as typed now; its characters apart, some: they answer it unquoted.)
    assert answers(fresh, '"スモークテスト"')[0] == 0 and answers(fresh, "RAM")[0] >= 1
    for query in UPDATE_QUERIES:
        assert answers(updated, query) == answers(fresh, query), query
    assert answers(updated, "Debian", lang="en") == answers(fresh, "Debian", lang="en")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ('"l\'authetnicité des fichiers"', '"l\'authenticité des fichiers"'),
        (
            "\"vérifier l'authenticité des fichiers d'instlalation\"",
            "\"vérifier l'authenticité des fichiers d'installation\"",
        ),
    ],
)
def test_a_misspelt_word_in_quotes_is_corrected(client, typed, meant):
    # The phrase as typed is on no page (one of its words is on none): the one meant is suggested and found.
    page = page_named("fr/ch04s07.html")  # 4.7. Vérifier l'authenticité des fichiers d'installation
    body = search(client, typed)
    assert body["suggestion"] and body["suggestion"].casefold() == meant.casefold(), body["suggestion"]
    assert page.doc_id in doc_ids(body)[:3], [PAGES[d].name for d in doc_ids(body)[:3]]


def test_a_corrected_phrase_no_page_holds_is_not_suggested(client):
    # Corrected, the phrase is still on no page ("fichiers d'installation" is, not in this order): a
    # "Did you mean" would lead to no result again; the same correction that finds pages is suggested.
    assert search(client, '"d\'installation fichiers"')["total"] == 0
    body = search(client, '"d\'instlalation fichiers"')
    assert body["total"] == 0 and body["suggestion"] is None
    assert search(client, '"fichiers d\'instlalation"')["suggestion"] == '"fichiers d\'installation"'
    # Found, a query may still suggest what finds nothing: the word corrected to the one it excludes.
    assert search(client, "instalaltion")["suggestion"] == "installation"
    assert search(client, "installation -installation")["total"] == 0
    assert search(client, "instalaltion -installation")["suggestion"] is None


# Quoted, a word is as typed: one pages hold is never corrected, nor one that no page holds in that form
# (another form of it is not what was quoted: "requirement", where pages say "Requirements").
@pytest.mark.parametrize(
    "typed", ['"boot loader"', '"installations"', '"Recovering"', '"le système"', '"disk space requirement"']
)
def test_a_quoted_phrase_of_words_pages_hold_is_never_corrected(client, typed):
    assert search(client, typed)["suggestion"] is None


# Sentences of the installation guide in German (de/apbs04.html, de/ch06s03.html).
ZEITZONE = "Die Konfiguration der Uhr und der Zeitzone wird von der Voreinstellung gesteuert."
PARTITIONIERUNG = "B.4.7. Partitionierung: die Möglichkeiten der Voreinstellung der Partitionierung der Festplatte."


@pytest.mark.parametrize("before", [0, 3_000, 20_000])
def test_a_snippet_shows_the_rarer_words_not_the_first_common_one(tmp_path, before):
    # "der" is on every page, "Partitionierung" on one: its snippet shows where that page holds it,
    # within the text the store keeps (5,000 characters) or past it (a tester's find: the snippets of
    # "Partitionierung der Festplatte" showed only "der").
    filler = " ".join([ZEITZONE] * (before // len(ZEITZONE) + 1)) if before else ""
    texts = [("de", f"{filler} {PARTITIONIERUNG}".strip()), *[("de", ZEITZONE)] * 3]
    client = sentences_client(tmp_path, texts)
    body = search(client, "Partitionierung der Festplatte", known={})
    assert doc_ids(body) == [1] and not body["partial"], body
    pieces = marked(body["results"][0])
    assert "Partitionierung" in pieces and "Festplatte" in pieces and "der" in pieces, body["results"][0]["snippet"]


def test_a_typo_of_five_letters_is_corrected_to_a_word_of_four(tmp_path):
    # The vocabulary lists words of 5 letters or more: "grubb" was corrected to "grubs" (one page),
    # never to "grub" (most pages: a tester's find).
    texts = [text for _, text in BOOT_LOADER_AND_LOADS] + ["Grub menu entries.", "Larvae called grubs."]
    client = sentences_client(tmp_path, [("en", text) for text in texts])
    body = search(client, "grubb", known={})
    assert body["suggestion"] == "grub" and sorted(doc_ids(body)) == [1, 4, 5], body  # (grubs: its stem)
    assert search(client, "GRUBB menu", known={})["suggestion"] == "GRUB menu"


def test_two_common_short_words_typed_apart_are_not_the_word_they_make(tmp_path):
    # (A review's find: "in it" found pages of "init", "so on" of "soon".)  Each is a word of its own on
    # several pages; "Wi Fi" (pieces on no page) still finds "wifi": test_two_words_joined_...
    texts = ["The init daemon starts first.", "It is in the box.", "Put it in there.", "A heavy beat.", "Be at home."]
    client = sentences_client(tmp_path, [("en", text) for text in [*texts, "Be there at noon."]])
    assert sorted(doc_ids(search(client, "in it", known={}))) == [2, 3]
    assert sorted(doc_ids(search(client, "be at", known={}))) == [5, 6]
