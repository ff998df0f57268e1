"""A PDF's text and title, from what PDFium read of it (index/pdfs.py reads it, in a child process).

* A body is a PDF when ``%PDF-`` is within its first 1,024 bytes: readers accept
  junk before it (a mail header, a byte-order mark), and so does this.
* Text: the pages' texts joined by a blank line; ``\\r\\n`` as ``\\n``; control
  characters (C0 but ``\\n`` and ``\\t``, DEL), U+FFFF and lone surrogates
  removed (the text is stored as UTF-8); runs of spaces as one, spaces and tabs
  at either end of a line removed, at most one blank line in a row.  A word
  hyphenated at a line end (``exam-\\nple``) is joined when the letters on both
  sides are lowercase: ``Jean-\\nPaul``, ``ISO-\\n8859`` and ``x-\\n1`` are kept.
  PDFium itself gives such a hyphen as U+FFFE and drops the line break; it is
  joined by the same rule, or else becomes ``-`` and the line break again.
* Title: the document's own (its metadata's Title), whitespace collapsed, if it
  has a letter or a digit and is not a placeholder that a program wrote in place
  of one: ``Untitled``, ``untitled-1``, ``Title``, ``Document1``, ``Unknown``,
  ``Microsoft Word - report.doc``, a file name (``main.tex``, ``C:\\doc\\a.pdf``).
  Otherwise the first line of the text that has a letter or a digit (a line of
  bullets or rules says nothing), whitespace collapsed; otherwise "".  Either is
  cut to 200 characters at a word boundary (in a word, when a single word is
  longer).

None of these raises, whatever the input.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

PDF_MAGIC = b"%PDF-"
MAGIC_WITHIN = 1024  # bytes from the start where %PDF- is looked for
TITLE_MAX = 200  # characters of a title, cut at a word boundary

# "\r" is among them: PDFium ends its lines with "\r\n" (made "\n" first), and a
# lone "\r" is a glyph that a font maps to 13 (TeX's circle of ©), not a line end.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\uffff]+")
_PDFIUM_HYPHEN = re.compile("\ufffe")
_LINE_END_HYPHEN = re.compile("-\n")
_SPACES = re.compile(" {2,}")
_LINE_EDGE = re.compile("[ \t]*\n[ \t]*")
_BLANK_LINES = re.compile("\n{3,}")
_LINE = re.compile("[^\n]+")
_FORMATS = r"docx?|dotx?|odt|rtf|pdf|tex|dvi|ps|eps|txt|html?|xml|indd|qxd|pptx?|xlsx?|wpd|pages|key|cdr|ai"
_PLACEHOLDER = re.compile(
    r"untitled\b.*|no title|title|document\s*\d*|unknown|none|null|"
    r"microsoft \w+ - .*|"  # Office's printer driver: "Microsoft Word - report.doc"
    rf"(?:.*[/\\].*|\S+)\.(?:{_FORMATS})",  # a file's path, or its name
    re.I,
)


def looks_like_pdf(body: bytes) -> bool:
    """Whether *body* starts as a PDF: ``%PDF-`` within its first 1,024 bytes."""
    return PDF_MAGIC in bytes(body[:MAGIC_WITHIN])


def clean_pdf_text(page_texts: Iterable[str]) -> str:
    """The text of a document whose pages gave *page_texts* (PDFium's text of each page)."""
    text = "\n\n".join(page_texts).replace("\r\n", "\n")
    text = _CONTROLS.sub("", text)
    text = _PDFIUM_HYPHEN.sub(_pdfium_hyphen, text)
    text = _LINE_EDGE.sub("\n", _SPACES.sub(" ", text))
    text = _LINE_END_HYPHEN.sub(_line_end_hyphen, text)
    return _BLANK_LINES.sub("\n\n", text).strip(" \t\n")


def _between_lowercase(match: re.Match[str]) -> bool:
    text, start, end = match.string, match.start(), match.end()
    return start > 0 and end < len(text) and text[start - 1].islower() and text[end].islower()


def _pdfium_hyphen(match: re.Match[str]) -> str:
    return "" if _between_lowercase(match) else "-\n"


def _line_end_hyphen(match: re.Match[str]) -> str:
    return "" if _between_lowercase(match) else match.group()


def pdf_title(metadata_title: str | None, text: str) -> str:
    """The title of a document whose metadata gives *metadata_title* (None when it has none)
    and whose text (clean_pdf_text's) is *text*."""
    own = _collapsed(metadata_title or "")
    if _says_something(own) and not _PLACEHOLDER.fullmatch(own):
        return _cut(own)
    for line in _LINE.finditer(text):  # lazily: the text may be megabytes, its first line is near its start
        candidate = _collapsed(line.group())
        if _says_something(candidate):
            return _cut(candidate)
    return ""


def _collapsed(value: str) -> str:
    return " ".join(_CONTROLS.sub(" ", value).replace("\ufffe", "").split())


def _says_something(value: str) -> bool:
    return any(character.isalnum() for character in value)


def _cut(value: str) -> str:
    """*value* cut to TITLE_MAX characters, at the last space that keeps it within them if there is one."""
    if len(value) <= TITLE_MAX:
        return value
    head = value[: TITLE_MAX + 1]  # a space just past the limit is a word boundary too
    cut = head.rfind(" ")
    return (value[:cut] if cut > 0 else value[:TITLE_MAX]).rstrip()


def pdf_as_html(title: str, text: str) -> bytes:
    """A PDF's *title* and *text* as the small UTF-8 HTML page the indexer reads in its place:
    the title in ``<title>``, each paragraph (lines up to a blank line) in a ``<p>``, everything
    escaped, so that the SPEC words, titles, snippets and search fields read it as any page."""
    paragraphs = (paragraph.strip() for paragraph in text.split("\n\n"))
    # quote=False: quotes need no escape in text, and "&quot;" would give the SPEC words "quot".
    body = "".join(f"<p>{html.escape(paragraph, quote=False)}</p>\n" for paragraph in paragraphs if paragraph)
    head = f'<meta charset="utf-8"><title>{html.escape(title, quote=False)}</title>'
    return f"<!DOCTYPE html>\n<html><head>{head}</head><body>\n{body}</body></html>\n".encode()
