"""Exact and near duplicates among the translations of the Debian Reference (Debian's
``debian-reference-*`` packages, ``/usr/share/debian-reference/*.html``): how many pages share a
content digest, which pairs simhash finds within 3 bits (and, by brute force, 6), and whether they are
really the same text (Jaccard similarity of their word 3-shingle sets, and how much of a translated page
is the English page's text).  Prints a markdown report.

Run: ``.venv/bin/python bench/duplicates_measure.py [DIRECTORY]``.
"""

from __future__ import annotations

import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tse_scrapy.rules.text.analysis import words
from tse_scrapy.rules.text.pagetext import page_title, visible_text
from tse_scrapy.rules.web.duplicates import content_digest, hamming, near_duplicate_pairs, simhash

DIRECTORY = Path("/usr/share/debian-reference")
_NAME = re.compile(r"(?P<page>[^.]+)(?:\.(?P<language>[a-z]{2}(?:-[a-z]{2})?))?\.html$")
WHOLE_PAGE = 10**8  # visible_text's limit: all of the page (the largest is 0.6 MB)
JACCARD_LEVELS = (0.9, 0.8, 0.5)
CLOSEST = 12


@dataclass
class Page:
    name: str
    page: str  # ch01
    language: str  # en, de, ... ("-" for index.html, the language chooser)
    title: str
    text: str
    words: int
    shingles: frozenset[str]
    digest: str
    simhash: int


def read(path: Path) -> Page:
    body = path.read_bytes()
    title = page_title(body)
    text = visible_text(body, WHOLE_PAGE)
    folded = words(f"{title} {text}")
    shingles = _shingles(folded)
    match = _NAME.match(path.name)
    page, language = (match.group("page"), match.group("language") or "-") if match else (path.stem, "-")
    return Page(
        path.name, page, language, title, text, len(folded), shingles, content_digest(title, text), simhash(folded)
    )


def jaccard(a: Page, b: Page) -> float:
    return _jaccard(a.shingles, b.shingles)


