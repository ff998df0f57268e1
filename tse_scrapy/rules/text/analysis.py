"""Text analysis for the search index: text in any script to index terms.

One analyzer for pages and queries, so that both sides meet:

1. **Normalize**: Unicode NFKC (full-width letters, ligatures, compatibility
   forms become plain ones), then case folding (``Straße`` → ``strasse``).
   Symbols that NFKC spells with letters (``™`` → ``TM``, ``№``, ``㎏``,
   ``Ⓐ``) separate words first, as in the text: ``Unix™`` is ``unix``.
2. **Fold accents**: combining marks of Latin, Greek and Cyrillic letters,
   Arabic vowel marks and Hebrew points are dropped, and a few letters that
   are not decomposed by Unicode are spelled plainly (``đ`` → ``d``, ``ø`` →
   ``o``, ``ł`` → ``l``).  Indexing folded forms only is what makes accents
   optional: ``securite`` finds ``sécurité``, and typed with its accents the
   word ranks exactly as high.  Marks that change a letter in Indic, Thai or
   kana text are kept.
3. **Words**: maximal runs of letters, marks and digits in any script
   (``ipv6``, ``python3``, ``404``).  Underscores and punctuation separate.
4. **Segment** Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer and Myanmar
   runs into overlapping bigrams (``日本語`` → ``日本 本語``; a single
   character stays a unigram).  No dictionary: no large data file, no
   compiled ICU, and every substring of two characters is findable, which is
   what known-item search in these scripts needs; a quoted phrase of N
   characters is the N-1 bigrams at consecutive positions.
5. **Stem** by the page's language with a Snowball stemmer (PyStemmer), after
   folding, so that folded and unfolded queries stem alike.

Pure functions, no I/O.  ``tokens`` keeps the offsets of each word in the
original text for highlighting.
"""

from __future__ import annotations

import bisect
import re
import threading
import unicodedata
from array import array
from collections.abc import Collection, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from itertools import accumulate, chain, filterfalse, groupby
from typing import NamedTuple, TypeVar

import Stemmer

from . import unicodetables

# Characters segmented into bigrams: scripts written without spaces between words (and Hangul, whose
# words carry particles).
_BIGRAM_RANGES = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"  # ideographic marks and numbers
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana extensions
    "\u3400-\u4dbf\u4e00-\u9fff"  # Han
    "\ua960-\ua97f\uac00-\ud7ff"  # Hangul
    "\uf900-\ufaff"  # Han compatibility
    "\uff66-\uff9f"  # half-width Katakana (NFKC makes them full-width)
    "\U00020000-\U0003134f"  # Han extensions
)
_BIGRAM_CHAR = re.compile(f"[{_BIGRAM_RANGES}]")


# The combining marks that sit inside words outside the bigram scripts (\w has letters and digits
# but not marks): every mark of the Basic Multilingual Plane, as ranges (189; a class holding
# characters past it is several times slower to match), and the joiners, dropped by ``normalize``.
def _mark_ranges() -> str:
    ranges: list[list[int]] = []
    for code in range(0x300, 0x10000):
        if unicodedata.category(chr(code))[0] == "M":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "".join(chr(first) if first == last else f"{chr(first)}-{chr(last)}" for first, last in ranges)


# The invisible formatting characters a word may hold, which do not cut it (UAX #29 ignores them
# between letters) and ``normalize`` drops: the soft hyphen ("Instal\u00adlation"), the joiners (ZWNJ
# and ZWJ, the word joiner U+2060, the zero-width no-break space U+FEFF that older text uses as one)
# and the marks of direction (LRM, RLM, ALM and the embeddings, overrides and isolates, which
# right-to-left text copied about holds).  In a bigram script's run they still cut the run where
# snippets read it.
DROPPED_IN_WORDS = "\u00ad\u061c\u200c-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff"
_DROPPED_IN_WORDS = re.compile(f"[{DROPPED_IN_WORDS}]")
# (The tables this module works out from ``unicodedata``, written out beforehand: unicodetables.py.)
_TABLES_CURRENT = unicodedata.unidata_version == unicodetables.UNICODE_VERSION
_MARKS = (unicodetables.MARK_RANGES if _TABLES_CURRENT else _mark_ranges()) + DROPPED_IN_WORDS
# The middle dot between two letters is inside a word (UAX #29's MidLetter), dropped too: Catalan's
# "instal\u00b7laci\u00f3" is one word, found typed with or without its dot, not "instal" (the English
# stem of "install") and "laci\u00f3"; so are the hyphenation point and the Greek ano teleia (a middle
# dot in NFKC).  Elsewhere it separates, as any punctuation: "2\u00b710", "Home \u00b7 About".
_INNER_DOTS = "\u00b7\u0387\u2027"
_LETTER = "[^\\W\\d_]"
_INNER_DOT = re.compile(f"[{_INNER_DOTS}](?<={_LETTER}[{_INNER_DOTS}])(?={_LETTER})")  # (the dot first: fast)
# A word: a run of letters, digits and marks ("_" is made a space first: \w holds it), a middle dot
# between two letters inside it.  A run holding a character of a bigram script is cut again into runs
# in those scripts and runs outside them.
_WORD_RUN = re.compile(f"[\\w{_MARKS}]+(?:{_INNER_DOT.pattern}[\\w{_MARKS}]+)*")
_WORD_CHARACTER = re.compile(f"[^\\W_]|[{_MARKS}]")
# The bytes of UTF-8 text with every ASCII character that is no letter or digit a space, and "_" (\w
# holds it; no word does); the bytes of the other characters as they are.  No whitespace character
# is a word character, nor is any character _WORD_RUN does not take in ASCII (tests/test_analysis.py).
_ASCII_NOT_IN_WORDS = bytes(byte if byte >= 0x80 or chr(byte).isalnum() else 0x20 for byte in range(256))
# The same, with the ASCII capitals made small letters (``words``: a text split before it is normalized).
_ASCII_LOWERED_NOT_IN_WORDS = _ASCII_NOT_IN_WORDS.translate(
    bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
)
# A small ASCII letter and the character after it, when that one is not ASCII (see ``_words_of_pieces``).
_LETTER_THEN_OTHER = re.compile(r"[a-z]([^\x00-\x7f])")
# (A middle dot between two characters of a bigram script is inside their run, as inside any word:
# a name written in Chinese, "\u8fbe\u00b7\u82ac\u5947", is the run its index terms come from.)
_SCRIPT_RUN = re.compile(f"([{_BIGRAM_RANGES}]+(?:[{_INNER_DOTS}][{_BIGRAM_RANGES}]+)*)|([^{_BIGRAM_RANGES}]+)")
# The characters that are no word's (neither letter, digit nor mark) but that NFKC spells with letters
# or digits: letterlike symbols (™ → "TM", № → "No", ℃ → "°C"), letters in circles or parentheses
# (Ⓐ, ⒜, 🄐), the squared units (㎏ → "kg").  They are made spaces before NFKC: "Unix™" is the word
# "unix", as a letter run of the text and as snippets read it (``tokens``), not "unixtm".  Those that NFKC
# spells in a bigram script are left to it (a PDF's text often holds Kangxi radicals for the Han
# ideographs they look like).  Listed, not worked out on import (a scan of Unicode: about a second);
# tests/test_analysis.py works them out again.
_SPELT_SYMBOLS = re.compile(
    "[\u20a8\u2100\u2101\u2103\u2105\u2106\u2109\u2116\u2120-\u2122\u213b\u249c-\u24e9\u3250"
    "\u32cc-\u32cf\u3371-\u337a\u3380-\u33df\u33ff\ufdfc\U0001f110-\U0001f12e\U0001f130-\U0001f14f"
    "\U0001f16a-\U0001f16c\U0001f190]"
)

