"""A page's fields for the search index: its language, title, headings, URL words, body and links.

Pure functions over page bytes, with the same tolerant, linear regular
expressions as ``pagetext`` (no HTML parser: they run over every page when
the index is written).  Each field is given as index terms (``analysis``),
space-separated, stemmed in the page's language: declared by ``<html lang>``
or ``<meta http-equiv="content-language">``, else detected from its text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ..web.duplicates import HEAD_BYTES, base_url, named_canonical
from ..web.entities import unescape
from ..web.urls import LinkResolver, clean_href
from . import analysis, markuppass, wordpass
from .cleaning import TAG, clean, cut_at_word
from .encodings import decode_page
from .pagetext import (
    _NOT_VISIBLE,
    _without_unclosed_tag,
    shown_text,
    title_of,
)

# Bounds a page cannot make larger: its body's characters read, its links kept, a link's anchor text.
BODY_CHARACTERS = 500_000
BODY_TERMS = 50_000
# A longer page's text past the body, to these bounds, is kept apart for exclusions only (`-word`
# must leave out a page holding the word anywhere): not scored, not shown.  It starts with the
# body's last BEYOND_OVERLAP terms, so that a phrase across the cut is in it whole.
BEYOND_CHARACTERS = 2_000_000
BEYOND_TERMS = 300_000
BEYOND_OVERLAP = 100
# The visible text past what the document store keeps (its first characters) to this many more, kept
# by the search index for snippets of pages that match only there (``PageText.text_past``).  30,000
# left a fifth of the results of "ssh" or "aptitude" on the known-item bench's long pages (chapters of
# 100,000 characters) with a snippet of their table of contents, nothing marked (a tester's find);
# 200,000 keep the whole text of every page of the 20,000-page bench (its longest: 187,547 characters).
REST_CHARACTERS = 200_000
MAX_LINKS = 1_000
ANCHOR_CHARACTERS = 200
HEADING_CHARACTERS = 5_000
# Words of at least this many characters are kept for typo tolerance (shorter ones are not expanded).
VOCABULARY_MIN = 5

_HTML_LANG = re.compile(r"<html\b[^>]*?\blang\s*=\s*[\"']?([A-Za-z_-]{2,20})", re.I)
_META_LANG = re.compile(
    r"<meta\b[^>]*?http-equiv\s*=\s*[\"']?content-language[\"']?[^>]*?content\s*=\s*[\"']?([A-Za-z_-]{2,20})", re.I
)
# A heading or a link is its start tag and what is before its end tag, when that end tag starts within
# ELEMENT_CHARACTERS of the start tag's end (then the next one is looked for after the end tag).  Found
# in one pass over the text, not by one pattern of both tags: on a hostile page that pattern took time
# growing with the square or the cube of the page's size (10,000 "<a href='x " in 110 KB: minutes), as
# each start tag without its end tag near was read again to the page's end.  A start tag is read to
# the next "<" at most, once: its first "href=" taken, never one after it (the lookahead holds; not an
# "hreflang" before it), and an unquoted value followed by a space or the tag's end, so that giving
# back a character of it never reads the rest of the tag again.  The text is searched for end tags
# once.  (On the 20,000-page bench's pages, 470 links each: 0.48 -> 0.79 ms a page; the same links and
# headings on every page of both benches.)
ELEMENT_CHARACTERS = markuppass.ELEMENT_CHARACTERS
_HEADING_START = re.compile(r"<h([1-6])(?=[\s>])[^<>]*>", re.I)
_HEADING_ENDS = {level: re.compile(rf"</h{level}\s*>", re.I) for level in "123456"}
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
# A language tag as sites name their folders and files: two letters, a region or script after.
_URL_LANGUAGE = re.compile(r"[a-z]{2}(?:[-_](?:[a-z]{2}|[a-z]{4}))?", re.I)
_ABSOLUTE_HTTP = ("http://", "https://")
# Where a head ends, as ``duplicates`` finds it in bytes (ASCII: the same places in the text).
_HEAD_END = re.compile(r"</head\s*>|<body\b", re.I | re.A)


@dataclass(frozen=True)
class PageFields:
    """What the search index holds of a page: its language (ISO 639 code or "") and its fields as
    space-separated terms; its title's and body's words unstemmed (for quoted phrases); its links
    (target URL, anchor terms); its words for typo tolerance."""

    language: str
    title: str
    headings: str
    url: str
    body: str
    links: tuple[tuple[str, str], ...]
    vocabulary: tuple[tuple[str, str], ...]  # (folded word, as the page spells it), title first
    title_words: str = ""
    body_words: str = ""
    # The terms and words past the body's bounds (see BEYOND_CHARACTERS), "" for most pages.
    beyond: str = ""
    beyond_words: str = ""
    # The canonical URL its head names (<link rel="canonical">), normalized; "" for none or itself.
    canonical: str = ""
    # The characters of a bigram script its title and body hold, once each: a query of one character
    # matches the bigrams it starts, and these find (and ``-c`` leaves out) a page holding it only at a
    # run's end.  From the text read for the body (BODY_CHARACTERS), past its BODY_TERMS on the longest.
    characters: str = ""
    # (folded word, as the page spells it) of its words of VOCABULARY_MIN - 1 characters that folding
    # changes (accents, ß): too short for the vocabulary, but what a typo one letter longer is corrected
    # to, "Did you mean" spells them as the first page holding them does ("ёлкка": "ёлка", not "елка").
    short_spellings: tuple[tuple[str, str], ...] = ()


def page_language(text_head: str, body_text: str, url: str = "") -> str | None:
    """The language a page declares in *text_head* (its first characters), else the one its text seems
    in, else the one its *url* names (``url_language``)."""
    for pattern in (_HTML_LANG, _META_LANG):
        found = pattern.search(text_head)
        if found:
            code = analysis.language_code(found.group(1))
            if code:
                return code
    return analysis.detect_language(body_text) or url_language(url)


def url_language(url: str) -> str | None:
    """The language a page's *url* names, where a site files its pages by language: a folder (``/da/``,
    ``/pt-br/``, ``/zh_CN/``) or the last name of a file before its extension (``ch01.es.html``,
    ``index.zh-cn.html``), the one nearest the file; only a language ``analysis`` knows, else None.
    For a page whose text is too short to tell (a table of contents: 11 pages of the known-item bench's
    manuals, ``/da/ch07.html`` among them, had no language, left out of ``lang=da``)."""
    try:
        path = urlsplit(url).path
    except ValueError:  # a URL no parser takes ("http://[e.com/a", a page of an archive): it names none
        return None
    segments = [unquote(segment) for segment in path.split("/") if segment]
    named = segments[:-1]
    if segments:  # the last: a folder, or a file (name.LANG.ext: its LANG)
        parts = segments[-1].split(".")
        named += parts if len(parts) == 1 else parts[-2:-1] if len(parts) >= 3 else []
    for name in reversed(named):
        if _URL_LANGUAGE.fullmatch(name) and (code := analysis.language_code(name)) in analysis.KNOWN_LANGUAGES:
            return code
    return None


@dataclass(frozen=True)
class PageText:
    """A page decoded once (``encodings``, any unclosed tag at its end cut off), with its title and
    its visible text to BEYOND_CHARACTERS: what the search index analyzes and the document store shows."""

    text: str
    title: str
    visible: str
    content: str = ""  # the markup whose text is shown (pagetext.shown_text): without navigation, for headings

    def visible_text(self, limit: int) -> str:
        """``pagetext.visible_text`` of the page with *limit* (at most BEYOND_CHARACTERS): a word-cut
        prefix of the visible text, as that function cuts it."""
        return cut_at_word(self.visible, limit)

    def text_past(self, stored: str) -> str:
        """The visible text past *stored* (``visible_text`` of a smaller limit: a prefix of it), to
        REST_CHARACTERS more, cut at a word; "" when *stored* is all of it."""
        if len(stored) >= len(self.visible):
            return ""
        # Cut at a word of the rest itself: text with few spaces (Chinese, Japanese) may have none
        # between the stored text's end and the bound.  (The text is single-spaced: one space at most to strip.)
        rest = self.visible[len(stored) : len(stored) + REST_CHARACTERS + 2].lstrip(" ")
        return cut_at_word(rest, REST_CHARACTERS)


def page_text(body: bytes, http_charset: str | None = None) -> PageText:
    """The page whose bytes are *body* decoded, its title and its visible text (*http_charset*: the
    charset of the HTTP header it came with)."""
    text = _without_unclosed_tag(decode_page(body, http_charset))
    # One cleaning of the text for every bound: the body, and the document store's text, are prefixes
    # of the text kept for exclusions.
    content, visible = shown_text(text, BEYOND_CHARACTERS)
    return PageText(text, title_of(text), visible, content)


def page_fields(url: str, body: bytes, http_charset: str | None = None, read: PageText | None = None) -> PageFields:
    """The fields of the page at *url* whose bytes are *body* (*http_charset*: the charset
    of the HTTP header it came with, ``encodings``; *read*: ``page_text`` of it, when already read)."""
    read = read or page_text(body, http_charset)
    text, whole = read.text, read.visible
    visible = cut_at_word(whole, BODY_CHARACTERS)
    language = page_language(text[:4000], visible, url) or ""
    # The words and their terms (stems) in one: typed, a distinct word is stemmed once (wordpass).
    body_words, body_terms, spellings, characters = wordpass.words_and_terms(visible, language, BODY_TERMS)
    beyond_words = _beyond_words(whole[len(visible) :], body_words)
    body_words = body_words[:BODY_TERMS]
    title = read.title
    title_words, title_terms, title_spellings, title_characters = wordpass.words_and_terms(title, language)
    # (a word written with ß spelled so: case folding spells it ss)
    spellings = {
        **title_spellings,
        **spellings,
        **analysis.sharp_s_spellings(title),
        **analysis.sharp_s_spellings(visible),
    }
    distinct = dict.fromkeys(title_words + body_words)
    kept = [word for word in distinct if len(word) >= VOCABULARY_MIN]
    if not "".join(kept).isascii():
        kept = [word for word in kept if word.isascii() or not analysis.is_segmented(word)]
    vocabulary = tuple(zip(kept, map(spellings.get, kept, kept), strict=True))
    short_spellings = tuple(
        (word, spelling)
        for word, spelling in spellings.items()
        if len(word) == VOCABULARY_MIN - 1 and spelling != word and word in distinct and not analysis.is_segmented(word)
    )
    headings = " ".join(
        clean(TAG.sub(" ", content))
        for _, content in _elements(read.content or text, _HEADING_START, lambda start: _HEADING_ENDS[start.group(1)])
    )
    terms = analysis.stem
    head = _read_head(text)
    return PageFields(
        language=language,
        title=_joined(title_terms),
        headings=_joined(terms(analysis.words(headings[:HEADING_CHARACTERS]), language)),
        url=_joined(terms(url_words(url), language)),
        body=_joined(body_terms),
        links=tuple(anchors(text, url, language, base_url(head, url))),
        vocabulary=vocabulary,
        title_words=_joined(title_words),
        body_words=_joined(body_words),
        beyond=_joined(terms(beyond_words, language)),
        beyond_words=_joined(beyond_words),
        canonical=head_canonical(url, head),
        characters=_joined(list(dict.fromkeys(title_characters + characters))),
        short_spellings=short_spellings,
    )


def head_canonical(url: str, body: bytes) -> str:
    """The canonical URL the head of the page at *url* names, normalized as the crawl normalizes
    links (any extension: a canonical URL that is a page of the index has one the crawl took); ""
    when it names none, an unusable one, or the page itself."""
    return named_canonical((), body, url) or ""


def _read_head(text: str) -> bytes:
    """The head of a page's decoded *text* (to where ``head_canonical`` and ``base_url`` stop reading)
    as UTF-8: its ``<link>`` and ``<base>`` read in the page's encoding (``encodings``), as its title and links are.
    Its raw bytes were read as UTF-8 or windows-1252: a canonical URL with Cyrillic in a windows-1251
    page named another URL, and a UTF-16 page's was not found at all (a review's find)."""
    head = text[:HEAD_BYTES]
    end = _HEAD_END.search(head)
    return (head[: end.start()] if end is not None else head).encode("utf-8", "surrogatepass")


def _beyond_words(rest: str, body_words: list[str]) -> list[str]:
    """The words past the body's bounds: those of *rest* (the text past the body's characters)
    after the body's words past BODY_TERMS, from the body's last BEYOND_OVERLAP; none when the body
    holds the whole text."""
    if not rest and len(body_words) <= BODY_TERMS:
        return []
    kept = min(len(body_words), BODY_TERMS)
    return (body_words[kept - min(kept, BEYOND_OVERLAP) :] + analysis.words(rest))[:BEYOND_TERMS]


def url_words(url: str) -> list[str]:
    """The words of a URL without its scheme (``http://example.org/books/light.html`` → example, org,
    books, light, html), percent-encoding decoded."""
    return analysis.words(unquote(_URL_SCHEME.sub("", url), errors="replace"))


def anchors(text: str, page_url: str, language: str | None, base: str | None = None) -> list[tuple[str, str]]:
    """The first MAX_LINKS links of the page (decoded *text*) to its own host with anchor text, a
    target once (its first link): (absolute URL without fragment, the anchor text's terms); not the
    page itself.  Links to other hosts are left out: a crawl's pages are under its prefixes, and a
    page links mostly to other sites (they would cost the most and give nothing).

    Relative links resolve against *base* (its ``<base href>``: ``duplicates.base_url``) when given,
    as the crawl resolves them; a target with characters past ASCII is written as the crawl's request
    for it is (percent-encoded as UTF-8: ``w3lib.url.safe_url_string``), so that it names the page the
    crawl saved under it.  Both were missed: a site under a ``<base>`` gave its anchor text to pages
    it does not link to, and a link to ``/статья.html`` gave its anchor text to none (a review's find)."""
    targets: dict[str, str] = {}
    origin = LinkResolver(page_url).origin
    if origin is None:  # a URL no parser takes: no host, so no link to its own
        return []
    resolve = LinkResolver(base) if base and base != page_url else LinkResolver(page_url)
    if resolve.origin is None:
        return []
    same_host = origin + "/"
    for href, label in markuppass.links(text):  # (typed where compiled: markuppass.pyx)
        if href.startswith(_ABSOLUTE_HTTP) and not href.startswith(same_host) and _as_written(href):
            continue  # to another host (most links), known without resolving it: see _as_written
        if "&" in href:
            href = unescape(href)
        href = clean_href(href)  # as a browser and the crawl take it: no tab or newline inside
        if not href or href[0] == "#":
            continue
        target = resolve(href)
        if target is not None and not target.isascii():
            target = _as_requested(target)
        if target is None or not target.startswith(same_host) or target in targets or target == page_url:
            continue
        if "<" in label or "&" in label:
            label = clean(_NOT_VISIBLE.sub(" ", label))
        targets[target] = label[:ANCHOR_CHARACTERS]
        if len(targets) >= MAX_LINKS:
            break
    # The anchor texts analyzed together: one pass of the analyzer, one call of the stemmer.
    labels = analysis.words_of_each(list(targets.values()))
    stems = iter(analysis.stem([word for words in labels for word in words], language))
    found = []
    for target, words in zip(targets, labels, strict=True):
        link_terms = " ".join(next(stems) for _ in words)
        if link_terms:
            found.append((target, link_terms))
    return found


def _as_requested(url: str) -> str | None:
    """*url* as a request for it is written (``safe_url_string``, as Scrapy writes it); None for one
    that cannot be."""
    # Imported here: it brings urllib.request, which a querier never needs.
    from w3lib.url import safe_url_string

    try:
        return safe_url_string(url)
    except (ValueError, UnicodeError):
        return None


def _as_written(href: str) -> bool:
    """Whether an absolute *href* holds no character reference, tab or newline: then the target it
    resolves to (``clean_href``, then ``LinkResolver``: ends stripped, fragment cut) is a prefix of it,
    and is on the page's host only when *href* starts with the host's URL too."""
    return "&" not in href and "\t" not in href and "\n" not in href and "\r" not in href


def _elements(
    text: str, start_tags: re.Pattern[str], end_tags: Callable[[re.Match[str]], re.Pattern[str]]
) -> Iterator[tuple[re.Match[str], str]]:
    """Each element of *text* whose start tag *start_tags* matches, and whose end tag (the pattern
    *end_tags* gives for its start tag: of its level, for a heading) starts within ELEMENT_CHARACTERS
    of the start tag's end: (its start tag, what is between).  The next is looked for past its end
    tag, or past the start of a start tag without one."""
    # Each kind's next end tag is looked for once, forward from where the last look ended: the text is
    # read once, whatever the start tags without an end tag.  (None: none is left.)
    next_end: dict[re.Pattern[str], tuple[int, int] | None] = {}
    at = 0
    while (start := start_tags.search(text, at)) is not None:
        tag_end = start.end()
        end_tag = end_tags(start)
        end = next_end.get(end_tag, (-1, -1))
        if end is not None and end[0] < tag_end:
            found = end_tag.search(text, tag_end)
            next_end[end_tag] = end = None if found is None else found.span()
        if end is None or end[0] - tag_end > ELEMENT_CHARACTERS:
            at = start.start() + 1
            continue
        yield start, text[tag_end : end[0]]
        at = end[1]


def _joined(terms: list[str]) -> str:
    return " ".join(terms)
