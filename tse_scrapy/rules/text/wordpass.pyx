# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A page's words as the indexer counts and analyzes them, typed: the compiled copy of ``wordpass.py``
(its docstring says what each function gives; tests/test_wordpass.py compares the two).

Where the Python path makes a text's words in several passes in C with Python objects between them
(a regular expression's copy, a translated copy, a split list of every word, then a dict or a set of
them), this reads the bytes or characters once into a scratch buffer, finds each word in a table of
its own (open addressing, keys in the buffer), and makes a Python object once a distinct word: a
wikipedia page's 3,300 words are 1,000 distinct ones.  The words of a text are then their numbers
into the distinct ones, which are stemmed once each (bench/RESULTS.md: 56 M instructions an indexing
worker's page, this chain 19.7 M of them as Python, 8.2 M typed).  What is not ASCII is analyzed as
the Python path analyzes it (``analysis``: NFKC, case folding, accents, bigrams), a distinct piece once.
"""

from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcmp

import array as _array
from collections import Counter

from tse_scrapy.rules.text import analysis as _analysis

UINT32 = "I" if _array.array("I").itemsize == 4 else "L"

cdef extern from "Python.h":
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)


# A table of distinct strings held in a buffer: each slot a string's hash, place and length in the
# buffer, and its number (first occurrence first; -1: empty).  Kept at most half full.
cdef struct Slot:
    uint64_t hash
    Py_ssize_t offset
    Py_ssize_t length
    Py_ssize_t number

cdef struct Table:
    Slot* slots
    Py_ssize_t mask
    Py_ssize_t used

cdef uint64_t _FNV_START = 1469598103934665603ULL
cdef uint64_t _FNV_PRIME = 1099511628211ULL


cdef inline uint64_t _mixed(uint64_t h) noexcept nogil:
    # FNV-1a's low bits mixed with its high ones: the table's slot is the low bits.
    h ^= h >> 33
    h *= 0xff51afd7ed558ccdULL
    h ^= h >> 33
    return h


cdef int _table_init(Table* t, Py_ssize_t expected) except -1:
    cdef Py_ssize_t size = 1024, i
    while size < 2 * expected:
        size <<= 1
    t.slots = <Slot*>malloc(size * sizeof(Slot))
    if t.slots == NULL:
        raise MemoryError()
    for i in range(size):
        t.slots[i].number = -1
    t.mask = size - 1
    t.used = 0
    return 0


cdef int _table_grow(Table* t) except -1:
    cdef Py_ssize_t old_size = t.mask + 1, size = 2 * old_size, i, j
    cdef Slot* old = t.slots
    cdef Slot* grown = <Slot*>malloc(size * sizeof(Slot))
    if grown == NULL:
        raise MemoryError()
    for i in range(size):
        grown[i].number = -1
    for i in range(old_size):
        if old[i].number >= 0:
            j = old[i].hash & (size - 1)
            while grown[j].number >= 0:
                j = (j + 1) & (size - 1)
            grown[j] = old[i]
    t.slots = grown
    t.mask = size - 1
    free(old)
    return 0


cdef Py_ssize_t _number(Table* t, const unsigned char* base, Py_ssize_t offset, Py_ssize_t length, uint64_t h) except -1:
    """The number of the string of *length* bytes at *offset* in *base* (hashed *h*), the next one
    (``t.used - 1`` after) when new."""
    cdef Py_ssize_t j = h & t.mask
    cdef Slot* s
    while True:
        s = &t.slots[j]
        if s.number < 0:
            break
        if s.hash == h and s.length == length and memcmp(base + s.offset, base + offset, length) == 0:
            return s.number
        j = (j + 1) & t.mask
    s.hash = h
    s.offset = offset
    s.length = length
    s.number = t.used
    t.used += 1
    if 2 * t.used > t.mask:
        _table_grow(t)
    return t.used - 1


# SPEC words (``words``): runs of ASCII letters outside <...>, small, of MIN_LENGTH letters or more.
cdef unsigned char _SPEC_LETTER[256]
# Word characters in ASCII (``analysis``: letters and digits), the capitals made small; 0 for the others.
cdef unsigned char _ASCII_WORD[128]
cdef int _code
for _code in range(256):
    _SPEC_LETTER[_code] = _code + 32 if 65 <= _code <= 90 else (_code if 97 <= _code <= 122 else 0)
for _code in range(128):
    _ASCII_WORD[_code] = _code + 32 if 65 <= _code <= 90 else (_code if 48 <= _code <= 57 or 97 <= _code <= 122 else 0)

from tse_scrapy.rules.text.words import MIN_LENGTH as _MIN_LENGTH
cdef Py_ssize_t MIN_LENGTH = _MIN_LENGTH


def word_counts(bytes body not None):
    cdef const unsigned char* source = <const unsigned char*>PyBytes_AS_STRING(body)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(body), at, start, last_close = -1, number
    cdef const unsigned char* found
    cdef unsigned char letter
    cdef uint64_t h
    cdef Table t
    t.slots = NULL
    for at in range(size - 1, -1, -1):
        if source[at] == b">":
            last_close = at
            break
    # An unclosed "<" and what follows it is left out: after this every "<" has a ">" after it.
    found = <const unsigned char*>memchr(source + last_close + 1, b"<", size - last_close - 1)
    if found != NULL:
        size = found - source
    cdef unsigned char* small = <unsigned char*>malloc(size + 1)
    cdef Py_ssize_t* counts = NULL
    cdef Py_ssize_t* grown
    cdef Py_ssize_t capacity = 1024, new_words = 0
    if small == NULL:
        raise MemoryError()
    try:
        _table_init(&t, size // 64)
        counts = <Py_ssize_t*>malloc(capacity * sizeof(Py_ssize_t))
        if counts == NULL:
            raise MemoryError()
        at = 0
        while at < size:
            letter = source[at]
            if letter == b"<":  # a tag, to its ">", separates the words either side
                at = <const unsigned char*>memchr(source + at + 1, b">", size - at - 1) - source + 1
                continue
            letter = _SPEC_LETTER[letter]
            if letter == 0:
                at += 1
                continue
            start = at
            h = _FNV_START
            while True:
                small[at] = letter
                h = (h ^ letter) * _FNV_PRIME
                at += 1
                if at >= size:
                    break
                letter = _SPEC_LETTER[source[at]]
                if letter == 0:
                    break
            if at - start >= MIN_LENGTH:
                number = _number(&t, small, start, at - start, _mixed(h))
                if number == capacity:  # a new word past the counts held: twice as many
                    capacity *= 2
                    grown = <Py_ssize_t*>realloc(counts, capacity * sizeof(Py_ssize_t))
                    if grown == NULL:
                        raise MemoryError()
                    counts = grown
                if number == new_words:  # (numbered in order: the next is new)
                    counts[number] = 1
                    new_words += 1
                else:
                    counts[number] += 1
        words = [None] * t.used
        for at in range(t.mask + 1):
            if t.slots[at].number >= 0:
                words[t.slots[at].number] = PyBytes_FromStringAndSize(<char*>small + t.slots[at].offset, t.slots[at].length)
        result = Counter()
        for number in range(t.used):
            PyDict_SetItem(result, words[number], counts[number])
        return result
    finally:
        free(small)
        free(t.slots)
        free(counts)


cdef array.array _NUMBERS = _array.array(UINT32)


def add_counts(dict words not None, Py_ssize_t doc_id, counts not None):
    cdef PyObject* held
    cdef array.array numbers
    cdef Py_ssize_t highest = 0, occurrences
    cdef uint32_t pair[2]
    for word, value in counts.items():
        occurrences = value
        held = PyDict_GetItem(words, word)
        if held == NULL:
            numbers = array.clone(_NUMBERS, 0, False)
            words[word] = numbers
        else:
            value = <object>held
            if type(value) is not array.array:  # (a value not an array: a TypeError, not a crash)
                raise TypeError(f"words hold arrays, not {type(value).__name__}")
            numbers = value
        if not (0 <= doc_id <= 0xFFFFFFFF and 0 <= occurrences <= 0xFFFFFFFF):
            raise OverflowError("unsigned int is greater than maximum")  # (as array("I").append says it)
        pair[0] = <uint32_t>doc_id
        pair[1] = <uint32_t>occurrences
        array.extend_buffer(numbers, <char*>pair, 2)
        if occurrences > highest:
            highest = occurrences
    return highest


def words_and_terms(str text not None, language, limit=None):
    spellings, characters = {}, {}
    distinct, numbers, count = _word_numbers(text, spellings, characters)
    # (a slice's bound, as the Python path's ``found[:limit]``: a negative limit counts from the end)
    kept = count if limit is None or limit > count else limit if limit >= 0 else max(count + limit, 0)
    found = _listed(distinct, numbers, count)
    stems = _analysis.stem(distinct, language)
    terms = found[:kept] if stems is distinct else _listed(stems, numbers, kept)
    return found, terms, spellings, list(characters)


cdef list _listed(list values, array.array numbers, Py_ssize_t count):
    """values[numbers[0]], ... values[numbers[count - 1]]."""
    cdef Py_ssize_t k
    cdef int* at = numbers.data.as_ints
    cdef list result = PyList_New(count)
    cdef object value
    for k in range(count):
        value = values[at[k]]
        Py_INCREF(value)
        PyList_SET_ITEM(result, k, value)
    return result


cdef array.array _INTS = _array.array("i")


cdef tuple _word_numbers(str text, dict spellings, dict characters):
    """(the distinct words of *text* in first-occurrence order, the text's words as their numbers,
    how many): ``analysis.words_spellings_and_characters``'s words, spellings and characters."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t size = PyUnicode_GET_LENGTH(text), at, start, k, j, m, count = 0, total
    cdef Py_UCS4 character
    cdef uint64_t h
    cdef bint ascii_piece, all_ascii = True
    cdef Table t
    cdef list pieces, others
    cdef array.array numbers
    cdef int* first = NULL
    cdef int* lengths = NULL
    cdef int* flat = NULL
    if size >= 1 << 30:  # (numbers are C ints) the Python path's words, numbered
        return _numbered(_analysis.words_spellings_and_characters(text), spellings, characters)
    # The pieces of the text (``analysis._words_of_pieces``): split at whitespace and at every ASCII
    # character that is no letter or digit, the ASCII capitals made small, written to a buffer of
    # 4-byte characters where the table keys them.
    cdef Py_UCS4* pieces_buffer = <Py_UCS4*>malloc((size + 1) * sizeof(Py_UCS4))
    cdef int* piece_numbers = <int*>malloc((size // 2 + 1) * sizeof(int))
    t.slots = NULL
    try:
        if pieces_buffer == NULL or piece_numbers == NULL:
            raise MemoryError()
        _table_init(&t, size // 16)
        at = 0
        while at < size:
            character = PyUnicode_READ(kind, data, at)
            if character < 128:
                if _ASCII_WORD[character] == 0:
                    at += 1
                    continue
            elif Py_UNICODE_ISSPACE(character):
                at += 1
                continue
            start = at
            ascii_piece = True
            h = _FNV_START
            while True:
                if character < 128:
                    character = _ASCII_WORD[character]
                else:
                    ascii_piece = False
                pieces_buffer[at] = character
                h = (h ^ <uint64_t>character) * _FNV_PRIME
                at += 1
                if at >= size:
                    break
                character = PyUnicode_READ(kind, data, at)
                if character < 128:
                    if _ASCII_WORD[character] == 0:
                        break
                elif Py_UNICODE_ISSPACE(character):
                    break
            piece_numbers[count] = <int>_number(&t, <unsigned char*>pieces_buffer, start * 4, (at - start) * 4, _mixed(h))
            count += 1
            all_ascii = all_ascii and ascii_piece
        pieces = [None] * t.used
        for j in range(t.mask + 1):
            if t.slots[j].number >= 0:
                pieces[t.slots[j].number] = PyUnicode_FromKindAndData(
                    4, <char*>pieces_buffer + t.slots[j].offset, t.slots[j].length // 4
                )
        numbers = array.clone(_INTS, count, False)
        if all_ascii:  # each piece a word (most pages' titles; a page of English often holds a dash)
            for k in range(count):
                numbers.data.as_ints[k] = piece_numbers[k]
            return pieces, numbers, count
        others = [piece for piece in pieces if not piece.isascii()]
        if not _analysis.analyzed_apart(text, others):
            return _numbered(_analysis.words_of_normalized(text, spellings, characters), None, None)
        # Each distinct piece's words, in the pieces' order (that of their first occurrences: the
        # words' first occurrences are in the same order), numbered as distinct words.
        first = <int*>malloc((t.used + 1) * sizeof(int))
        lengths = <int*>malloc((t.used + 1) * sizeof(int))
        if first == NULL or lengths == NULL:
            raise MemoryError()
        distinct = {}
        listed = []
        for k in range(t.used):
            piece = pieces[k]
            analyzed = None if piece.isascii() else _analysis.piece_words(piece, spellings, characters)
            first[k] = len(listed)
            if analyzed is None or analyzed == [piece]:
                listed.append(distinct.setdefault(piece, len(distinct)))
                lengths[k] = 1
            else:
                for word in analyzed:
                    listed.append(distinct.setdefault(word, len(distinct)))
                lengths[k] = len(analyzed)
        flat = <int*>malloc((len(listed) + 1) * sizeof(int))
        if flat == NULL:
            raise MemoryError()
        for k in range(len(listed)):
            flat[k] = listed[k]
        total = 0
        for k in range(count):
            total += lengths[piece_numbers[k]]
        numbers = array.clone(_INTS, total, False)
        total = 0
        for k in range(count):
            j = piece_numbers[k]
            for m in range(lengths[j]):
                numbers.data.as_ints[total] = flat[first[j] + m]
                total += 1
        return list(distinct), numbers, total
    finally:
        free(pieces_buffer)
        free(piece_numbers)
        free(t.slots)
        free(first)
        free(lengths)
        free(flat)


cdef tuple _numbered(found, dict spellings, dict characters):
    """Words found by the Python path (a list, or ``words_spellings_and_characters``'s triple, whose
    spellings and characters go to *spellings* and *characters*), numbered as ``_word_numbers`` numbers them."""
    if isinstance(found, tuple):
        found, found_spellings, found_characters = found
        spellings.update(found_spellings)
        characters.update(dict.fromkeys(found_characters))
    distinct = {}
    numbers = array.clone(_INTS, len(found), False)
    for k, word in enumerate(found):
        numbers.data.as_ints[k] = distinct.setdefault(word, len(distinct))
    return list(distinct), numbers, len(found)
