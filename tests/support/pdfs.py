"""PDFs made by hand, for the PDF tests and bench/pdf_bench.py: numbered objects, an xref table, a
trailer; pages of Helvetica text showing content streams."""

from __future__ import annotations


def pdf_file(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF of *objects* (numbered from 1; the first the catalog), with its xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref)
    return bytes(out)


def stream(content: bytes, compressed: bytes | None = None) -> bytes:
    """A content stream object of *content* (*compressed*: its FlateDecode bytes, given instead)."""
    if compressed is None:
        return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content)
    return b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(compressed), compressed)


def pages_pdf(contents: list[int], objects: list[bytes], title: bytes | None = None, trailer: bytes = b"") -> bytes:
    """A PDF whose pages show the content streams *contents* (object numbers among *objects*, which
    come after the catalog, the page tree and the font: number 4 on)."""
    first_page = 4 + len(objects)
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(len(contents)))
    head = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(contents)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    pages = [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
        b"/Contents %d 0 R >>" % content
        for content in contents
    ]
    info = [b"<< /Title (%s) /Producer (tests) >>" % title] if title is not None else []
    if info:
        trailer += b" /Info %d 0 R" % (first_page + len(pages))
    return pdf_file(head + objects + pages + info, trailer)
