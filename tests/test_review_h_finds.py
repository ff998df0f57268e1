"""A reviewer's finds in the search's snippets (revH), through a real `tse serve` of a real index.

- A Thai run of more than 64 characters without a space holding a SARA AM (ำ, which NFKC spells with
  two characters: one of Thai's commonest vowels) was one token: a Thai word typed, several bigrams,
  was marked nowhere on such a page, and its snippet showed the page's start, not the word.
- A snippet cut where the text has no space (Thai, a row of emoji) started or ended inside what a
  reader sees as one character: a Thai vowel or tone mark without its letter, an emoji's ZWJ sequence
  cut in two.
"""

from __future__ import annotations

import json
import unicodedata
import urllib.parse
import urllib.request

import pytest

from tests.conftest import BIN, ROOT, clean_env
from tests.support.inprocess import tse_ok_here
from tests.support.pages import write_pages
from tests.support.serving import tse_serve

# Real Thai (the installation of a Debian system ...), without spaces, as Thai is written.
THAI = "การติดตั้งระบบปฏิบัติการเดเบียนที่นี่ต้องใช้ความรู้เรื่องคอมพิวเตอร์พื้นฐานก่อนเริ่ม"
THAI_WITH_SARA_AM = THAI + "ทำงาน"  # "to work": its ำ is U+0E33
SEAL = "แมวน้ำ"  # "seal" (the animal), with a SARA AM too
CAT = "แมว"
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # one emoji: four joined by ZWJ
ZWJ = "\u200d"
HOST = "http://snippets.example"
SHIFTS = range(30)  # Thai pages whose word stands 0, 1, ... characters further: some cut at a mark


def _page(title: str, text: str, language: str) -> bytes:
    return (
        f'<!DOCTYPE html><html lang="{language}"><head><meta charset="utf-8"><title>{title}</title></head>'
        f"<body><p>{text}</p></body></html>"
    ).encode()


def _pages() -> dict[int, tuple[str, int, bytes]]:
    texts = {"seal": ("th", THAI_WITH_SARA_AM * 4 + SEAL + THAI_WITH_SARA_AM * 4)}
    for shift in SHIFTS:
        texts[f"cat{shift}"] = ("th", THAI * 2 + THAI[:shift] + CAT + THAI * 3)
    for shift in range(4):
        texts[f"zebra{shift}"] = ("en", "x" * shift + FAMILY * 40 + "zebra" + FAMILY * 80)
    return {
        doc_id: (f"{HOST}/{name}", 0 if doc_id == 1 else 1, _page(name, text, language))
        for doc_id, (name, (language, text)) in enumerate(texts.items(), start=1)
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("snippets")
    pages = write_pages(directory / "pages", _pages())
    tse_ok_here("index", str(pages), str(directory / "index"))
    command = [str(BIN / "tse"), "serve", str(pages), str(directory / "index"), "--workers", "1"]
    with tse_serve(command, clean_env(), ROOT) as run:
        yield run.base


def _results(base: str, query: str) -> list[dict]:
    url = f"{base}/api/search?" + urllib.parse.urlencode({"q": query, "per_page": 100})
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())["results"]


def _marked(result: dict) -> list[str]:
    return [result["snippet"][start:end] for start, end in result["highlights"]]


def _shown(result: dict) -> str:
    """The page's text a snippet shows, without the "… " marking its cuts."""
    return result["snippet"].removeprefix("\u2026 ").removesuffix(" \u2026")


def _page_text(name: str) -> str:
    (body,) = [body for url, _, body in _pages().values() if url == f"{HOST}/{name}"]
    text = body.decode()
    return (
        text[text.index("<title>") + 7 : text.index("</title>")]
        + " "
        + text[text.index("<p>") + 3 : text.index("</p>")]
    )


def test_a_thai_word_on_a_long_run_holding_a_sara_am_is_marked_where_it_stands(server):
    (result,) = [result for result in _results(server, SEAL) if result["url"] == f"{HOST}/seal"]
    assert _marked(result) == [SEAL], result["snippet"]


def test_a_snippet_cut_in_thai_text_starts_and_ends_with_a_whole_character(server):
    results = {result["url"]: result for result in _results(server, CAT) if "/cat" in result["url"]}
    assert len(results) == len(SHIFTS)
    cut_inside = []
    for shift in SHIFTS:
        result = results[f"{HOST}/cat{shift}"]
        shown, text = _shown(result), _page_text(f"cat{shift}")
        assert CAT in _marked(result)
        start = text.index(shown)
        end = start + len(shown)
        # A mark (a Thai vowel above or below, a tone mark) is shown on the letter before it, never alone.
        if unicodedata.category(text[start])[0] == "M" or (
            end < len(text) and unicodedata.category(text[end])[0] == "M"
        ):
            cut_inside.append((shift, result["snippet"]))
    assert cut_inside == []


def test_a_snippet_cut_in_a_row_of_emoji_keeps_each_emoji_whole(server):
    results = [result for result in _results(server, "zebra") if result["url"].startswith(f"{HOST}/zebra")]
    assert len(results) == 4
    for result in results:
        shown, text = _shown(result), _page_text(result["url"].rsplit("/", 1)[1])
        assert _marked(result) == ["zebra"]
        start = text.index(shown)
        end = start + len(shown)
        assert ZWJ not in (text[start], text[start - 1]), result["snippet"]  # not inside a ZWJ sequence
        assert ZWJ not in (text[end - 1], text[end]), result["snippet"]
        assert shown.startswith(FAMILY) and shown.endswith(FAMILY), result["snippet"]