# Marks dropped by folding.
_FOLDED_MARKS = re.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"  # Hebrew points
    "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed\u0640]"  # Arabic
)
_PLAIN_LETTERS = str.maketrans(
    {
        "đ": "d",
        "ð": "d",
        "ø": "o",
        "ł": "l",
        "\u0131": "i",  # dotless i
        "ħ": "h",
        "ŧ": "t",
        "þ": "th",
        "æ": "ae",
        "œ": "oe",
        "ĸ": "k",
        # Arabic script: the hamza-carrying alefs are an alef; Arabic yeh and kaf are the Persian
        # letters (two keyboards, one word).
        "\u0623": "\u0627",  # alef with hamza above -> alef
        "\u0625": "\u0627",  # alef with hamza below
        "\u0622": "\u0627",  # alef with madda
        "\u0671": "\u0627",  # alef wasla
        "\u064a": "\u06cc",  # Arabic yeh -> Persian yeh
        "\u0649": "\u06cc",  # alef maksura
        "\u0643": "\u06a9",  # Arabic kaf -> Persian keheh
    }
)


def _folding_table() -> dict[int, str | None]:
    """Each letter with an accent to its letters without (NFKC text is composed: a character at a time
    is enough), each dropped mark to nothing, and the plain spellings."""
    table: dict[int, str | None] = {}
    for start, end in ((0xC0, 0x250), (0x370, 0x530), (0x1E00, 0x2000)):
        for code in range(start, end):
            decomposed = unicodedata.normalize("NFD", chr(code))
            folded = unicodedata.normalize("NFC", _FOLDED_MARKS.sub("", decomposed))
            if folded != chr(code) and folded:
                table[code] = folded
    for code in range(0x300, 0x10000):
        if _FOLDED_MARKS.match(chr(code)):
            table[code] = None
    table.update(_PLAIN_LETTERS)
    return table


_FOLDED = dict(unicodetables.FOLDED) if _TABLES_CURRENT else _folding_table()


def _character_class(codes: Iterable[int]) -> str:
    """A character-class body matching *codes*, consecutive ones as ranges (short: fast to match)."""
    ranges: list[list[int]] = []
    for code in sorted(codes):
        if ranges and code == ranges[-1][1] + 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(
        re.escape(chr(first)) + ("-" + re.escape(chr(last)) if last > first else "") for first, last in ranges
    )


# The characters folding drops or spells as several (not one character for one).
_NOT_ONE_CHARACTER = re.compile(
    f"[{_character_class(code for code, folded in _FOLDED.items() if folded is None or len(folded) != 1)}"
    f"{DROPPED_IN_WORDS}]|{_INNER_DOT.pattern}"
)
# Only text holding one of these can change when folded (a fast test that skips most of a page).
_FOLDABLE = re.compile(f"[{_character_class(_FOLDED)}]")
# Folded a run of them at a time: ``str.translate`` looks every character up, and most are not foldable.
_FOLDABLE_RUN = re.compile(f"[{_character_class(_FOLDED)}]+")


def _folded_run(found: re.Match[str]) -> str:
    return found.group().translate(_FOLDED)


# Snowball stemmers by ISO 639-1 language code.
# What the analysis gives depends on, besides this code: the Unicode data's version (NFKC, case
# folding, letters) and the Snowball stemmers' (what is worked out once and kept, as snippet heads,
# names them, and is not taken from another).  ANALYSIS_REVISION counts changes of this code that
# change words, folding or stems.
# 2: the symbols NFKC spells with letters separate words (_SPELT_SYMBOLS).
# 3: languages detected by their commonest words as written (accents kept): other stems for the pages
#    now detected otherwise.
# 4: the word joiner, the zero-width no-break space and the marks of direction are dropped inside
#    words as the other joiners are (DROPPED_IN_WORDS), no longer cutting them.
# 5: the middle dot between two letters (Catalan's l\u00b7l) is dropped, no longer cutting its word.
# 6: ... nor, for snippets (the heads kept in the search index), a run of a bigram script.
# 7: a page's declared language read as its ISO 639-1 code (``iw`` and ``heb`` are ``he``: _CODES), and
#    Arabic-script text without one told Persian or Urdu by its yeh, keheh and Urdu's own letters.
ANALYSIS_REVISION = 7
ANALYSIS_VERSION = f"{ANALYSIS_REVISION} unicode {unicodedata.unidata_version} snowball {Stemmer.version()}"

STEMMERS = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "eo": "esperanto",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nb": "norwegian",
    "nn": "norwegian",
    "no": "norwegian",
    "fa": "persian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
_LANGUAGE_TAG = re.compile(r"[a-z]{2,3}")
# Every ISO 639-2 code of a language that has an ISO 639-1 code, to that code: the terminology code
# ("T", ``fra``), then the bibliographic one where it differs ("B", ``fre``).  From the ISO 639-2
# Registration Authority's list (Library of Congress, https://www.loc.gov/standards/iso639-2/), as
# Debian's iso-codes ships it (/usr/share/iso-codes/json/iso_639-2.json, iso-codes 4.15.0).  A three-
# letter code not here has no two-letter one (``haw``, ``yue``) and is kept as it is.
_ISO_639_2 = (
    "aar=aa abk=ab afr=af aka=ak amh=am ara=ar arg=an asm=as ava=av ave=ae aym=ay aze=az bak=ba bam=bm bel=be "
    "ben=bn bih=bh bis=bi bod=bo bos=bs bre=br bul=bg cat=ca ces=cs cha=ch che=ce chu=cu chv=cv cor=kw cos=co "
    "cre=cr cym=cy dan=da deu=de div=dv dzo=dz ell=el eng=en epo=eo est=et eus=eu ewe=ee fao=fo fas=fa fij=fj "
    "fin=fi fra=fr fry=fy ful=ff gla=gd gle=ga glg=gl glv=gv grn=gn guj=gu hat=ht hau=ha heb=he her=hz hin=hi "
    "hmo=ho hrv=hr hun=hu hye=hy ibo=ig ido=io iii=ii iku=iu ile=ie ina=ia ind=id ipk=ik isl=is ita=it jav=jv "
    "jpn=ja kal=kl kan=kn kas=ks kat=ka kau=kr kaz=kk khm=km kik=ki kin=rw kir=ky kom=kv kon=kg kor=ko kua=kj "
    "kur=ku lao=lo lat=la lav=lv lim=li lin=ln lit=lt ltz=lb lub=lu lug=lg mah=mh mal=ml mar=mr mkd=mk mlg=mg "
    "mlt=mt mon=mn mri=mi msa=ms mya=my nau=na nav=nv nbl=nr nde=nd ndo=ng nep=ne nld=nl nno=nn nob=nb nor=no "
    "nya=ny oci=oc oji=oj ori=or orm=om oss=os pan=pa pli=pi pol=pl por=pt pus=ps que=qu roh=rm ron=ro run=rn "
    "rus=ru sag=sg san=sa sin=si slk=sk slv=sl sme=se smo=sm sna=sn snd=sd som=so sot=st spa=es sqi=sq srd=sc "
    "srp=sr ssw=ss sun=su swa=sw swe=sv tah=ty tam=ta tat=tt tel=te tgk=tg tgl=tl tha=th tir=ti ton=to tsn=tn "
    "tso=ts tuk=tk tur=tr twi=tw uig=ug ukr=uk urd=ur uzb=uz ven=ve vie=vi vol=vo wln=wa wol=wo xho=xh yid=yi "
    "yor=yo zha=za zho=zh zul=zu "
    "alb=sq arm=hy baq=eu bur=my chi=zh cze=cs dut=nl fre=fr geo=ka ger=de gre=el ice=is mac=mk mao=mi may=ms "
    "per=fa rum=ro slo=sk tib=bo wel=cy"
)
# The codes withdrawn for others, still in old pages and in Java's locales (before Java 17,
# ``new Locale("he")`` is ``iw``): ISO 639-1's Hebrew, Indonesian, Yiddish (1989), Javanese and
# Moldavian (Romanian), and ISO 639-2's Moldavian and bibliographic Serbian and Croatian (2008).
_WITHDRAWN_CODES = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro", "mol": "ro", "scc": "sr", "scr": "hr"}
# ISO 639-2's codes of no one language: undetermined, multiple, no linguistic content, uncoded.  A page
# saying one is as a page saying none (its language detected).
_NO_LANGUAGE = frozenset({"und", "mul", "zxx", "mis"})
# A language's code as read from a tag, to the one pages and queries are known by.
_CODES = {
    **dict(pair.split("=") for pair in _ISO_639_2.split()),
    **_WITHDRAWN_CODES,
}


