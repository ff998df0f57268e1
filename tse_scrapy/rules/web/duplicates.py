"""Duplicate pages: the canonical URL a page names, exact and near duplicates, and their groups.

A page's canonical URL comes from an HTTP ``Link: <URL>; rel="canonical"`` header (RFC 8288: several
links in a header, separated by commas; several headers; ``rel`` a space-separated list, any case;
parameters quoted or not) or from a ``<link rel="canonical" href>`` in the head (up to ``</head>`` or
``<body>``, first 64 KB; comments, scripts, styles, templates, noscripts and the title skipped, as they
hold no tags).  A ``<link rel=canonical>`` in the body is ignored, as search engines ignore it.  The URL
is cleaned as a browser cleans an href (ends stripped, tabs and newlines inside dropped, entities
decoded), resolved against the page (the head's ``<base href>`` for the ``<link>``), its fragment cut,
and written as a request for it is written (``w3lib.url.safe_url_string``, as Scrapy writes it: inner
spaces and non-ASCII percent-encoded, the host lowercased and IDNA-encoded), so that it can be looked
up among the crawled URLs.  A header link with an ``anchor`` naming another resource is not about the
page.  An empty href names nothing.  Conflicting hints are ignored, as search engines ignore them:
two different canonical URLs, or one that is unusable (not http(s), no host, longer than 8,192
characters), give no canonical URL.

Exact duplicates share ``content_digest``: their title and visible text are the same, whatever their
markup.  Near duplicates have close ``simhash``-es (Charikar's simhash of the set of word 3-shingles):
``near_duplicate_pairs`` finds the pairs within 3 bits with four 16-bit bands.  ``duplicate_groups``
joins exact duplicates and pages linked by canonical URLs, and picks each group's representative.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from html.entities import html5
from itertools import combinations, compress
from operator import ne
from urllib.parse import urljoin, urlsplit

from .entities import unescape
from .headtext import HiddenSpans
from .urls import clean_href, normalize_url

HEAD_BYTES = 64 * 1024  # where <link rel=canonical> is looked for: the head, to its end or this many bytes
MAX_URL_CHARACTERS = 8192  # a longer canonical URL (raw or written) is unusable
HASH_BITS = 64
BANDS = 4  # near_duplicate_pairs' bands: within BANDS - 1 bits, two hashes agree on a whole band
MAX_NEAR_DISTANCE = BANDS - 1
_BAND_BITS = HASH_BITS // BANDS
_BAND_MASK = (1 << _BAND_BITS) - 1

_SCHEMES = ("http", "https")
# Elements whose contents are no tags (or hidden ones), and comments: a <link> there is no link.
_HEAD_END = re.compile(rb"</head\s*>|<body\b", re.I)
# A ">" inside a quoted attribute value ends the tag here: such a tag is missed (no canonical), never misread
# as another; a quote-aware pattern would backtrack quadratically over a hostile head.
_LINK_OR_BASE = re.compile(rb"<(link|base)(?=[\s/>])[^>]*>", re.I)
# The value is optional, so that a long name without "=" is consumed once, not retried from each of
# its positions (quadratic: a 60 KB hostile head took 28 s).
# A bare value never starts with a quote: a quoted value the tag's end cut has no value at all.
_ATTRIBUTE = re.compile(rb"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>][^\s>]*)))?""")
_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|([A-Za-z][A-Za-z0-9]*)(;?))")
_HTML_WHITESPACE = re.compile(r"[\t\n\f\r ]+")
# RFC 8288 link-values: <URI> then ;-parameters (token or quoted-string values, quoted-pairs inside).
_LINK_VALUE = re.compile(r"[\s,]*<([^>]*)>")
_LINK_PARAMETER = re.compile(r"""\s*;\s*([^\s;,="]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;,"]*)))?""")
_LINK_VALUE_REST = re.compile(r"""(?:[^,"]+|"(?:[^"\\]|\\.?)*"?)*,?""")
_QUOTED_PAIR = re.compile(r"\\(.)")
_UNUSABLE = ""  # a hint that names no usable URL (never a URL: those are not empty)


