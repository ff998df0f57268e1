"""The <base> a saved copy is shown with (rules/web/savedcopy.py): its place and its encoding."""

import codecs
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tse_scrapy.rules.web.savedcopy import base_tag, with_base

URL = "http://h/a b&c.html"
TAG = '<base href="http://h/a b&amp;c.html" target="_top">'
TARGET = b'<base target="_top">'  # (where the page's own base is no web URL: links still leave a frame for the site)


def own(href: str) -> bytes:
    """The tag a page naming its own base gets: that base resolved against the page's URL (written here)."""
    return f'<base href="{href}" target="_top">'.encode()


XHTML = b'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN">'


@pytest.mark.parametrize(
    "body, encoding, expected",
    [
        (b"<html><title>t</title>", "utf_8", TAG.encode() + b"<html><title>t</title>"),
        # After a byte order mark, which must stay first, and after a doctype (quirks mode otherwise).
        (codecs.BOM_UTF8 + b"<p>x", "utf_8", codecs.BOM_UTF8 + TAG.encode() + b"<p>x"),
        (b"<!DOCTYPE html>\n<html>", "utf_8", b"<!DOCTYPE html>" + TAG.encode() + b"\n<html>"),
        (b"\n  <!doctype HTML PUBLIC '-'><p>", "cp1252", b"\n  <!doctype HTML PUBLIC '-'>" + TAG.encode() + b"<p>"),
        (
            codecs.BOM_UTF16_LE + "<!DOCTYPE html><p>é".encode("utf-16-le"),
            "utf_16_le",
            codecs.BOM_UTF16_LE + f"<!DOCTYPE html>{TAG}<p>é".encode("utf-16-le"),
        ),
        ("<!DOCTYPE html><p>ω".encode("utf-16-be"), "utf_16_be", f"<!DOCTYPE html>{TAG}<p>ω".encode("utf-16-be")),
        # UTF-32's marks, the little-endian one starting as UTF-16's does (a tester's find: the tag went in
        # after two of its four bytes).
        (
            codecs.BOM_UTF32_LE + "<!DOCTYPE html><p>é".encode("utf-32-le"),
            "utf_32_le",
            codecs.BOM_UTF32_LE + f"<!DOCTYPE html>{TAG}<p>é".encode("utf-32-le"),
        ),
        (
            codecs.BOM_UTF32_BE + "<p>ω".encode("utf-32-be"),
            "utf_32_be",
            codecs.BOM_UTF32_BE + f"{TAG}<p>ω".encode("utf-32-be"),
        ),
        # An XHTML prolog, or comments before the doctype: after them (the page stays in standards mode).
        (XHTML + b"\n<html>", "utf_8", XHTML + TAG.encode() + b"\n<html>"),
        (b"<!-- built --><!DOCTYPE html><p>", "utf_8", b"<!-- built --><!DOCTYPE html>" + TAG.encode() + b"<p>"),
        (b"<!-- no doctype --><p>", "utf_8", TAG.encode() + b"<!-- no doctype --><p>"),
        # A comment ends where a browser ends it ("<!-->", "<!--->", "--!>"; a reviewer's find: read on to
        # the next "-->", the page's own tag was taken for the prolog, and its own target came first).
        (
            b'<!--> <base href="http://o/" target="_self"> --><!doctype html><p>',
            "utf_8",
            own("http://o/") + b'<!--> <base href="http://o/" target="_self"> --><!doctype html><p>',
        ),
        (b"<!---> <p> --><!DOCTYPE html>", "utf_8", TAG.encode() + b"<!---> <p> --><!DOCTYPE html>"),
        (b"<!-- a --!><!DOCTYPE html><p>", "utf_8", b"<!-- a --!><!DOCTYPE html>" + TAG.encode() + b"<p>"),
        # A page naming its own base gets that one, resolved against its URL as a browser resolves it (its
        # links were written for it, and the crawl read them so; a tester's find: left to itself, a relative
        # one, Angular's "/", was resolved against /doc/N).
        (
            b'<html><head><BASE HREF="http://h/docs/"></head><a href="x.html">',
            "utf_8",
            own("http://h/docs/") + b'<html><head><BASE HREF="http://h/docs/"></head><a href="x.html">',
        ),
        (
            '<!DOCTYPE html><head><base href="/d/" target="_blank"><p>é'.encode("utf-16-le"),
            "utf_16_le",
            '<!DOCTYPE html><base href="http://h/d/" target="_top"><head><base href="/d/" target="_blank"><p>é'.encode(
                "utf-16-le"
            ),
        ),
        *(
            (page, "utf_8", own(resolved) + page)
            for page, resolved in (
                (b'<head><base href="/"><a href="b.html">', "http://h/"),
                (b"<head><base href=../up/ target=x>", "http://h/up/"),
                (b'<head><base href=" &#47;e/?a=1&amp;b=2 ">', "http://h/e/?a=1&amp;b=2"),
                (b'<head><base href="">', "http://h/a b&amp;c.html"),
                (b"<head><base href='//cdn.example/x/'>", "http://cdn.example/x/"),
            )
        ),
        # One that is no web URL: the page's own applies, the links leaving the frame all the same.
        (b'<head><base href="javascript:x">', "utf_8", TARGET + b'<head><base href="javascript:x">'),
        (
            b'<html><head><title>t</title></head><body><base href="/late/">',
            "utf_8",
            TAG.encode() + b'<html><head><title>t</title></head><body><base href="/late/">',
        ),
        # A <base> the browser does not read as a tag (in a comment, a script's string, a style or a title,
        # or after a comment or script left open) is none: the page's links are named for its URL.
        *(
            (page, "utf_8", TAG.encode() + page)
            for page in (
                b'<html><head><!-- <base href="http://old/"> --><a href="x.html">',
                b"<head><script>document.write('<base href=\"/js/\">')</script></head>",
                b'<head><SCRIPT type="text/javascript">var b = "<base href=/s/>";</SCRIPT ></head>',
                b'<head><style>/* <base href="/css/"> */</style><title>A <base href="/t/"> tag</title>',
                b'<head><noframes><base href="/nf/"></noframes></head>',
                b'<head><!-- left open <base href="/c/">',
                b'<head><script>"<base href=/open/>"',
                b'<head><script>"</head><base href=/s/>"</script><title>t</title>',
                # A template's content is inert: a fragment of its own, not the page's.
                b'<head><template><base href="/t/"></template></head>',
                b"<head><TEMPLATE><template></template><base href=/t/></TEMPLATE></head>",
                b"<head><template><base href=/t/>",
            )
        ),
        # ... but one after them is the page's own, their end tags read as a browser reads them (a
        # reviewer's finds: "</title foo>", "</script/>"; "<style-x>" is no style).
        *(
            (page, "utf_8", own("http://h/d/") + page)
            for page in (
                b'<head><!-- a --><script>x</script><base href="/d/"></head>',
                b'<head><title>t</title foo><base href="/d/">',
                b'<head><script>x</script/><base href="/d/">',
                b'<head><style-x>a</style-x><base href="/d/">',
                b"<head><base\nhref='/d/'>",
                b'<head><template><base href="/t/"><body></template><base href="/d/">',
            )
        ),
        # An attribute that is no href names no base.
        (b'<head><base data-href="/d/"><p>', "utf_8", TAG.encode() + b'<head><base data-href="/d/"><p>'),
        # A doctype later in the page is no leading one.
        (b"<p>x</p><!DOCTYPE html>", "utf_8", TAG.encode() + b"<p>x</p><!DOCTYPE html>"),
        ("<p>Привет".encode("cp1251"), "cp1251", TAG.encode() + "<p>Привет".encode("cp1251")),
        ("<p>日本語".encode("iso2022_jp"), "iso2022_jp", TAG.encode() + "<p>日本語".encode("iso2022_jp")),
        (b"", "utf_8", TAG.encode()),
        # No codec by that name: the page as it is.
        (b"<p>x", "no-such-codec", b"<p>x"),
    ],
)
def test_a_saved_copy_gets_a_base_naming_its_url(body, encoding, expected):
    assert with_base(body, URL, encoding) == (body if expected is None else expected)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", ""])
