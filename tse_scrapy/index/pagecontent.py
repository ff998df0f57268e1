"""A page as the indexer reads it: an HTML page as saved, a PDF document as its text.

A page the crawl noted as a PDF (``rules/files/pagenotes.py``) is read by
``pdfs.PdfExtractor`` in a child process bounded in time and memory; its text
becomes a small UTF-8 HTML document (``rules.text.pdftext.pdf_as_html``: its
title, then its text), which the SPEC words, the document store and the
search fields then read as they read any page.  A PDF that gives no text
(encrypted, scanned, damaged, hostile) is indexed as an empty page, with a
warning the indexer counts; its page file is never touched.

One extractor per process (the indexer's workers each have theirs), started
at the first PDF and stopped when the process exits.
"""

from __future__ import annotations

import atexit
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..rules.files import pagedir
from ..rules.files.pagenotes import NotedPages
from ..rules.text.pdftext import pdf_as_html

if TYPE_CHECKING:
    from .pdfs import PdfExtractor

_extractor: PdfExtractor | None = None
# Ends the warning of a PDF read in part (too long, some pages damaged): its text is indexed as far as read.
PART_INDEXED = " (part of its text indexed)"


@dataclass(frozen=True)
class Readable:
    """What the indexer reads of a page: the page (a PDF's as HTML), its charset, and why a PDF
    gave no text, or only part of it (ending PART_INDEXED; None for a page read whole, and for every
    HTML page)."""

    page: pagedir.Page
    charset: str | None
    warning: str | None = None


def readable(page: pagedir.Page, notes: NotedPages) -> Readable:
    """*page* as the indexer reads it, with what the crawl *notes* of it."""
    if page.url not in notes.pdfs:
        return Readable(page, notes.charset(page.url))
    text = pdf_extractor().extract(page.body)
    html = pdf_as_html(text.title, text.text)
    warning = text.warning + PART_INDEXED if text.warning and text.text.strip() else text.warning
    return Readable(pagedir.Page(page.url, page.depth, html), "utf-8", warning)


def pdf_extractor() -> PdfExtractor:
    """This process's extractor (started on first use)."""
    global _extractor
    if _extractor is None:
        from .pdfs import PdfExtractor  # only where there are PDFs: the querier starts without it

        _extractor = PdfExtractor()
        atexit.register(_extractor.close)
    return _extractor