def canonical_url(link_headers: Iterable[str], body: bytes, page_url: str) -> str | None:
    """The canonical URL the page at *page_url* names in its *link_headers* (the values of its ``Link``
    headers) and in its head, or None: none named, an unusable one, or two that disagree.

    *page_url* itself when the page names itself (the caller compares with ``==``)."""
    named = {*_header_canonicals(link_headers, page_url), *_head_canonicals(body, page_url)}
    if len(named) != 1 or _UNUSABLE in named:
        return None
    (url,) = named
    return page_url if url == page_url or url == _written(page_url, "") else url


def named_canonical(link_headers: Iterable[str], body: bytes, page_url: str) -> str | None:
    """The canonical URL the page names (``canonical_url``), normalized as the crawl normalizes links
    but with any extension (a canonical URL that is a page of the index has one the crawl took); None
    when it names none, an unusable one, or the page itself.  What the crawl notes of a ``Link:``
    header, ``tse import`` of an archived one, and ``tse index`` of the head."""
    named = canonical_url(link_headers, body, page_url)
    if named is None:
        return None
    named = normalize_url(named, False) or named
    return None if named == page_url else named


def agreed_canonical(from_headers: str | None, from_head: str | None) -> str | None:
    """The canonical URL a page names by its ``Link`` headers (noted at crawl time) and in its head
    (read from its page file): either one when the other names none, none when they differ."""
    if from_headers and from_head and from_headers != from_head:
        return None
    return from_headers or from_head or None


def _header_canonicals(link_headers: Iterable[str], page_url: str) -> Iterator[str]:
    for value in link_headers:
        for target, parameters in _header_links(value):
            if "canonical" not in parameters.get("rel", "").lower().split():
                continue
            anchor = parameters.get("anchor")
            # A link with an anchor is about the anchor's resource: it counts only when that is the page.
            if anchor is not None and _written(page_url, anchor) != _written(page_url, ""):
                continue
            target = clean_href(target)
            if target:  # an empty URI reference names the page itself: no hint
                yield _written(page_url, target) or _UNUSABLE


