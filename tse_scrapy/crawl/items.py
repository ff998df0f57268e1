"""PageItem: what the spider yields for each fetched page."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rules.files.pagenotes import NOTE_KINDS


@dataclass
class PageItem:
    """A fetched page, saved by PageDirPipeline as the next docID."""

    url: str
    depth: int
    body: bytes
    # For the durable crawl state: the page's frontier row, a docID fixed
    # before the fetch (a resumed page), and whether the page file exists
    # already (a page read back from disk on resume, never written twice).
    state_row: int | None = None
    doc_id: int | None = None
    replayed: bool = False
    # For updates and validators: the HTTP status (304: the body is the saved
    # copy), the page's validators, and whether it was queued as a revisit.
    status: int = 200
    validators: dict[str, str | None] = field(default_factory=dict)
    revisit: bool = False
    # The scheduler's token of the page's request: the pipeline names it when
    # the page's file starts being written (``page_writing``).
    token: int | None = None
    # The charset of the page's Content-Type header (--links html): noted beside
    # the page files, which keep no header (rules/files/pagenotes.py).
    http_charset: str | None = None
    # Its X-Robots-Tag header or robots <meta> says noindex (--links html): saved, noted beside
    # the page files, and left out by the indexer.
    noindex: bool = False
    # Its links are not followed (--links html): its X-Robots-Tag header or robots <meta> says nofollow,
    # or, for an answer that does not say (a 304 without the header, a kept copy, a page read back on
    # resume), its note does (pagenotes.page_nofollow).  Noted beside the page files; never a PDF's.
    nofollow: bool = False
    # A PDF document (--links html): noted beside the page files, so the indexer reads its text.
    pdf: bool = False
    # The canonical URL the page names, when not its own (--links html): noted beside the page files.
    canonical: str | None = None
    # The kinds of note (pagenotes.NOTE_KINDS) the values above are the server's answer's for: all of
    # them for a 200, those whose headers a 304 carries, none for a copy kept after a failure or a page
    # read back on resume (their notes stay as they were).
    said: frozenset[str] = NOTE_KINDS
    # The lastmod its sitemap gave (--sitemaps): kept in the catalog (--validators, --update).
    lastmod: str | None = None
    # The redirects that led to it, (URL normalized, HTTP status or None), in order: an update
    # records them (a known page that redirects now is gone; a redirect is followed as it was
    # when its source cannot be fetched).
    redirected_from: tuple[tuple[str, int | None], ...] = ()