class Token(NamedTuple):
    """A word of a text: its index terms and where it is in the text (``[start, end)``).  A named
    tuple: snippets make hundreds a result, and a frozen dataclass is several times slower to make."""

    terms: tuple[str, ...]
    start: int
    end: int


def normalize(text: str) -> str:
    """NFKC, then case folding; the characters that sit inside words but are no letters dropped (the
    joiners, soft hyphens and marks of direction of DROPPED_IN_WORDS, and a middle dot between two
    letters); the symbols NFKC would spell with letters made spaces first (see _SPELT_SYMBOLS)."""
    if text.isascii():
        return text.lower()
    normalized = unicodedata.normalize("NFKC", _SPELT_SYMBOLS.sub(" ", text)).casefold()
    if _DROPPED_IN_WORDS.search(normalized):
        normalized = _DROPPED_IN_WORDS.sub("", normalized)
    return _INNER_DOT.sub("", normalized) if "\u00b7" in normalized or "\u2027" in normalized else normalized


# Romanian's s and t with a comma below, as older keyboards and encodings type them: with a cedilla.
_COMMA_BELOW = str.maketrans("şţ", "șț")


def written(text: str) -> str:
    """*text* ``normalize``d, its accents kept; s and t with a cedilla as with a comma below."""
    return normalize(text).translate(_COMMA_BELOW)


def written_words(text: str) -> frozenset[str]:
    """The words of *text* as written: ``written``'s runs of letters, digits and marks, accents kept
    (``Què`` is not ``Qué``) and bigram scripts not cut (a run is one word)."""
    return frozenset(word_runs_of(written(text)))


def fold(text: str) -> str:
    """Normalized *text* without accents (see the module's docstring)."""
    if text.isascii() or not _FOLDABLE.search(text):
        return text
    return _FOLDABLE_RUN.sub(_folded_run, text)


# A sigma ending a word: a letter (and its marks) before it, no letter or digit after (its marks aside).
_WORD_FINAL_SIGMA = re.compile(f"([^\\W\\d_][{_MARKS}]*)\u03c3(?![{_MARKS}]*[^\\W_])")


def with_final_sigma(text: str) -> str:
    """Normalized *text* as Greek writes it: case folding makes every sigma U+03C3, the one ending a word
    is ς ("εγκατάστασησ" is "εγκατάστασης": how a page wrote a word, shown in a "Did you mean")."""
    if "\u03c3" not in text:
        return text
    return _WORD_FINAL_SIGMA.sub("\\1\u03c2", text)


def words(text: str) -> list[str]:
    """The words of *text*, normalized and folded, bigram scripts segmented (no stemming)."""
    return _words_of(text, None)


def words_spellings_and_characters(text: str) -> tuple[list[str], dict[str, str], list[str]]:
    """``words`` of *text*; how the page spells (normalized, not folded) each folded word that folding
    changed (its first spelling); and the characters of a bigram script its words hold, once each
    (found as its runs are cut into bigrams: a query of one character matches the bigrams it starts,
    and those find the pages holding it where it ends a run, starting none)."""
    spellings: dict[str, str] = {}
    characters: dict[str, None] = {}
    return _words_of(text, spellings, characters), spellings, list(characters)


# A word written with a sharp s is read to this many characters each side of it at most (a longer run is
# no word anyone types, and a page's run of 500,000 letters must not be read once a sharp s).
SHARP_S_REACH = 64
_SHARP_S = re.compile("[\u00df\u1e9e]")


def sharp_s_spellings(text: str) -> dict[str, str]:
    """How *text* spells each folded word it writes with a sharp s (ß, or the capital ẞ), which case
    folding spells "ss": normalized with its ß kept (``Straße`` is ``strasse``, spelled ``straße``),
    the first spelling of a word.  ``words_spellings_and_characters`` gives the folded spelling
    (``strasse``): a "Did you mean" shows a German word as German writes it with this one.  Linear:
    each run holding a sharp s read from it, SHARP_S_REACH characters each side at most."""
    if "\u00df" not in text and "\u1e9e" not in text:  # (most pages: two searches in C)
        return {}
    found: dict[str, str] = {}
    read_to = 0  # the end of the last run read: a sharp s inside it is read already
    for sharp in _SHARP_S.finditer(text):
        at = sharp.start()
        if at < read_to:
            continue
        start, end = at, at + 1
        while start > 0 and at - start < SHARP_S_REACH and _is_word_character(text[start - 1]):
            start -= 1
        while end < len(text) and end - at <= SHARP_S_REACH and _is_word_character(text[end]):
            end += 1
        read_to = end
        longer = (start > 0 and _is_word_character(text[start - 1])) or (
            end < len(text) and _is_word_character(text[end])
        )
        if longer:  # (a run longer than a word)
            continue
        run = text[start:end]
        folded = words(run)
        if len(folded) == 1:  # (a run of a bigram script is cut into several)
            # Case folding and NFKC change a character at a time, none across a ß.
            pieces = run.replace("\u1e9e", "\u00df").split("\u00df")
            found.setdefault(folded[0], "\u00df".join(map(normalize, pieces)))
    return found


def _words_of(text: str, spellings: dict[str, str] | None, characters: dict[str, None] | None = None) -> list[str]:
    """``_words_of_normalized(normalize(text), spellings, characters)``, most often without normalizing
    the whole text: see ``_words_of_pieces``."""
    if text.isascii():
        return _words_of_normalized(text.lower(), spellings)
    encoded = text.encode("utf-8", "surrogatepass").translate(_ASCII_LOWERED_NOT_IN_WORDS)
    return _words_of_pieces(text, encoded.decode("utf-8", "surrogatepass").split(), spellings, characters)


def _words_of_pieces(
    text: str, pieces: list[str], spellings: dict[str, str] | None, characters: dict[str, None] | None
) -> list[str]:
    # NFKC of a whole page costs a third of its analysis: one character that is not NFKC (a no-break
    # space) and the whole text is decomposed and composed again.  Here only the pieces holding a
    # character that is not ASCII are normalized, a distinct one once.  *pieces* are *text* split at
    # whitespace and at every ASCII character that is no letter or digit, its ASCII capitals made
    # small.  That gives the words and spellings of normalizing first (tests/test_analysis.py) when:
    # - NFKC composes nothing across those characters: true of all but "<", "=" and ">" with U+0338
    #   after them ("≮", "≠", "≯"); a text holding U+0338 is normalized whole;
    # - an ASCII capital made small before NFKC is the small letter NFKC and case folding would give:
    #   true unless a mark follows it, which may compose with the small letter and not the capital
    #   ("h" + U+0331 is U+1E96, "H" + U+0331 has no such letter); a text holding an ASCII letter
    #   followed by a character that starts with a mark (``_starts_alone``) is normalized whole.
    distinct = dict.fromkeys(filterfalse(str.isascii, pieces))
    if "\u0338" in text or not all(map(_starts_alone, _LETTER_THEN_OTHER.findall(" ".join(distinct)))):
        return _words_of_normalized(normalize(text), spellings, characters)
    analyzed: dict[str, tuple[str, ...]] = {}
    for piece in distinct:
        found = _words_of_normalized(normalize(piece), spellings, characters)
        if found != [piece]:
            analyzed[piece] = tuple(found)
    if not analyzed:
        return pieces
    return list(chain.from_iterable(map(analyzed.get, pieces, zip(pieces))))


def analyzed_apart(text: str, others: Iterable[str]) -> bool:
    """Whether the words of *text* are those of its pieces analyzed apart (``_words_of_pieces``), *others*
    being its distinct pieces that are not ASCII: else it is normalized whole (``words_of_normalized``)."""
    return "\u0338" not in text and all(map(_starts_alone, _LETTER_THEN_OTHER.findall(" ".join(others))))


def piece_words(piece: str, spellings: dict[str, str] | None, characters: dict[str, None] | None) -> list[str]:
    """The words of a *piece* of a text (``_words_of_pieces``: no whitespace, no ASCII character that is no
    letter or digit, its ASCII capitals small), its spellings and characters recorded as ``_words_of`` does."""
    return _words_of_normalized(normalize(piece), spellings, characters)


def words_of_normalized(text: str, spellings: dict[str, str] | None, characters: dict[str, None] | None) -> list[str]:
    """``_words_of`` of a text normalized whole."""
    return _words_of_normalized(normalize(text), spellings, characters)


