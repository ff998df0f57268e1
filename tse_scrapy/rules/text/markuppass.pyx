# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A page's markup read as the indexer reads it, typed: the compiled copy of ``markuppass.py`` (its
docstring says what each function gives; tests/test_markuppass.py compares the two).

Where the Python path reads a page's markup with regular expressions and Python's string methods,
one pass of C over its text for each (a tag substituted, then the entities, then a split list of
every word joined again), this reads its characters once, by their kind (one, two or four bytes),
into a buffer of code points, and makes one Python object for the text, and two a link.  An entity
is found as ``html.unescape``'s pattern finds it and given to it alone (``entities.unescape``).
"""

from cpython.ref cimport PyObject
from libc.stdlib cimport free, malloc
from libc.string cimport memchr

from tse_scrapy.rules.text.cleaning import NAVIGATION_NAMES, navigation_role_tag as _navigation_role_tag
from tse_scrapy.rules.web.entities import unescape as _unescape

ELEMENT_CHARACTERS = 2000
cdef Py_ssize_t _ELEMENT_CHARACTERS = ELEMENT_CHARACTERS

cdef extern from "Python.h":
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) nogil
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    object PyUnicode_Substring(object o, Py_ssize_t start, Py_ssize_t end)


cdef struct Text:
    int kind
    void* data
    Py_ssize_t length


cdef inline Py_UCS4 _at(Text* t, Py_ssize_t i) noexcept:
    if t.kind == 1:
        return (<unsigned char*>t.data)[i]
    if t.kind == 2:
        return (<unsigned short*>t.data)[i]
    return (<Py_UCS4*>t.data)[i]


cdef inline bint _separates(Py_UCS4 c) noexcept:
    """Whitespace (``str.split``'s) or a control character (``cleaning.CONTROL_CHARACTERS``)."""
    if c < 0x21:
        return True
    if 0x7F <= c <= 0xA0:
        return True
    if c < 0x80:
        return False
    return Py_UNICODE_ISSPACE(c)


cdef inline bint _ascii_letter(Py_UCS4 c) noexcept:
    return (0x41 <= c <= 0x5A) or (0x61 <= c <= 0x7A)


cdef inline bint _starts_tag(Py_UCS4 c, bint folding) noexcept:
    """Whether *c* after a "<" starts a tag: [A-Za-z/!?], and (re.I) the letters that fold to ASCII ones."""
    if _ascii_letter(c) or c == 0x2F or c == 0x21 or c == 0x3F:
        return True
    return folding and (c == 0x130 or c == 0x131 or c == 0x17F or c == 0x212A)


cdef inline bint _hex(Py_UCS4 c) noexcept:
    return (0x30 <= c <= 0x39) or (0x41 <= c <= 0x46) or (0x61 <= c <= 0x66)


cdef Py_ssize_t _entity_end(Text* t, Py_ssize_t amp) noexcept:
    """Where the character reference html.unescape's pattern finds at *amp* (an "&") ends, or *amp*
    for none: ``&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\\t\\n\\f <&#;]{1,32};?)``."""
    cdef Py_ssize_t n = t.length, i = amp + 1, start
    cdef Py_UCS4 c
    if i >= n:
        return amp
    c = _at(t, i)
    if c == 0x23:  # "#"
        i += 1
        if i < n and 0x30 <= _at(t, i) <= 0x39:
            while i < n and 0x30 <= _at(t, i) <= 0x39:
                i += 1
        elif i + 1 < n and (_at(t, i) == 0x78 or _at(t, i) == 0x58) and _hex(_at(t, i + 1)):
            i += 1
            while i < n and _hex(_at(t, i)):
                i += 1
        else:
            return amp
    else:
        start = i
        while i < n and i - start < 32:
            c = _at(t, i)
            if c == 0x09 or c == 0x0A or c == 0x0C or c == 0x20 or c == 0x3C or c == 0x26 or c == 0x23 or c == 0x3B:
                break
            i += 1
        if i == start:
            return amp
    if i < n and _at(t, i) == 0x3B:  # ";"
        i += 1
    return i


cdef struct Out:
    Py_UCS4* chars
    Py_ssize_t length
    bint pending  # a separator seen since the last character written (and something written before it)


cdef inline void _put(Out* o, Py_UCS4 c) noexcept:
    if _separates(c):
        o.pending = o.length > 0
        return
    if o.pending:
        o.chars[o.length] = 0x20
        o.length += 1
        o.pending = False
    o.chars[o.length] = c
    o.length += 1


# The most characters one step of cleaned_text's loop writes: a space, then a reference's decoding (a
# named one unknown is kept as written: "&" and at most 32 letters and ";").
cdef Py_ssize_t _LONGEST_STEP = 1 + 34


def cleaned_text(str markup not None, Py_ssize_t limit, bint folding):
    cdef Text t
    cdef Out o
    cdef Py_ssize_t n, i = 0, gt = -1, end, k
    cdef Py_UCS4 c
    cdef str replaced
    if limit <= 0:
        return ""
    t.kind = PyUnicode_KIND(markup)
    t.data = PyUnicode_DATA(markup)
    t.length = n = PyUnicode_GET_LENGTH(markup)
    # What is written never outgrows what is read (a space stands for something that wrote nothing; a
    # reference's decoding is no longer than it), and the loop stops past *limit* characters, a step
    # writing at most a space and a named reference's 34 characters: sized by the limit, not the page
    # (a 32-million-character page asked for 128 MB whatever the limit: a review's find).
    o.chars = <Py_UCS4*>malloc((min(n, limit + 2 * _LONGEST_STEP) + 1) * sizeof(Py_UCS4))
    if o.chars == NULL:
        raise MemoryError()
    o.length = 0
    o.pending = False
    try:
        # Past *limit* characters written (and one more: the cut looks at it) the rest is not read.
        while i < n and o.length <= limit:
            c = _at(&t, i)
            if c == 0x3C and i + 1 < n and _starts_tag(_at(&t, i + 1), folding):  # "<": a tag to its ">"
                if gt < i:
                    gt = i + 2
                    while gt < n and _at(&t, gt) != 0x3E:
                        gt += 1
                if gt < n:
                    o.pending = o.length > 0
                    i = gt + 1
                    continue
            elif c == 0x26:  # "&": a character reference, decoded as html.unescape decodes it
                end = _entity_end(&t, i)
                if end > i:
                    replaced = _unescape(PyUnicode_Substring(markup, i, end))
                    for k in range(len(replaced)):
                        _put(&o, replaced[k])
                    i = end
                    continue
            _put(&o, c)
            i += 1
        text = PyUnicode_FromKindAndData(4, o.chars, o.length)
    finally:
        free(o.chars)
    return _cut_at_word(text, limit)


cdef str _cut_at_word(str text, Py_ssize_t limit):
    """``cleaning.cut_at_word``: at most *limit* characters of *text*, cut before a space when there is one."""
    cdef Py_ssize_t space
    if len(text) <= limit:
        return text
    if text[limit] == " ":
        return text[:limit]
    space = text.rfind(" ", 0, limit)
    return text[:space] if space > 0 else text[:limit]


cdef Py_ssize_t _anchor_end_tag(Text* t, Py_ssize_t at, Py_ssize_t* stop) noexcept:
    """Where the first ``</a\\s*>`` (any case) at or after *at* starts (*stop*: past it), -1 for none."""
    cdef Py_ssize_t n = t.length, i = at, j
    while i + 3 < n:
        if _at(t, i) == 0x3C and _at(t, i + 1) == 0x2F and (_at(t, i + 2) == 0x61 or _at(t, i + 2) == 0x41):
            j = i + 3
            while j < n and Py_UNICODE_ISSPACE(_at(t, j)):
                j += 1
            if j < n and _at(t, j) == 0x3E:
                stop[0] = j + 1
                return i
            i = j
            continue
        i += 1
    return -1


cdef inline bint _ci(Py_UCS4 c, unsigned int lower) noexcept:
    """Whether *c* is the ASCII letter *lower* in either case."""
    return <unsigned int>c == lower or <unsigned int>c == lower - 0x20


cdef Py_ssize_t _until(Text* t, Py_ssize_t i, Py_UCS4 a, Py_UCS4 b) noexcept:
    """The first index at or after *i* holding *a* or *b*, or the text's length."""
    cdef Py_UCS4 c
    while i < t.length:
        c = _at(t, i)
        if c == a or c == b:
            return i
        i += 1
    return i


cdef bint _anchor_start_at(Text* t, Py_ssize_t p, Py_ssize_t* value, Py_ssize_t* value_end, Py_ssize_t* tag_end) noexcept:
    """Whether ``markuppass._ANCHOR_START`` matches at *p* (a "<"): its href's value (*value* to
    *value_end*) and its end (*tag_end*)."""
    cdef Py_ssize_t n = t.length, i, j, k, m, r
    cdef Py_UCS4 c, quote
    if p + 2 >= n or not _ci(_at(t, p + 1), 0x61):
        return False
    c = _at(t, p + 2)
    if not (c == 0x3E or Py_UNICODE_ISSPACE(c)):
        return False
    # (?=([^<>]*?\shref\s*=)): the first whitespace followed by href, spaces and "=", before any "<" or ">"
    i = p + 2
    j = -1
    while i < n:
        c = _at(t, i)
        if c == 0x3C or c == 0x3E:
            return False
        if (
            Py_UNICODE_ISSPACE(c)
            and i + 4 < n
            and _ci(_at(t, i + 1), 0x68)
            and _ci(_at(t, i + 2), 0x72)
            and _ci(_at(t, i + 3), 0x65)
            and _ci(_at(t, i + 4), 0x66)
        ):
            j = i + 5
            while j < n and Py_UNICODE_ISSPACE(_at(t, j)):
                j += 1
            if j < n and _at(t, j) == 0x3D:
                break
            j = -1
        i += 1
    if j < 0:
        return False
    k = j + 1
    while k < n and Py_UNICODE_ISSPACE(_at(t, k)):
        k += 1
    if k >= n:
        return False
    quote = _at(t, k)
    if quote == 0x22 or quote == 0x27:  # "([^"<]*)"[^<>]*> or the same with '
        m = _until(t, k + 1, quote, 0x3C)
        if m < n and _at(t, m) == quote:
            r = _until(t, m + 1, 0x3C, 0x3E)
            if r < n and _at(t, r) == 0x3E:
                value[0], value_end[0], tag_end[0] = k + 1, m, r + 1
                return True
    # ([^\s<>]+)(?:\s[^<>]*)?>
    m = k
    while m < n:
        c = _at(t, m)
        if c == 0x3C or c == 0x3E or Py_UNICODE_ISSPACE(c):
            break
        m += 1
    if m == k or m >= n:
        return False
    c = _at(t, m)
    if c == 0x3C:
        return False
    r = m if c == 0x3E else _until(t, m + 1, 0x3C, 0x3E)
    if r < n and _at(t, r) == 0x3E:
        value[0], value_end[0], tag_end[0] = k, m, r + 1
        return True
    return False


cdef Py_ssize_t _anchor_start(Text* t, Py_ssize_t at, Py_ssize_t* value, Py_ssize_t* value_end, Py_ssize_t* tag_end) noexcept:
    """Where the first match of ``_ANCHOR_START`` at or after *at* starts, -1 for none."""
    cdef Py_ssize_t p = at
    while p + 2 < t.length:
        if _at(t, p) == 0x3C and _anchor_start_at(t, p, value, value_end, tag_end):
            return p
        p += 1
    return -1


def links(str text not None):
    cdef Text t
    cdef Py_ssize_t at = 0, start, value, value_end, tag_end, end_start = -1, end_stop = -1
    cdef bint ends_left = True
    t.kind = PyUnicode_KIND(text)
    t.data = PyUnicode_DATA(text)
    t.length = PyUnicode_GET_LENGTH(text)
    while True:
        start = _anchor_start(&t, at, &value, &value_end, &tag_end)
        if start < 0:
            return
        if ends_left and end_start < tag_end:
            end_start = _anchor_end_tag(&t, tag_end, &end_stop)
            ends_left = end_start >= 0
        if not ends_left or end_start - tag_end > _ELEMENT_CHARACTERS:
            at = start + 1
            continue
        yield PyUnicode_Substring(text, value, value_end), PyUnicode_Substring(text, tag_end, end_start)
        at = end_stop


cdef inline bint _boundary(Text* t, Py_ssize_t i) noexcept:
    """The lookahead ``(?=[\\s/>])`` at *i* (\\s: Unicode whitespace)."""
    cdef Py_UCS4 c
    if i >= t.length:
        return False
    c = _at(t, i)
    return c == 0x2F or c == 0x3E or Py_UNICODE_ISSPACE(c)


cdef inline bint _matches_folded(unsigned int c, unsigned int lower) noexcept:
    """Whether *c* matches *lower* (an ASCII lowercase letter, digit or "-") in a re.I pattern: either
    ASCII case, and the letters that fold to ASCII ones (the dotted I and the dotless i, the long s,
    the Kelvin sign)."""
    if c == lower:
        return True
    if lower < 0x61 or lower > 0x7A:
        return False
    if c == lower - 0x20:
        return True
    if lower == 0x69:
        return c == 0x130 or c == 0x131
    if lower == 0x73:
        return c == 0x17F
    if lower == 0x6B:
        return c == 0x212A
    return False


cdef bint _value_at(Text* t, Py_ssize_t i) noexcept:
    """``cleaning.NAVIGATION_VALUE`` at *i* (an "="): ``=[\\t\\n\\f\\r "']*`` then "navigation", any ASCII case."""
    cdef Py_ssize_t n = t.length, k
    cdef Py_UCS4 c
    cdef const char* word = b"navigation"
    i += 1
    while i < n:
        c = _at(t, i)
        if c == 0x09 or c == 0x0A or c == 0x0C or c == 0x0D or c == 0x20 or c == 0x22 or c == 0x27:
            i += 1
        else:
            break
    if i + 10 > n:
        return False
    for k in range(10):
        if not _ci(_at(t, i + k), <unsigned int>word[k]):
            return False
    return True


cdef Py_ssize_t _find(Text* t, unsigned int c, Py_ssize_t i, Py_ssize_t end) noexcept:
    """The first index in [*i*, *end*) holding *c* (an ASCII character), -1 for none: memchr over the
    code points' bytes (a byte of *c* in another code point is passed over)."""
    cdef const unsigned char* base = <const unsigned char*>t.data
    cdef const unsigned char* p
    cdef const unsigned char* stop
    cdef Py_ssize_t k = t.kind, index
    if i >= end:
        return -1
    if k == 1:
        p = <const unsigned char*>memchr(base + i, c, end - i)
        return -1 if p == NULL else p - base
    p = base + i * k
    stop = base + end * k
    while p < stop:
        p = <const unsigned char*>memchr(p, c, stop - p)
        if p == NULL:
            return -1
        index = (p - base) // k
        if _at(t, index) == c:
            return index
        p += 1
    return -1


cdef Py_ssize_t _rfind(Text* t, unsigned int c, Py_ssize_t start, Py_ssize_t end) noexcept:
    """``str.rfind(c, start, end)``: the last index in [*start*, *end*) holding *c*, -1 for none."""
    cdef Py_ssize_t i = end - 1
    while i >= start:
        if _at(t, i) == c:
            return i
        i -= 1
    return -1


cdef Py_ssize_t _tag_open_at(Text* t, Py_ssize_t at, Py_ssize_t floor) noexcept:
    """``cleaning.tag_open_at``: where the tag *at* is within opened (a "<" and a letter, "/", "!",
    "?", or a letter that folds to an ASCII one), the first after the last ">" before *at*, looked
    for back to *floor*; -1 when *at* is in no tag."""
    cdef Py_ssize_t lo = _rfind(t, 0x3E, floor, at) + 1, i
    if lo < floor:
        lo = floor
    i = _find(t, 0x3C, lo, at - 1)
    while i >= 0:
        if _starts_tag(_at(t, i + 1), True):
            return i
        i = _find(t, 0x3C, i + 1, at - 1)
    return -1


cdef bint _nav_start_at(Text* t, Py_ssize_t i) noexcept:
    """``cleaning.NAV_START`` at *i* (a "<"): ``<nav(?=[\\s/>])``, any ASCII case."""
    return (i + 4 < t.length and _ci(_at(t, i + 1), 0x6E) and _ci(_at(t, i + 2), 0x61)
            and _ci(_at(t, i + 3), 0x76) and _boundary(t, i + 4))


cdef Py_ssize_t _element_end(Text* t, Py_ssize_t start, unsigned int* name, Py_ssize_t m) noexcept:
    """markuppass.py's ``_element_end``: past the end tag closing the element of *name* (lowercased,
    *m* characters) whose start tag is at *start*; -1 when never closed."""
    cdef Py_ssize_t n = t.length, at = start, j, k, depth = 0, floor = start, floor_before
    cdef bint closing, same
    while True:
        at = _find(t, 0x3C, at, n)
        if at < 0:
            return -1
        j = at + 1
        closing = j < n and _at(t, j) == 0x2F
        if closing:
            j += 1
        same = j + m <= n
        if same:
            for k in range(m):
                if not _matches_folded(_at(t, j + k), name[k]):
                    same = False
                    break
        if same and _boundary(t, j + m):
            floor_before = floor
            floor = at
            if at == start or _tag_open_at(t, at, floor_before) < 0:
                depth += -1 if closing else 1
                if depth == 0:
                    return _find(t, 0x3E, j + m, n) + 1  # (as the Python path: every tag is closed)
            at = j + m
        else:
            at += 1


def navigation_spans(str markup not None):
    cdef Text t
    t.kind = PyUnicode_KIND(markup)
    t.data = PyUnicode_DATA(markup)
    t.length = PyUnicode_GET_LENGTH(markup)
    cdef Py_ssize_t n = t.length, at, floor, opened, end, m, k, start, last_end = -1
    cdef unsigned int name_buffer[32]
    starts = set()
    # The Python path's searches, each pattern's first character found by memchr.
    floor = 0
    at = _find(&t, 0x3C, 0, n)
    while at >= 0:
        if _nav_start_at(&t, at):
            if _tag_open_at(&t, at, floor) < 0:
                starts.add((at, "nav"))
            floor = at
        at = _find(&t, 0x3C, at + 1, n)
    floor = 0  # where no tag is open
    at = _find(&t, 0x3D, 0, n)
    while at >= 0:
        if not _value_at(&t, at):
            at = _find(&t, 0x3D, at + 1, n)
            continue
        opened = _tag_open_at(&t, at, floor)
        if opened < 0:  # in the text: the next one may be in the very next tag
            floor = at
            at = _find(&t, 0x3D, at + 1, n)
            continue
        end = _find(&t, 0x3E, at, n)  # the end of the tag it is in
        if end < 0:
            break
        name = _navigation_role_tag(markup, opened, end)
        if name is not None:
            starts.add((opened, name))
        floor = end + 1
        at = _find(&t, 0x3D, floor, n)
    spans = []
    names = set()
    for start, name in sorted(starts):
        if start < last_end:  # within the last one (no span yet: -1)
            continue
        if name not in names and len(names) == NAVIGATION_NAMES:
            continue
        names.add(name)
        m = len(name)
        for k in range(m):
            name_buffer[k] = ord(name[k])
        end = _element_end(&t, start, name_buffer, m)
        if end < 0:  # never closed: it and what follows stay text (nor is a later one looked for)
            break
        spans.append((start, end))
        last_end = end
    return spans


cdef bint _names_at(Text* t, Py_ssize_t i, const char* name, bint folding) noexcept:
    """Whether *name* (ASCII lowercase) stands at *i*, followed by ``(?=[\\s/>])``: in either ASCII case,
    and (*folding*: re.I) by the letters that fold to its ASCII ones."""
    cdef Py_ssize_t k = 0
    while name[k] != 0:
        if i + k >= t.length:
            return False
        if folding:
            if not _matches_folded(_at(t, i + k), <unsigned char>name[k]):
                return False
        elif not _ci(_at(t, i + k), <unsigned char>name[k]):
            return False
        k += 1
    return _boundary(t, i + k)


cdef bint _dropped_start_at(Text* t, Py_ssize_t i, bint folding) noexcept:
    """``cleaning.DROPPED_START`` (*folding*: ``DROPPED_START_FOLDING``) at *i* (a "<")."""
    cdef Py_ssize_t n = t.length
    cdef unsigned int c
    if i + 1 >= n:
        return False
    c = _at(t, i + 1)
    if c == 0x21:  # "!"
        return i + 3 < n and _at(t, i + 2) == 0x2D and _at(t, i + 3) == 0x2D
    if 0x41 <= c <= 0x5A:
        c += 0x20
    elif folding and c == 0x17F:  # the long s
        c = 0x73
    # (by its first letter: most tags start none of the names)
    if c == 0x73:
        return _names_at(t, i + 1, b"script", folding) or _names_at(t, i + 1, b"style", folding)
    if c == 0x74:
        return _names_at(t, i + 1, b"template", folding) or _names_at(t, i + 1, b"title", folding)
    if c == 0x6E:
        return _names_at(t, i + 1, b"noscript", folding)
    return False


def dropped_spans(str text not None, bint folding, match_whole):
    cdef Text t
    t.kind = PyUnicode_KIND(text)
    t.data = PyUnicode_DATA(text)
    t.length = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t n = t.length, pos = 0, start
    spans = []
    while True:
        start = _find(&t, 0x3C, pos, n)
        while start >= 0 and not _dropped_start_at(&t, start, folding):
            start = _find(&t, 0x3C, start + 1, n)
        if start < 0:
            break
        if _tag_open_at(&t, start, pos) >= 0:
            pos = _find(&t, 0x3E, start, n) + 1
            if pos == 0:
                break
            continue
        found = match_whole(text, start)
        if found is None:
            pos = start + 1
            continue
        spans.append(found.span())
        pos = found.end()
    return spans