def test_only_a_web_url_is_named(url):
    assert with_base(b"<p>x", url, "utf_8") == b"<p>x"


def test_the_url_cannot_leave_the_attribute():
    tag = base_tag('http://h/"><script>alert(1)</script>')
    assert tag == '<base href="http://h/&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" target="_top">'


ENCODINGS = ["utf_8", "cp1252", "cp1251", "utf_16_le", "utf_16_be", "shift_jis", "gb18030", "iso2022_jp", "euc_kr"]


@given(
    st.binary(max_size=300), st.sampled_from(ENCODINGS), st.sampled_from([b"", b"<!DOCTYPE html>", b" <!doctype x>"])
)
@example(b"\xef\xbb\xbf", "utf_16_le", b"")  # another encoding's byte order mark is text (found in CI)
@example(b"\xff\xfe<p>x", "utf_8", b"")
def test_the_page_is_kept_whole_around_the_tag(body, encoding, doctype):
    """Whatever the bytes: one tag (naming the URL, else, where the page may name a base of its own, that
    one or only the target), in the page's encoding, inserted once; every byte of the page kept, in order."""
    page = doctype + body
    shown = with_base(page, URL, encoding)
    codec = {"utf_16_le": "utf-16-le", "utf_16_be": "utf-16-be"}.get(encoding, encoding)
    text = shown.decode(codec, "replace")
    inserted = re.search(r'<base (?:href="[^"]*" )?target="_top">', text)
    assert inserted is not None
    tag = inserted.group().encode(codec)
    at = shown.find(tag)
    assert at != -1 and shown[:at] + shown[at + len(tag) :] == page
    assert tag == TAG.encode(codec) or b"base" in page.lower() or b"b\0a\0s\0e" in page.lower()