@lru_cache(maxsize=4096)
def _starts_alone(character: str) -> bool:
    """Whether NFKD makes *character* start with a character that is no mark: then an ASCII letter
    before it neither composes with it or what follows it nor is reordered with a mark after it (a
    character that composes with an ASCII letter is a mark: tests/test_analysis.py)."""
    first = unicodedata.normalize("NFKD", character)[:1]
    return unicodedata.combining(first) == 0 and unicodedata.category(first)[0] != "M"


def _words_of_normalized(
    text: str, spellings: dict[str, str] | None = None, characters: dict[str, None] | None = None
) -> list[str]:
    # The text split in C at every ASCII character that is no letter or digit ("_" too) and at
    # whitespace: an ASCII piece is a word (most are); a piece holding another character may hold
    # several runs, split at the other characters that are no word's ("«", "—", "。"), and is analyzed
    # once (distinct), then every piece is looked up in C, an ASCII one giving itself (a 1-tuple, made in
    # C).  Four passes in C over the text instead of a pattern: a third of the time.  Folding never
    # moves a run's bounds: it drops marks, which are inside runs, or spells a letter as letters.
    encoded = text.encode("utf-8", "surrogatepass").translate(_ASCII_NOT_IN_WORDS)
    pieces = encoded.decode("utf-8", "surrogatepass").split()
    if text.isascii():
        return pieces
    analyzed: dict[str, tuple[str, ...]] = {}
    for piece in dict.fromkeys(filterfalse(str.isascii, pieces)):
        found = [word for run in _WORD_RUN.findall(piece) for word in _words_of_run(run, spellings, characters)]
        if found != [piece]:
            analyzed[piece] = tuple(found)
    if not analyzed:
        return pieces
    return list(chain.from_iterable(map(analyzed.get, pieces, zip(pieces))))


def _words_of_run(run: str, spellings: dict[str, str] | None, characters: dict[str, None] | None) -> list[str]:
    """The words of a run of word characters: itself (ASCII), folded, its bigrams in a bigram script;
    how the page spelled it recorded in *spellings* when folding changed it (its first spelling), the
    characters of its bigram scripts in *characters*."""
    if run.isascii():
        return [run]
    plain = run.translate(_FOLDED)
    if plain != run and spellings is not None:
        spellings.setdefault(plain, run)  # in the order of the text: the first spelling wins
    if _BIGRAM_CHAR.search(plain):
        found: list[str] = []
        for segmented_run, word in _SCRIPT_RUN.findall(plain):
            found.extend(bigrams(segmented_run) if segmented_run else [word])
            if segmented_run and characters is not None:
                characters.update(dict.fromkeys(segmented_run))
        return found
    return [plain] if plain else []


def words_of_each(texts: list[str]) -> list[list[str]]:
    """``words`` of each of *texts* (short ones: link texts), normalized in one pass."""
    # NFKC and case folding leave NUL as it is: the texts are found again between NULs.
    if not texts:
        return []
    joined = "\x00".join(text.replace("\x00", " ") for text in texts)
    return [_words_of_normalized(piece) for piece in normalize(joined).split("\x00")]


def bigrams(run: str) -> list[str]:
    """The overlapping pairs of characters of *run*; a single character alone."""
    if len(run) < 2:
        return [run]
    return [run[index : index + 2] for index in range(len(run) - 1)]


def aligned_fold(text: str) -> str | None:
    """``fold(normalize(text))`` when it maps each character of *text* to one character (so that
    positions in it are positions in *text*), else None."""
    if text.isascii():
        return text.lower()
    if not unicodedata.is_normalized("NFKC", text):
        return None
    folded = text.casefold()
    if len(folded) != len(text) or _NOT_ONE_CHARACTER.search(folded):
        return None
    return fold(folded)


# Misses (a word found inside a longer one) after which ``word_positions`` reads every word instead.
_POSITION_MISSES = 64


def word_positions(text: str, words: Collection[str]) -> list[tuple[int, str]]:
    """Where each of *words* (runs of letters, digits and marks) stands in *text* as a whole run, as
    ``word_runs_of`` finds them: (start, word), in order.  Found by a search for each; a text that
    holds them mostly inside longer words (``aaaa… a``) is read a word at a time instead, as it then costs less."""
    found = []
    misses = 0
    size = len(text)
    for word in words:
        if not word:  # not a run; and it would be found at the same place again and again
            continue
        at = text.find(word)
        while at != -1:
            end = at + len(word)
            if not _is_word_character(text[at - 1] if at else " ") and not _is_word_character(
                text[end] if end < size else " "
            ):
                found.append((at, word))
            else:
                misses += 1
                if misses > _POSITION_MISSES:
                    return [(start, run) for start, run in word_runs_at(text) if run in words]
            # A whole run cannot start inside a word's characters: the next one is at *end* or past it.
            at = text.find(word, end)
    found.sort()
    return found


def _is_word_character(character: str) -> bool:
    """``_WORD_CHARACTER.match(character)``, most often without the regular expression: \\w less "_"
    is ``str.isalnum`` (re's own definition), and no mark or joiner comes before the soft hyphen."""
    return character.isalnum() or (character >= "\u00ad" and _WORD_CHARACTER.match(character) is not None)


def is_spaced_word_character(character: str) -> bool:
    """Whether *character* is a letter, digit or mark of a script written with spaces between words
    (not one cut into bigrams): text cut between two such characters cuts a word."""
    return _is_word_character(character) and not _BIGRAM_CHAR.match(character)