def english_share(page: Page, english: dict[str, Page]) -> float | None:
    """How much of *page* is the English page's text: the share of its shingles found in the English
    page of the same name (None for English pages and pages without an English one)."""
    reference = english.get(page.page)
    if page.language == "en" or reference is None or not page.shingles:
        return None
    return len(page.shingles & reference.shingles) / len(page.shingles)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def report(directory: Path) -> None:
    paths = sorted(directory.glob("*.html"))
    if not paths:
        sys.exit(f"no pages in {directory} (apt-get install debian-reference-en debian-reference-ja ...)")
    started = time.perf_counter()
    pages = [read(path) for path in paths]
    elapsed = time.perf_counter() - started
    english = {page.page: page for page in pages if page.language == "en"}
    languages = sorted({page.language for page in pages} - {"-"})
    print("# Duplicates among the Debian Reference translations\n")
    print(f"`.venv/bin/python bench/duplicates_measure.py` over `{directory}/*.html`: {len(pages)} pages, ")
    print(f"{len(english)} in English, languages {', '.join(languages)}; {sum(p.words for p in pages):,} words; ")
    print(f"title, text, words, digest and simhash of all of them in {elapsed:.1f} s.\n")

    # Exact duplicates.
    by_digest: defaultdict[str, list[Page]] = defaultdict(list)
    for page in pages:
        by_digest[page.digest].append(page)
    exact_groups = [group for group in by_digest.values() if len(group) > 1]
    print("## Exact duplicates (same content_digest)\n")
    print(f"{len(exact_groups)} groups, {sum(len(group) for group in exact_groups)} pages.\n")
    for group in exact_groups[:10]:
        print(f"- {', '.join(page.name for page in group)}: {group[0].title!r}, {group[0].words} words")
    print()

    # Each translation against its English page.
    print("## Each translation against its English page\n")
    print("English share: the share of the page's word 3-shingles found in the English page of the same name.\n")
    print("| language | pages | simhash distance to English (median, range) | Jaccard with English (median) "
          "| English share (median, range) | within 3 bits | Jaccard >= 0.9 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for language in languages:
        if language == "en":
            continue
        translated = [page for page in pages if page.language == language and page.page in english]
        distances = sorted(hamming(page.simhash, english[page.page].simhash) for page in translated)
        similar = sorted(jaccard(page, english[page.page]) for page in translated)
        shares = sorted(english_share(page, english) or 0.0 for page in translated)
        middle = len(translated) // 2
        print(f"| {language} | {len(translated)} | {distances[middle]} ({distances[0]}-{distances[-1]}) "
              f"| {similar[middle]:.2f} | {percent(shares[middle])} ({percent(shares[0])}-{percent(shares[-1])}) "
              f"| {sum(d <= 3 for d in distances)} | {sum(j >= 0.9 for j in similar)} |")  # fmt: skip
    print()
    mostly_english = [
        page for page in pages if (english_share(page, english) or 0) >= 0.5 and page.language not in ("en", "-")
    ]
    print(f"Translations at least half English: {len(mostly_english)}: ", end="")
    print(", ".join(f"{page.name} ({percent(english_share(page, english))})" for page in mostly_english) or "none")
    print()

    # Near duplicates.
    numbered = dict(enumerate(pages))
    hashes = {number: page.simhash for number, page in numbered.items()}
    banded = []
    for _ in range(5):  # the best of 5: a collection of the 700,000 shingles above can land in one
        started = time.perf_counter()
        near = near_duplicate_pairs(hashes, 3)
        banded.append(time.perf_counter() - started)
    all_pairs = list(combinations(sorted(hashes), 2))
    distance_of = {pair: hamming(hashes[pair[0]], hashes[pair[1]]) for pair in all_pairs}
    jaccard_of = {(a, b): jaccard(numbered[a], numbered[b]) for a, b in all_pairs}
    assert near == [pair for pair in all_pairs if distance_of[pair] <= 3], "the bands missed a pair"
    print("## Near duplicates (simhash)\n")
    print(f"near_duplicate_pairs at distance <= 3: {len(near)} pairs in {1000 * min(banded):.2f} ms "
          f"(the same as brute force over the {len(all_pairs):,} pairs).\n")  # fmt: skip
    print("| distance <= | pairs | same page, two languages | different pages | exact duplicates among them "
          "| Jaccard >= 0.9 | >= 0.8 | >= 0.5 | < 0.5 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for distance in (0, 3, 6, 8, 10, 12):
        pairs = [pair for pair in all_pairs if distance_of[pair] <= distance]
        same = sum(numbered[a].page == numbered[b].page for a, b in pairs)
        identical = sum(numbered[a].digest == numbered[b].digest for a, b in pairs)
        levels = " | ".join(str(sum(jaccard_of[pair] >= level for pair in pairs)) for level in JACCARD_LEVELS)
        print(f"| {distance} | {len(pairs)} | {same} | {len(pairs) - same} | {identical} | {levels} "
              f"| {sum(jaccard_of[pair] < 0.5 for pair in pairs)} |")  # fmt: skip
    print()
    closest = sorted(all_pairs, key=lambda pair: (distance_of[pair], pair))[:CLOSEST]
    print(f"The {CLOSEST} closest pairs (`*`: within 3 bits, what near_duplicate_pairs reports):\n")
    print("| pair | distance | Jaccard | English share of each | words | titles |")
    print("|---|---|---|---|---|---|")
    for pair in closest:
        a, b = numbered[pair[0]], numbered[pair[1]]
        mark = " *" if distance_of[pair] <= 3 else ""
        shares = f"{percent(english_share(a, english))} / {percent(english_share(b, english))}"
        print(f"| {a.name} - {b.name}{mark} | {distance_of[pair]} | {jaccard_of[pair]:.2f} | {shares} "
              f"| {a.words} / {b.words} | {a.title[:30]!r} / {b.title[:30]!r} |")  # fmt: skip
    print()

    # How well the distance separates the same text from different texts.
    print("## Every pair of pages by Jaccard similarity, and the simhash distance it gets\n")
    print("| Jaccard | pairs | distance <= 3 | <= 6 | <= 10 | distance (min, median, max) |")
    print("|---|---|---|---|---|---|")
    for low, high in ((0.9, 1.01), (0.8, 0.9), (0.5, 0.8), (0.2, 0.5), (0.0, 0.2)):
        selected = sorted(distance_of[pair] for pair in all_pairs if low <= jaccard_of[pair] < high)
        if selected:
            within = " | ".join(str(sum(d <= limit for d in selected)) for limit in (3, 6, 10))
            print(f"| {low:.1f}-{min(high, 1):.1f} | {len(selected)} | {within} "
                  f"| {selected[0]}, {selected[len(selected) // 2]}, {selected[-1]} |")  # fmt: skip
    print()
    within = calibrate(pages, english)
    same_page = [pair for pair in closest if numbered[pair[0]].page == numbered[pair[1]].page]
    recommend(
        len(exact_groups),
        len(near),
        [(numbered[a], numbered[b], distance_of[a, b], jaccard_of[a, b]) for a, b in same_page[:1]],
        min(distance_of[pair] for pair in all_pairs if numbered[pair[0]].page != numbered[pair[1]].page),
        within,
        english,
    )


def calibrate(pages: list[Page], english: dict[str, Page]) -> dict[float, tuple[int, int]]:
    """Pages translated in part, made up: the English page's words, the last *share* of them replaced by
    as many words of a translation of the same page (which English text a translation keeps)."""
    print("## Made-up partial translations: the English page, its last part replaced by the translation\n")
    print("Each English page against itself with its last N% of words replaced by the same number of words "
          "of a translation (all 5 languages, 75 pages): how far simhash puts the two.\n")  # fmt: skip
    print("| translated share | Jaccard (median) | distance (min, median, max) | within 3 bits | within 6 |")
    print("|---|---|---|---|---|")
    within: dict[float, tuple[int, int]] = {}
    translations = [page for page in pages if page.language not in ("en", "-") and page.page in english]
    folded = {page.name: words(f"{page.title} {page.text}") for page in [*translations, *english.values()]}
    for share in (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5):
        distances, similar = [], []
        for page in translations:
            original = folded[english[page.page].name]
            replaced = max(0, round(len(original) * share))
            other = folded[page.name]
            mixed = original[: len(original) - replaced] + other[len(other) - replaced :] if replaced else original
            distances.append(hamming(simhash(original), simhash(mixed)))
            similar.append(_jaccard(_shingles(original), _shingles(mixed)))
        distances.sort()
        similar.sort()
        middle = len(distances) // 2
        within[share] = (sum(d <= 3 for d in distances), len(distances))
        print(f"| {percent(share) if share >= 0.01 or not share else f'{100 * share:.1f}%'} | {similar[middle]:.3f} "
              f"| {distances[0]}, {distances[middle]}, {distances[-1]} | {sum(d <= 3 for d in distances)} "
              f"| {sum(d <= 6 for d in distances)} |")  # fmt: skip
    print()
    return within


def recommend(
    exact: int,
    near: int,
    closest: list[tuple[Page, Page, int, float]],
    different_pages: int,
    within: dict[float, tuple[int, int]],
    english: dict[str, Page],
) -> None:
    print("## Recommendation\n")
    a, b, distance, similarity = closest[0]
    print(f"- Exact duplicates (same digest): {exact} groups here.  Collapsing them loses nothing: the pages show "
          "the same title and text, only the URL differs, and it stays under \"also at\".  Collapse them.")  # fmt: skip
    print(f"- Near duplicates within 3 bits: {near} pairs here.  The closest pair is {a.name} / {b.name}, "
          f"{distance} bits apart, Jaccard {similarity:.2f}, the translation {percent(english_share(b, english))} "
          f"English (its title, table captions and a few headings translated).  The closest two different "
          f"pages are {different_pages} bits apart.  The made-up partial translations show what 3 bits means: "
          f"{within[0.01][0]} of {within[0.01][1]} pages within 3 bits with 1% of the words translated, "
          f"{within[0.05][0]} with 5%, {within[0.1][0]} with 10%: it is 'the same text but for ~1% of its words' "
          "(Jaccard ~0.98), no false positive here, and no untranslated page found either.")  # fmt: skip
    print("- A reader of the Japanese manual who searches for a page left untranslated: without near-duplicate "
          "collapsing, both ch07.en.html and ch07.ja.html answer an English query, side by side with the same "
          "snippet (one result slot wasted), and the Japanese one keeps its Japanese title, navigation and "
          "links into the Japanese manual.  With collapsing, one result stands for both, chosen without regard "
          "to language (the shortest URL, then the smaller document number: ch07.en.html and ch07.ja.html are "
          "the same length, so whichever was crawled first): the Japanese reader may be sent to the English "
          "manual, the Japanese page under \"also at\", and a query that matches only the translated part "
          "(a Japanese word of the title) would show a representative that holds none of its words.")  # fmt: skip
    print("- So: collapse exact-digest duplicates (and canonical links) into one result with \"also at\"; do "
          "not collapse near duplicates.  At 3 bits they would add nothing here; wider, they would join "
          "different languages.  If they are ever used, only between pages of the same language "
          "(`analysis.detect_language`), or to demote the second of a pair, never to hide it.")  # fmt: skip
    print()


def _shingles(folded: list[str]) -> frozenset[str]:
    return frozenset(" ".join(folded[i : i + 3]) for i in range(max(1, len(folded) - 2))) if folded else frozenset()


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


if __name__ == "__main__":
    report(Path(sys.argv[1]) if len(sys.argv) > 1 else DIRECTORY)