def _header_links(value: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(target, parameters) of each link-value of a ``Link`` header's *value*, parameter names
    lowercased, the first of a repeated parameter kept (RFC 8288 3.3); malformed link-values skipped."""
    pos = 0
    while pos < len(value):
        if value.find(">", pos) == -1:
            break  # no link-value left (and no <URI> match to try from every "<": that is quadratic)
        link = _LINK_VALUE.match(value, pos)
        if link is None:
            rest = _LINK_VALUE_REST.match(value, pos)
            pos = max(rest.end() if rest else pos, pos + 1)  # always forward, however broken the value
            continue
        parameters: dict[str, str] = {}
        pos = link.end()
        while parameter := _LINK_PARAMETER.match(value, pos):
            quoted, token = parameter.group(2), parameter.group(3)
            found = _QUOTED_PAIR.sub(r"\1", quoted) if quoted is not None else token or ""
            parameters.setdefault(parameter.group(1).lower(), found)
            pos = parameter.end()
        yield link.group(1), parameters
        if pos < len(value) and value[pos] != ",":
            rest = _LINK_VALUE_REST.match(value, pos)  # a malformed tail: on to the next link-value
            pos = max(rest.end() if rest else pos, pos + 1)


def _head(body: bytes) -> tuple[bytes, bytes]:
    """The head of *body* as its ``<link>`` and ``<base>`` tags are read (its first HEAD_BYTES, to the
    first "<body" or "</head>": one of those inside a script of the head cuts it short, never long),
    and that head lowercased."""
    head = bytes(body[:HEAD_BYTES])
    first_end = _HEAD_END.search(head)
    if first_end is not None:
        head = head[: first_end.start()]
    return head, head.lower()


def _first_base(head: bytes, lowered: bytes, hidden: HiddenSpans, page_url: str) -> str:
    """The URL of the first ``<base href>`` of *head*, the document's base URL wherever it stands; else
    (none, or an unusable one) *page_url*."""
    for tag in _tags_named(head, lowered, b"<base", hidden):
        href = _attributes(tag).get("href")
        if href is not None:
            return _written(page_url, clean_href(href)) or page_url
    return page_url


def _head_canonicals(body: bytes, page_url: str) -> Iterator[str]:
    head, lowered = _head(body)
    if b"canonical" not in lowered:  # most pages name none: a quick look before reading tags
        return
    # Only the tags that can matter are read (a head has dozens of <link>s and scripts): the first
    # <base> and the <link>s around each "canonical", outside comments, scripts, styles, templates
    # and the title, where a "<link" is text.  What is hidden is found only as far as those tags.
    hidden = HiddenSpans(lowered)
    candidates = _tags_holding(head, lowered, b"canonical")
    base = _first_base(head, lowered, hidden, page_url)
    for start, tag in candidates:
        if hidden.covers(start):
            continue
        attributes = _attributes(tag)
        if "canonical" not in attributes.get("rel", "").lower().split():
            continue
        href = clean_href(attributes.get("href") or "")
        if href:  # a <link> without an href (or an empty one) defines no link
            yield _written(base, href) or _UNUSABLE


def base_url(body: bytes, page_url: str) -> str:
    """The URL the links of the page at *page_url* resolve against: the first ``<base href>`` of its head
    (read as for its canonical URL: outside comments, scripts and the like, written as a request), else
    *page_url*, as for an unusable one."""
    head, lowered = _head(body)
    if b"<base" not in lowered:  # most pages have none: a quick look before reading tags
        return page_url
    return _first_base(head, lowered, HiddenSpans(lowered), page_url)


def _tags_holding(head: bytes, lowered: bytes, word: bytes) -> list[tuple[int, bytes]]:
    """(start, tag) of each ``<link ...>`` of *head* with *word* inside it, in order.

    A tag ends at its first ">", so the tag around a *word* is the one opened by the last "<link"
    before it, if that reaches past it.  Each byte is looked at a bounded number of times, however
    many times *word* stands in a hostile head."""
    found: list[tuple[int, bytes]] = []
    searched_from = done_until = 0
    at = lowered.find(word)
    while at >= 0:
        if at >= done_until:
            start = lowered.rfind(b"<link", searched_from, at)
            searched_from = at
            tag = _LINK_OR_BASE.match(head, start) if start >= 0 else None
            if tag is not None and tag.end() > at and tag.group(1).lower() == b"link":
                found.append((start, tag.group()))
                done_until = tag.end()
                searched_from = max(searched_from, done_until)
            else:
                # No tag holds *word* here; a later one can only open after this "<link" too.
                done_until = at + len(word)
        at = lowered.find(word, at + len(word))
    return found


def _tags_named(head: bytes, lowered: bytes, opening: bytes, hidden: HiddenSpans) -> Iterator[bytes]:
    """The tags of *head* opened by *opening* (lowercased, such as ``b"<base"``) outside hidden spans,
    in order."""
    at = lowered.find(opening)
    while at >= 0:
        tag = _LINK_OR_BASE.match(head, at)
        if tag is not None and not hidden.covers(at):
            yield tag.group()
        at = lowered.find(opening, tag.end() if tag is not None else at + len(opening))


def _attributes(tag: bytes) -> dict[str, str]:
    """A tag's attributes, names lowercased, values decoded and their references decoded; the first of
    a repeated attribute kept, as HTML keeps it."""
    found: dict[str, str] = {}
    for match in _ATTRIBUTE.finditer(tag):
        name = match.group(1).decode("latin-1").lower()
        raw = next((group for group in match.groups()[1:] if group is not None), None)
        if raw is not None and name not in found:
            found[name] = _unescaped_attribute(_decoded(raw))
    return found


def _decoded(raw: bytes) -> str:
    # The page's encoding is not known here: UTF-8 when the bytes are, else windows-1252 (the HTML fallback).
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def _unescaped_attribute(value: str) -> str:
    """*value* with its character references decoded as HTML decodes them in an attribute: a named one
    without its ";" stays as it is before "=" or a letter or digit (``?a=1&copy=2`` keeps ``&copy``)."""
    if "&" not in value:
        return value

    def decoded(reference: re.Match[str]) -> str:
        name, semicolon = reference.group(1), reference.group(2)
        if name is None:
            return unescape(reference.group())
        if semicolon:
            return html5.get(name + ";", reference.group())
        following = value[reference.end() : reference.end() + 1]
        if name in html5 and following != "=":
            return html5[name]
        return reference.group()  # unknown, or a legacy name followed by "=" or by more letters

    return _CHARACTER_REFERENCE.sub(decoded, value)


def _written(base: str, href: str) -> str | None:
    """*href* resolved against *base*, its fragment cut, written as a request writes it; None when
    that is not a usable http(s) URL."""
    if len(href) > MAX_URL_CHARACTERS:
        return None
    # Imported here: it brings urllib.request, which a querier never needs.
    from w3lib.url import safe_url_string

    try:
        url = safe_url_string(urljoin(base, href).split("#", 1)[0])
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a port that is no number, or out of range
    except (ValueError, UnicodeError):
        return None
    if parts.scheme not in _SCHEMES or not parts.hostname or len(url) > MAX_URL_CHARACTERS:
        return None
    return url


def content_digest(title: str, text: str) -> str:
    """A 32-hex-digit digest of a page's visible content, its *title* and *text*: in Unicode NFC,
    whitespace runs one space, stripped.  Pages with the same digest are exact duplicates for search."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (title, text):
        normalized = unicodedata.normalize("NFC", part)
        # Words already single-spaced (the search index's) are as they are: no split and join of a long text.
        spaced = normalized if _single_spaced(normalized) else " ".join(normalized.split())
        shown = spaced.encode("utf-8", "surrogatepass")
        # Each part's length first: ("a b", "") and ("a", "b") are different pages.
        digest.update(b"%d:" % len(shown) + shown)
    return digest.hexdigest()


def words_digest(title_words: str, body_words: str) -> str:
    """``content_digest`` of a page's words as the search index's analysis gives them, joined by single
    spaces (``pagefields.PageFields``), without looking at them again: the same digest wherever the
    words are in NFC (NFKC's are; a word whose accents folding dropped may not be, and is then hashed
    as it is: the same words still give the same digest).  A fifth of a millisecond less a page."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (title_words, body_words):
        shown = part.encode("utf-8", "surrogatepass")
        digest.update(b"%d:" % len(shown) + shown)
    return digest.hexdigest()


def _single_spaced(text: str) -> bool:
    """True only when *text* is its whitespace-separated parts (``str.split``'s) joined by single
    spaces; False for some such texts too (unprintable characters), which are then split and joined."""
    # Every whitespace character but the space is unprintable (a separator or a control character).
    return text.isprintable() and not (text[:1] == " " or text[-1:] == " " or "  " in text)


EMPTY_DIGEST = content_digest("", "")  # a page that shows nothing: a duplicate of no other


def simhash(words: Iterable[str]) -> int:
    """The 64-bit simhash of the set of word 3-shingles of *words* (already folded); of the words as one
    shingle when fewer than 3; 0 for no words.  Each bit is set when most shingles' hashes set it."""
    listed = list(words)
    if not listed:
        return 0
    # A set: a shingle repeated (a page's boilerplate, a table's rows) weighs as one, so that the
    # distance follows the shingle sets' Jaccard similarity, which is what a reader sees as "the same".
    shingles = {"\x00".join(listed[i : i + 3]) for i in range(max(1, len(listed) - 2))}
    digests = [
        hashlib.blake2b(shingle.encode("utf-8", "surrogatepass"), digest_size=8).digest() for shingle in shingles
    ]
    result = 0
    # Counted a byte at a time (8 counts per shingle, not 64 bit tests): a page has thousands of shingles.
    for position in range(HASH_BITS // 8):
        counts = Counter(digest[position] for digest in digests)
        for bit in range(8):
            ones = sum(count for value, count in counts.items() if value >> bit & 1)
            if 2 * ones > len(digests):
                result |= 1 << ((HASH_BITS // 8 - 1 - position) * 8 + bit)
    return result


def hamming(a: int, b: int) -> int:
    """How many bits the hashes *a* and *b* differ in."""
    return (a ^ b).bit_count()


def near_duplicate_pairs(hashes: Mapping[int, int], max_distance: int = 3) -> list[tuple[int, int]]:
    """The pairs (a, b), a < b, of documents (keys of *hashes*) whose simhashes differ in at most
    *max_distance* bits (0 to 3), sorted; documents with hash 0 (no words) are no one's near duplicate.

    Two hashes within 3 bits agree on at least one of the four 16-bit bands (pigeonhole): only the
    documents that share a band are compared."""
    if not 0 <= max_distance <= MAX_NEAR_DISTANCE:
        raise ValueError(f"max_distance must be 0 to {MAX_NEAR_DISTANCE}, not {max_distance}")
    buckets: defaultdict[tuple[int, int], list[int]] = defaultdict(list)
    for document, value in hashes.items():
        if value:
            for band in range(BANDS):
                buckets[band, value >> (band * _BAND_BITS) & _BAND_MASK].append(document)
    pairs: set[tuple[int, int]] = set()
    for documents in buckets.values():
        for a, b in combinations(sorted(documents), 2):
            if (a, b) not in pairs and hamming(hashes[a], hashes[b]) <= max_distance:
                pairs.add((a, b))
    return sorted(pairs)


def duplicate_groups(
    digests: Mapping[int, str], canonicals: Mapping[int, int], urls: Mapping[int, str]
) -> dict[int, int]:
    """Each document of a group of more than one -> its group's representative (itself included).

    A group is a connected component of two relations: the same *digests* (but ``EMPTY_DIGEST``: pages
    that show nothing are not alike), and *canonicals* (a document -> the document its canonical URL
    names).  The representative is the first of the group by: named as canonical by a document of the
    group (itself included) while naming no other (the end of the canonical chains); then the most
    named; then the shortest URL (*urls*; a document without one last); then the smallest number."""
    parent: dict[int, int] = {}

    def root(document: int) -> int:
        parent.setdefault(document, document)
        while parent[document] != document:
            parent[document] = parent[parent[document]]  # path halving
            document = parent[document]
        return document

    def join(a: int, b: int) -> None:
        a, b = root(a), root(b)
        if a != b:
            parent[max(a, b)] = min(a, b)

    first_with: dict[str, int] = {}
    for document, digest in digests.items():
        root(document)
        if digest != EMPTY_DIGEST:
            join(first_with.setdefault(digest, document), document)
    named: Counter[int] = Counter()
    for document, target in canonicals.items():
        join(document, target)
        named[target] += 1
    groups: defaultdict[int, list[int]] = defaultdict(list)
    for document in parent:
        groups[root(document)].append(document)

    def rank(document: int) -> tuple[bool, int, bool, int, int]:
        url = urls.get(document)
        end_of_chain = named[document] > 0 and canonicals.get(document, document) == document
        return (not end_of_chain, -named[document], url is None, len(url or ""), document)

    found: dict[int, int] = {}
    for members in groups.values():
        if len(members) > 1:
            representative = min(members, key=rank)
            found.update(dict.fromkeys(members, representative))
    return found


def collapse_duplicates(
    ranked: Sequence[tuple[int, float]], representatives: Mapping[int, int]
) -> tuple[list[tuple[int, float]], dict[int, list[int]]]:
    """*ranked* (docID, score), best first, with one result per group of duplicates
    (*representatives*: ``duplicate_groups``'s), and each result's other answering docs.

    A group's result stands where its best-ranked doc stood, with that doc's score; it is the
    group's representative when the representative answered too, else that best doc (a
    representative that does not answer the query is not shown for it)."""
    # Worked out by lists and dicts built in C, Python's loops over the results and the aliases only:
    # a query of common words answers thousands of pages (the 20,000-page bench: each ten times).
    docs = [doc for doc, _ in ranked]
    groups = list(map(representatives.get, docs, docs))
    if groups == docs:  # (no doc in another's group: most queries)
        return list(ranked), {}
    answered = set(docs)
    # Each group's first place in *ranked* (the last of those written from the end).
    first = dict(zip(reversed(groups), range(len(docs) - 1, -1, -1), strict=True))
    shown = {group: group if group in answered else docs[place] for group, place in first.items()}
    results = [(shown[groups[place]], ranked[place][1]) for place in sorted(first.values())]
    aliases: dict[int, list[int]] = {}
    # A doc is another's alias only in a group of its own representative's (a doc heading its own
    # group shows it); in the order they rank.
    for place in compress(range(len(docs)), map(ne, groups, docs)):
        doc = docs[place]
        result = shown[groups[place]]
        if doc != result:
            aliases.setdefault(result, []).append(doc)
    return results, aliases