def has_word_between(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a run of letters, digits or marks ("_" separating)."""
    return _WORD_CHARACTER.search(text, start, end) is not None


def word_runs_of(text: str) -> list[str]:
    """The runs of letters, digits and marks of *text* ("_" separating), as strings."""
    return _WORD_RUN.findall(text.replace("_", " "))


def word_runs_at(text: str) -> list[tuple[int, str]]:
    """``word_runs_of`` *text*, each with where it starts."""
    return [(run.start(), run.group()) for run in _WORD_RUN.finditer(text.replace("_", " "))]


def has_bigram_script(text: str) -> bool:
    """Whether *text* holds a character of a script cut into bigrams."""
    return bool(_BIGRAM_CHAR.search(text))


# The kinds of a bigram script's characters a run typed without spaces is read by (``script_pieces``).
HAN, HIRAGANA, KATAKANA, OTHER_BIGRAM = "han", "hiragana", "katakana", "other"
_HAN = re.compile(
    "[\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3038-\u303c\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"
)
_HIRAGANA = re.compile("[\u3040-\u309f]")
_KATAKANA = re.compile("[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]")


def _script_kind(character: str) -> str:
    if _HAN.match(character):
        return HAN
    if _HIRAGANA.match(character):
        return HIRAGANA
    return KATAKANA if _KATAKANA.match(character) else OTHER_BIGRAM


def script_pieces(run: str) -> list[tuple[str, str]]:
    """*run* (of a bigram script) cut where its script changes, each piece with its kind: HAN (its
    characters are words, or parts of words, of their own), HIRAGANA (Japanese particles and endings),
    KATAKANA (loanwords: a word whole), OTHER_BIGRAM (Hangul, Thai ...).  "ネットワークの設定" is
    ネットワーク, の and 設定; the mark of repetition 々 and the ideographic numbers are Han's."""
    return [(kind, "".join(piece)) for kind, piece in groupby(run, _script_kind)]


def is_segmented(word: str) -> bool:
    """Whether *word* is of a script cut into bigrams."""
    return bool(_BIGRAM_CHAR.match(word))


def may_be_folded(text: str) -> bool:
    """Whether *text* holds a character ``unfolded_pattern`` matches for another (a letter with an
    accent, a full-width form, æ, ß ...): else its words are spelled as their folded forms."""
    return not text.isascii() and _unfolded_characters().search(text) is not None


def unfolded_pattern(folded: str, present: AbstractSet[str] | None = None) -> str:
    """A regular expression matching, in lowercased text, what *folded* (``fold``'s) may be folded
    from, most of it: each letter with or without an accent, or full-width (as NFKC would make it),
    ae as æ, ss as ß, fi as ﬁ ...  Not the marks written apart (decomposed text) nor other
    compatibility characters: for a quick look at a text, not its words.

    *present*: the characters the text to be searched holds that the pattern would match for others
    (``unfolded_characters_in``), when known: the pattern then names only those, and finds the same in
    that text; Python compiles it in a fraction of the time (a class naming a letter beyond Latin-1
    costs its compiler a bitmap of 65,536 characters: about 4 ms for a query's pieces)."""
    singles, pairs = _unfolded_letters()
    pattern = []
    at = 0
    while at < len(folded):
        letter, pair = folded[at], folded[at : at + 2]
        if pair in pairs:
            # (Two letters taken together whether the text holds their ligature or not: "ffi" is ff, i
            # in both patterns, never f, fi.)
            both = f"{_any_of(letter, singles, present)}{_any_of(pair[1], singles, present)}"
            sources = _kept(pairs[pair], present)
            pattern.append(f"(?:{both}|[{re.escape(sources)}])" if sources else both)
            at += 2
        else:
            pattern.append(_any_of(letter, singles, present))
            at += 1
    return "".join(pattern)


def unfolded_characters_in(text: str) -> frozenset[str]:
    """The characters of *text* that ``unfolded_pattern`` matches for others (its *present*)."""
    return frozenset(_unfolded_characters().findall(text)) if not text.isascii() else frozenset()


def unfolded_characters_of(folded: Collection[str]) -> frozenset[str]:
    """The characters ``unfolded_pattern`` may match for others in the words *folded*."""
    singles, pairs = _unfolded_letters()
    letters = set("".join(folded))
    sources = "".join(singles.get(letter, "") for letter in letters)
    sources += "".join(spelled for pair, spelled in pairs.items() if any(pair in word for word in folded))
    return frozenset(sources)


def _kept(sources: str, present: AbstractSet[str] | None) -> str:
    """*sources*, but those not *present* (None: all present)."""
    if present is None or not sources:
        return sources
    return "".join(source for source in sources if source in present)


def _any_of(letter: str, singles: dict[str, str], present: AbstractSet[str] | None = None) -> str:
    """A character class of *letter* and what folds into it (*singles*; those *present* only), or
    *letter* alone."""
    sources = _kept(singles.get(letter, ""), present)
    return f"[{re.escape(letter + sources)}]" if sources else re.escape(letter)


@lru_cache(maxsize=1)
def _unfolded_letters() -> tuple[dict[str, str], dict[str, str]]:
    """What folding spells as one letter (its letters with accents, and full-width forms), and as two
    (æ, ß ...), each by what it spells."""
    singles: dict[str, str] = {}
    pairs: dict[str, str] = {"ss": "ß", "ff": "ﬀ", "fi": "ﬁ", "fl": "ﬂ"}  # (case folding's, NFKC's)
    for code, folded in _FOLDED.items():
        if folded and len(folded) == 1:
            singles[folded] = singles.get(folded, "") + chr(code)
        elif folded and len(folded) == 2:
            pairs[folded] = pairs.get(folded, "") + chr(code)
    for plain in "abcdefghijklmnopqrstuvwxyz0123456789":  # full-width forms, U+FF10-U+FF5A
        singles[plain] = singles.get(plain, "") + chr(ord(plain) + 0xFEE0)
    return singles, pairs


@lru_cache(maxsize=1)
def _unfolded_characters() -> re.Pattern[str]:
    """Every character ``unfolded_pattern`` matches for another."""
    singles, pairs = _unfolded_letters()
    return re.compile(
        f"[{_character_class({ord(c) for sources in (*singles.values(), *pairs.values()) for c in sources})}]"
    )


def is_one_segmented_character(term: str) -> bool:
    """Whether *term* is one character of a script cut into bigrams: a query's prefix of the bigrams
    it starts, found alone where it ends a run."""
    return len(term) == 1 and is_segmented(term)


def language_code(tag: str | None) -> str | None:
    """The ISO 639 code of a language tag (``fr-CA`` → ``fr``), or None: its primary subtag, as
    ISO 639-1 writes it where it has a code of two letters (``iw`` → ``he``, ``eng-US`` → ``en``,
    ``fre`` → ``fr``: _CODES); another one of three letters as it is (``haw``); None for ``und``
    and the other codes of no one language."""
    if not tag:
        return None
    found = _LANGUAGE_TAG.match(tag.strip().lower().replace("_", "-"))
    if found is None or (len(tag.strip()) > found.end() and tag.strip()[found.end()] not in "-_"):
        return None
    if found.group() in _NO_LANGUAGE:
        return None
    return _CODES.get(found.group(), found.group())


def no_language_code(tag: str) -> str | None:
    """The code of *tag* when it is one of ISO 639-2's codes of no one language (``und``, ``mul``,
    ``zxx``, ``mis``), alone or with subtags (``und-Latn``); else None."""
    found = _LANGUAGE_TAG.match(tag.strip().lower().replace("_", "-"))
    if found is None or found.group() not in _NO_LANGUAGE:
        return None
    rest = tag.strip()[found.end() :]
    return found.group() if not rest or rest[0] in "-_" else None


@lru_cache(maxsize=64)
def stemmer(language: str | None) -> Stemmer.Stemmer | None:
    """The Snowball stemmer of *language* (an ISO 639 code), or None when there is none."""
    name = STEMMERS.get(language or "")
    if not name:
        return None
    found = Stemmer.Stemmer(name)
    found.maxCacheSize = 0  # ``stem`` keeps its own memo: PyStemmer's cache would only slow it down
    return found


# Memos of words analyzed before, kept by each process: a language's stems (PyStemmer costs about 1 µs
# a word, a dict lookup a tenth of that, and a page's words are mostly words stemmed before), and the
# terms of the words snippets read.  Bounded: a memo holds MEMO_WORDS words of at most
# MEMO_WORD_CHARACTERS (longer ones are worked out each time), then a new one is started; the memos
# of a kind hold MEMOS_WORDS words together (about 20 MB), the least recently used dropped first.
# A memo is replaced, never cleared: a thread still reading it finds every word it added.
MEMO_WORDS = 10_000
MEMOS_WORDS = 100_000
MEMO_WORD_CHARACTERS = 64
_stem_memos: dict[str, dict[str, str]] = {}
_variant_memos: dict[tuple[str | None, ...], dict[str, tuple[str, ...]]] = {}  # by languages with a stemmer
_memos_lock = threading.Lock()
_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


def _memo(memos: dict[_Key, dict[str, _Value]], key: _Key) -> dict[str, _Value]:
    """The memo of *key* in *memos* (a new one when there is none or it is full), made the last used."""
    with _memos_lock:
        memo = memos.pop(key, None)
        if memo is None or len(memo) >= MEMO_WORDS:
            memo = {}
        memos[key] = memo  # last in the dict's order: the last used
        held = sum(map(len, memos.values()))
        while held > MEMOS_WORDS and len(memos) > 1:
            held -= len(memos.pop(next(iter(memos))))
        return memo


def stemming_languages(languages: Iterable[str | None]) -> tuple[str, ...]:
    """Those of *languages* that have a stemmer, each once, in their order: the ones whose stems a
    word gives besides itself."""
    return tuple(code for code in dict.fromkeys(languages) if code is not None and stemmer(code))


def is_stemmed(language: str | None) -> bool:
    """Whether the words of a page in *language* (None or "" for none said) are stemmed (it has a
    stemmer): else they are indexed as written."""
    return bool(language) and stemmer(language) is not None


# The language whose stems a query word matches on a page whose words are not stemmed (no language
# said, or one without a stemmer): English, that of most words in Latin letters in Japanese, Chinese
# or Korean text ("boot" on a Japanese page answers "booting"; "in" there is no Catalan stem of "init").
UNSTEMMED_AS = "en"


def stems_language(language: str | None) -> str:
    """The language whose stems of a query word a page in *language* holds (see UNSTEMMED_AS)."""
    return language if language and is_stemmed(language) else UNSTEMMED_AS


def stem(terms: list[str], language: str | None) -> list[str]:
    """*terms* stemmed in *language* (as they are where it has no stemmer).  Bigrams and numbers are
    left as they are by every stemmer, as is a word of another script."""
    found = stemmer(language)
    if found is None:
        return terms
    assert language is not None  # a stemmer is a language's
    memo = _memo(_stem_memos, language)
    missing = list(set(terms).difference(memo))
    if not missing:
        return list(map(memo.__getitem__, terms))
    stems = found.stemWords(missing)
    if all(len(word) <= MEMO_WORD_CHARACTERS for word in missing):  # (most calls)
        memo.update(zip(missing, stems, strict=True))
        return list(map(memo.__getitem__, terms))
    fresh = dict(zip(missing, stems, strict=True))
    memo.update((word, stemmed) for word, stemmed in fresh.items() if len(word) <= MEMO_WORD_CHARACTERS)
    return [fresh[term] if term in fresh else memo[term] for term in terms]


def stem_word(word: str, language: str | None) -> str:
    """``stem([word], language)[0]``: a query's word, stemmed in each of an index's languages (its
    caller keeps the stems: a word not in the memo is stemmed, not added)."""
    memo = _stem_memos.get(language or "")
    found = memo.get(word) if memo is not None else None
    if found is not None:
        return found
    stemmer_found = stemmer(language)
    return word if stemmer_found is None else stemmer_found.stemWord(word)


def terms(text: str, language: str | None = None) -> list[str]:
    """The index terms of *text* written in *language*, in order (a term a position)."""
    return stem(words(text), language)


def tokens(text: str, languages: Iterable[str | None] = (None,)) -> Iterator[Token]:
    """Each word of *text* where it stands in it, with the terms it gives unstemmed and stemmed in
    each of *languages*: what highlighting needs.  Lazy: a caller may stop early.

    A run of a bigram script gives a token a bigram (its two characters), or one token for the whole
    run when normalizing changed its length."""
    return (token for token, _ in _tokens(text, tuple(languages), None, frozenset()))


def tokens_giving(
    text: str, languages: Iterable[str | None], wanted: AbstractSet[str], starts: AbstractSet[str] = frozenset()
) -> Iterator[tuple[Token, bool | None]]:
    """The ``tokens`` of *text* that give a term of *wanted*, or start with a character of *starts*,
    each with whether it follows the one before with no other word between: what a snippet marks.
    Lazy; the other words are passed over without a token made (a bigram script has one a character).

    Also a run's last character alone, where it is one of *starts* and each character of the run is a
    bigram's, with None for whether it follows: it starts no bigram, and a page holding it only there
    is found by the characters it holds (``PageFields.characters``); it is a mark of its own, in no
    phrase (the index has no such term), and the words on either side of it follow one another."""
    return _tokens(text, tuple(languages), wanted, starts)


def _tokens(
    text: str, languages: tuple[str | None, ...], wanted: AbstractSet[str] | None, starts: AbstractSet[str]
) -> Iterator[tuple[Token, bool | None]]:
    # A word's terms, worked out once in a process (see MEMO_WORDS): they depend only on the languages
    # that have a stemmer, in their order.
    variants = _memo(_variant_memos, stemming_languages(languages))
    follows = False  # whether the last word was kept
    # The wanted terms a bigram can be, and the characters a kept bigram may start with: in a run of a
    # bigram script, where they stand is found by a search for each, not by reading every bigram.
    pairs = [] if wanted is None else [term for term in wanted if len(term) == 2 and _BIGRAM_CHAR.match(term)]
    starters = [character for character in starts if len(character) == 1 and _BIGRAM_CHAR.match(character)]

    def kept(terms: tuple[str, ...]) -> bool:
        return wanted is None or not wanted.isdisjoint(terms) or (bool(starts) and terms[0][:1] in starts)

    for word_run in _WORD_RUN.finditer(text.replace("_", " ")):
        run = word_run.group()
        if not _BIGRAM_CHAR.search(run):
            found = variants.get(run)
            if found is None:
                found = _variants(words(run), languages)
                if len(run) <= MEMO_WORD_CHARACTERS:
                    variants[run] = found
            if found:
                keep = kept(found)
                if keep:
                    yield Token(found, word_run.start(), word_run.end()), follows
                follows = keep
            continue
        for script_run in _SCRIPT_RUN.finditer(run):
            segmented, piece = script_run.group(1), script_run.group()
            # Normalized text in these scripts (most of it) is its own words: no case, no accents to fold.
            plain = (
                segmented
                and unicodedata.is_normalized("NFKC", piece)
                and piece.casefold() == piece
                and not _INNER_DOT.search(piece)
            )
            if plain and wanted is not None and len(piece) > 1:
                start = word_run.start() + script_run.start()
                last = -1 if follows else -2  # the bigram kept last, -1 standing for a word kept before
                for index in _pairs_at(piece, pairs, starters):  # the bigrams not kept are not made
                    if index == len(piece) - 1:  # the run's last character, a starter (see tokens_giving)
                        yield Token((piece[index],), start + index, start + index + 1), None
                        continue
                    yield Token((piece[index : index + 2],), start + index, start + index + 2), index == last + 1
                    last = index
                follows = last == len(piece) - 2
                continue
            analyzed = bigrams(piece) if plain else words(piece)
            if not analyzed:
                continue
            start = word_run.start() + script_run.start()
            # Normalized, the run may be of another length (half-width katakana with sound marks: ﾃﾞ is
            # デ): each bigram where the characters it was made of stand, when that can be told.
            spans = _normalized_spans(piece, analyzed) if segmented and not plain else None
            normalized = getattr(spans, "text", None)  # (a long run's: its kept bigrams found by a search)
            if normalized is not None and wanted is not None and len(analyzed[-1]) == 2:
                last = -1 if follows else -2  # the bigram kept last, -1 standing for a word kept before
                for index in _pairs_at(normalized, pairs, starters):
                    if index < len(analyzed):  # (not the run's last character: alone, below)
                        yield (
                            Token((analyzed[index],), start + spans[index][0], start + spans[index + 1][1]),
                            (index == last + 1),
                        )
                        last = index
                follows = last == len(analyzed) - 1
                if starts and analyzed[-1][1:] in starts:  # its last character, alone
                    yield Token((analyzed[-1][1:],), start + spans[-1][0], start + spans[-1][1]), None
            elif spans is not None:
                for index, pair in enumerate(analyzed):
                    if wanted is None or pair in wanted or (starts and pair[:1] in starts):
                        end = start + spans[index + len(pair) - 1][1]
                        yield Token((pair,), start + spans[index][0], end), follows
                        follows = True
                    else:
                        follows = False
                if starts and len(analyzed[-1]) == 2 and analyzed[-1][1:] in starts:  # its last character, alone
                    yield Token((analyzed[-1][1:],), start + spans[-1][0], start + spans[-1][1]), None
            elif segmented and len(analyzed) == max(1, len(piece) - 1):
                for index, pair in enumerate(analyzed):  # a token a character: the check inline
                    if wanted is None or pair in wanted or (starts and pair[:1] in starts):
                        yield Token((pair,), start + index, start + index + len(pair)), follows
                        follows = True
                    else:
                        follows = False
                if starts and len(piece) > 1 and analyzed[-1][1:] in starts:  # its last character, alone
                    yield Token((analyzed[-1][1:],), start + len(piece) - 1, start + len(piece)), None
            else:
                found = _variants(analyzed, languages)
                keep = kept(found)
                if keep:
                    yield Token(found, start, start + len(piece)), follows
                follows = keep


# Runs of a bigram script at most this long whose normalizing changed their length are read character
# by character (each prefix normalized again: quadratic).  A longer one is read a character at a time
# where each character normalized alone gives what it gives in the run (``_CharacterSpans``: Thai's
# SARA AM), else cut into pieces about this long where nothing before a cut composes with what
# follows it, each piece's characters placed so when one of them is first asked for
# (``_LongRunSpans``); its bigrams kept found by a search, as a plain run's.  A hostile page of
# 500,000 characters of Thai with a SARA AM every 89, each run holding the bigrams looked for, costs a
# snippet 0.65 s compiled against 0.4-0.5 s when each run was one token.  (It was one token: a Thai
# run past 64 characters holding a SARA AM, which NFKC spells with two, gave a word of several bigrams
# typed no mark, nor the window of its snippet: a reviewer's find.)
SPANNED_RUN = 64
# Conjoining Hangul jamo, which compose with what is before them (a vowel or a final) though they start alone.
_JOINING_JAMO = re.compile("[\u1160-\u11ff\ud7b0-\ud7ff]")


def _normalized_spans(piece: str, analyzed: list[str]) -> Sequence[tuple[int, int]] | None:
    """Where each character of ``fold(normalize(piece))`` comes from in *piece* (``[start, end)``), when
    they are the characters of *analyzed* (the bigrams *piece* gives, or its one character), else
    None: a character composed of several (ﾃﾞ) spans them, and the characters one is spelled as
    (㌀: アパート) each span it."""
    if not analyzed:
        return None
    characters = len(analyzed) + len(analyzed[0]) - 1
    if len(piece) > SPANNED_RUN:
        spans = _CharacterSpans.of(piece) or _LongRunSpans.of(piece)
        return spans if spans is not None and len(spans) == characters else None
    spans = _prefix_spans(piece)
    return spans if spans is not None and len(spans) == characters else None


def _prefix_spans(piece: str) -> list[tuple[int, int]] | None:
    """``_normalized_spans`` of *piece*, its prefixes normalized one after the other (None where a
    longer one is shorter, or the first character is nothing)."""
    spans: list[tuple[int, int]] = []
    made = 0
    for end in range(1, len(piece) + 1):
        if piece[end - 1] in _INNER_DOTS and end < len(piece):  # dropped once a letter follows: no span
            continue
        length = len(fold(normalize(piece[:end])))
        if length < made or (length == made and not spans):
            return None
        if length == made:  # composed with the character before
            spans[-1] = (spans[-1][0], end)
        spans.extend([(end - 1, end)] * (length - made))
        made = length
    return spans


def _cuts_cleanly(piece: str, at: int) -> bool:
    """Whether *piece* normalized is its text before *at* normalized, then its text from *at* normalized
    (``_starts_cleanly``), no dot before *at* dropped for the letter after it."""
    return piece[at - 1] not in _INNER_DOTS and _starts_cleanly(piece[at])


@lru_cache(maxsize=4096)
def _starts_cleanly(character: str) -> bool:
    """Whether *character* starts alone (``_starts_alone``), is no joining jamo nor a dot dropped
    between letters, and is something normalized."""
    return (
        character not in _INNER_DOTS
        and _starts_alone(character)
        and not _JOINING_JAMO.match(character)
        and bool(fold(normalize(character)))
    )


def _split_spans(piece: str) -> list[tuple[int, int]] | None:
    """``_prefix_spans`` of *piece*, a part normalized as it is a character each, else its halves
    worked out apart where it is cut cleanly (``_cuts_cleanly``): a normalizing of the few parts
    around a character normalizing changes, not of each prefix."""
    if fold(normalize(piece)) == piece:
        return [(at, at + 1) for at in range(len(piece))]
    if len(piece) > 8:
        middle = len(piece) // 2
        for offset in range(middle - 1):
            for cut in (middle - offset, middle + offset + 1):
                if 0 < cut < len(piece) and _cuts_cleanly(piece, cut):
                    left, right = _split_spans(piece[:cut]), _split_spans(piece[cut:])
                    if left is None or right is None:
                        return _prefix_spans(piece)
                    return left + [(first + cut, last + cut) for first, last in right]
    return _prefix_spans(piece)


@lru_cache(maxsize=4096)
def _folded_character(character: str) -> str:
    return fold(normalize(character))


class _CharacterSpans(Sequence):
    """``_normalized_spans`` of a run longer than SPANNED_RUN that normalizes a character at a time (a
    Thai SARA AM is two characters wherever it stands, a joiner nothing): each character's span read
    from how many characters those before it make, a character making none joined to the span of the
    last character made before it (as ``_prefix_spans`` joins it)."""

    __slots__ = ("_made", "text")

    def __init__(self, made: array, text: str):
        self._made = made  # what piece[:i] makes, for each i
        self.text = text  # the run normalized

    @classmethod
    def of(cls, piece: str) -> _CharacterSpans | None:
        folded = list(map(_folded_character, piece))
        text = fold(normalize(piece))
        if not folded[0] or "".join(folded) != text:
            return None
        return cls(array("q", accumulate(map(len, folded), initial=0)), text)

    def __len__(self) -> int:
        return self._made[-1]

    def __getitem__(self, index: int) -> tuple[int, int]:  # type: ignore[override]
        made = self._made
        if index < 0:
            index += made[-1]
        if not 0 <= index < made[-1]:
            raise IndexError(index)
        at = bisect.bisect_right(made, index) - 1  # the character making it
        end = at + 1
        if index == made[end] - 1:  # its last: the characters after it making nothing join it
            while end < len(made) - 1 and made[end + 1] == made[end]:
                end += 1
        return at, end


class _LongRunSpans(Sequence):
    """``_normalized_spans`` of a run longer than SPANNED_RUN: its pieces' spans, each worked out
    (``_prefix_spans``) when one of its characters is first asked for; a snippet asks for a few."""

    __slots__ = ("_cuts", "_made", "_piece", "_spans", "text")

    def __init__(self, piece: str, cuts: list[int], made: list[int], text: str):
        self._piece, self._cuts, self._made = piece, cuts, made  # (each piece's start, and its characters')
        self._spans: dict[int, list[tuple[int, int]]] = {}
        self.text = text  # the run normalized

    @classmethod
    def of(cls, piece: str) -> _LongRunSpans | None:
        cuts, made, texts = [0], [0], []
        while cuts[-1] < len(piece):
            start = cuts[-1]
            cut = start + SPANNED_RUN
            if cut < len(piece):
                while cut > start + 1 and not _cuts_cleanly(piece, cut):
                    cut -= 1
                if cut == start + 1 and not _cuts_cleanly(piece, cut):
                    return None  # (a run of marks: one token)
            else:
                cut = len(piece)
            texts.append(fold(normalize(piece[start:cut])))
            made.append(made[-1] + len(texts[-1]))
            cuts.append(cut)
        return cls(piece, cuts, made, "".join(texts))

    def __len__(self) -> int:
        return self._made[-1]

    def __getitem__(self, index: int) -> tuple[int, int]:  # type: ignore[override]
        if index < 0:
            index += self._made[-1]
        if not 0 <= index < self._made[-1]:
            raise IndexError(index)
        chunk = bisect.bisect_right(self._made, index) - 1
        spans = self._spans.get(chunk)
        if spans is None:
            start, end = self._cuts[chunk], self._cuts[chunk + 1]
            found = _split_spans(self._piece[start:end])
            size = self._made[chunk + 1] - self._made[chunk]
            if found is None or len(found) != size:  # (not placed: each of its characters spans it)
                spans = [(start, end)] * size
            else:
                spans = [(first + start, last + start) for first, last in found]
            self._spans[chunk] = spans
        return spans[index - self._made[chunk]]


def _pairs_at(piece: str, pairs: list[str], starters: list[str]) -> list[int]:
    """Where the bigrams of *piece* (a run of a bigram script, of 2 characters or more) that are one
    of *pairs* or start with one of *starters* stand (a bigram's index is its first character's), and
    its last character when it is one of *starters* (a page holding it only there is found by the
    characters it holds: ``PageFields.characters``), in order."""
    found = set()
    for pair in pairs:
        at = piece.find(pair)
        while at != -1:
            found.add(at)
            at = piece.find(pair, at + 1)  # bigrams overlap
    for character in starters:
        at = piece.find(character)
        while at != -1:
            found.add(at)
            at = piece.find(character, at + 1)
    return sorted(found)


def _variants(analyzed: list[str], languages: tuple[str | None, ...]) -> tuple[str, ...]:
    """The terms words *analyzed* give, unstemmed and stemmed in each of *languages*."""
    found = dict.fromkeys(analyzed)
    for language in languages:
        found.update(dict.fromkeys(stem(analyzed, language)))
    return tuple(found)


# Language detection, for pages that do not say theirs: the script, then (Latin) common words.
_KANA = re.compile("[\u3040-\u30ff]")
_SCRIPT_LANGUAGES = (
    (re.compile("[\u0370-\u03ff\u1f00-\u1fff]"), "el"),
    (re.compile("[\u0600-\u06ff]"), None),  # Arabic script: Arabic, Persian or Urdu, below
    (re.compile("[\u0590-\u05ff]"), "he"),
    (re.compile("[\u0900-\u097f]"), "hi"),
    (re.compile("[\u0b80-\u0bff]"), "ta"),
    (re.compile("[\u0530-\u058f]"), "hy"),
    (_KANA, "ja"),
    (re.compile("[\uac00-\ud7af]"), "ko"),
    (re.compile("[\u4e00-\u9fff]"), None),  # Han: Chinese, or Japanese with some kana, below
    (re.compile("[\u0e00-\u0e7f]"), "th"),
    (re.compile("[\u0400-\u04ff]"), None),  # Cyrillic: below
)
# Letters only Vietnamese writes among the Latin-script languages (ơ ư đ and the vowels with a tone
# mark below or a hook, the Latin Extended Additional block; not ă, a twentieth of Romanian's letters):
# a table of contents of section titles holds few of its common words.
_VIETNAMESE_LETTERS = re.compile("[đơưĐƠƯ\u1ea0-\u1ef9]")
# The Arabic script's languages told apart by their letters.  Persian and Urdu write yeh and keheh
# (ی ک, U+06CC U+06A9) in nearly every sentence, where Arabic writes yeh, kaf and alef maksura (ي ك ى,
# U+064A U+0643 U+0649); and پ چ ژ گ, which Arabic has not, but a sentence often holds none: of the
# 890 messages of 20 characters of the script or more in this machine's Persian catalogs
# (/usr/share/locale/fa, iso-codes' left out), 272 have none of them, taken for Arabic when these
# alone told Persian, and 10 (none of ی ک either) still are; none of the 1,723 Arabic ones is taken
# for another language.  Urdu has letters of its own besides (ٹ ڈ ڑ ں ے ۓ, and the hehs U+06C1 and
# U+06BE, this one for any h in older text), an eighth of the script's characters in the Universal
# Declaration's preamble: Urdu when they are a fiftieth, and more than Arabic's letters (a word
# quoted is not the text).  Persian typed on an Arabic keyboard (ي ك for ی ک) is told by پ چ ژ گ
# alone, a quarter as many as ي ك ى there: Persian when more than a tenth.
_URDU_LETTERS = re.compile("[ٹڈڑںےۓ\u06c1\u06be]")
_PERSIAN_YEH_KEHEH = re.compile("[یک]")
_PERSIAN_LETTERS = re.compile("[پچژگ]")
_ARABIC_LETTERS = re.compile("[يكى]")
_UKRAINIAN_LETTERS = re.compile("[іїєґ]")
_SERBIAN_LETTERS = re.compile("[ђјљњћџ]")
# The commonest words of each language, accents as written (with accents folded, Catalan "és" is
# Spanish "es" and Catalan pages were taken for Spanish).  A word common in several languages counts
# for each (they cancel out: the words of one alone decide); the lists of languages that share many
# words (Romance, West Slavic) are about as long, so that none wins by its list's length, and the
# English one short, as manuals translated in part hold English paragraphs.  On the known-item
# bench's pages (bench/RESULTS.md), with the script rules above, 82 of 2,256 wrongly detected, against 211
# with the accent-folded lists of distinctive words before (Catalan 24 of 84 right -> 83).
_COMMON_WORDS = {
    "en": "the and of to is that for with are this on be by was which from",
    "fr": "de la le et les des à en un une du est que il pour qui dans ce pas sur au ne se par plus avec sont"
    " vous être ou",
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden"
    " aus er hat dass sie",
    "es": "de la que el en y a los se del las un por con no una su para es al lo como más pero sus le ya o este"
    " porque esta entre cuando muy sin sobre también hay",
    "it": "di e il la che in a per un è del non i le si una sono da con al della gli alla questo anche nel"
    " delle dei può come più ma lo",
    "pt": "de a o que e do da em um para é com não uma os no se na por mais as dos como mas ao das seu sua ou"
    " quando muito já também pelo pela você pode são está",
    "nl": "de het een van en in is dat op te met voor niet zijn die wordt kunnen deze aan er als ook",
    "sv": "och att det som är av för med till inte har",
    "da": "og at det som er af for med til ikke har",
    "nb": "og det som er av for med til ikke har",
    "fi": "ja on ei se että oli ovat tai kun mutta myös joka",
    "id": "yang dan di ini itu dengan untuk dari dalam tidak adalah",
    "ca": "de la i el que a en les per un del els es una amb no al com seu o més però ha és són aquest aquesta"
    " també pel perquè seva si quan ja",
    "ro": "de și şi în a la cu care pe nu din o un este pentru să se sunt mai sau acest această poate fi ca",
    "cs": "a se na je v že to s z do o k jsou pro ve by jako si ale po od které který není také nebo při lze"
    " můžete když jen tak co ze",
    "pl": "i w się na nie z że do to jest jak a o są oraz lub przez dla który może po od co tak ale",
    "hu": "a az és hogy nem is egy meg van ez vagy csak kell lehet ha de el ki",
    "tr": "ve bir bu da için ile olan gibi daha çok",
    "vi": "và của là có các được cho không những trong một người bạn này để với thể khi sẽ hoặc nếu đã",
}
_COMMON = {
    language: frozenset(unicodedata.normalize("NFC", listed).casefold().split())
    for language, listed in _COMMON_WORDS.items()
}
_DETECTED_WORD = re.compile(r"[^\W_]+")
_HAS_DIGIT = re.compile(r"\d")


def _arabic_script_language(sample: str, in_script: int) -> str:
    """Urdu, Persian or Arabic: the language of *sample*, *in_script* of whose characters are the
    Arabic script's, by the letters only some of them write."""
    arabic = len(_ARABIC_LETTERS.findall(sample))
    urdu = len(_URDU_LETTERS.findall(sample))
    if urdu > arabic and urdu * 50 >= in_script:
        return "ur"
    if len(_PERSIAN_YEH_KEHEH.findall(sample)) > arabic or len(_PERSIAN_LETTERS.findall(sample)) * 10 > arabic:
        return "fa"
    return "ar"


# The languages this module knows: those it stems, those it detects by their common words or their script.
KNOWN_LANGUAGES = frozenset(
    [
        *STEMMERS,
        *_COMMON,
        *(language for _, language in _SCRIPT_LANGUAGES if language),
        "zh",
        "ru",
        "uk",
        "sr",
        "ar",
        "fa",
        "ur",
    ]
)


def detect_language(text: str) -> str | None:
    """A guess of the language of *text* (an ISO 639 code), or None; from its first 2,000 characters."""
    # In NFC: a decomposed text's letters are those of its script (Hangul syllables, not jamo) and its
    # words are the listed ones.
    sample = unicodedata.normalize("NFC", text[:2000])
    letters = sum(1 for character in sample if character.isalpha())
    if not letters:
        return None
    for pattern, language in _SCRIPT_LANGUAGES:
        in_script = len(pattern.findall(sample))
        if in_script * 4 < letters:
            continue
        if language is not None:
            return language
        if pattern.pattern.startswith("[\u0600"):
            return _arabic_script_language(sample, in_script)
        if pattern.pattern.startswith("[\u4e00"):
            # Kana are Japanese only: a twentieth of the letters (a title and a sentence of kanji hold few).
            return "ja" if len(_KANA.findall(sample)) * 20 >= letters else "zh"
        if _UKRAINIAN_LETTERS.search(sample):
            return "uk"
        return "sr" if _SERBIAN_LETTERS.search(sample) else "ru"
    if len(_VIETNAMESE_LETTERS.findall(sample)) * 10 >= letters:
        return "vi"
    # Words as written, case folded; a capital letter alone is a label ("E.1. About"), not the word
    # it spells in lower case (Portuguese "e", Czech "a"), and a word with digits is a name or a
    # number ("v2.28.1", "i386"), whose letters are not the Czech "v" or the Catalan "i".
    counted = [
        word.casefold()
        for word in _DETECTED_WORD.findall(sample)
        if (len(word) > 1 or word.islower()) and not _HAS_DIGIT.search(word)
    ]
    best, best_count = None, 2  # at least three common words
    for language, common in _COMMON.items():
        count = sum(1 for word in counted if word in common)
        if count > best_count:
            best, best_count = language, count
    return best
