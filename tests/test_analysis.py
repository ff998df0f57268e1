"""The search index's analyzer (rules/text/analysis.py): a table of real text in every script, and properties."""

# ruff: noqa: RUF001 (real text in every script: letters that look like Latin ones are the point)

import itertools
import json
import re
import unicodedata
from pathlib import Path

import pytest
import Stemmer
from hypothesis import example, given
from hypothesis import strategies as st

from tse_scrapy.devtools import unicodetables as generator
from tse_scrapy.rules.text import analysis, unicodetables

# (text, language, the index terms a person would expect), from real pages: the Debian installation
# guide in each language (installation-guide-amd64), Python's docs, and gettext catalogs (Arabic, Persian).
TERMS = [
    ("What's New In Python 3.4", "en", ["what", "s", "new", "in", "python", "3", "4"]),
    ("Installing the books", "en", ["instal", "the", "book"]),
    ("ipv6 python3 404 snake_case", None, ["ipv6", "python3", "404", "snake", "case"]),
    ("Sécurité de l'installation", "fr", ["securit", "de", "l", "install"]),
    ("Straße", None, ["strasse"]),
    ("Ｐｙｔｈｏｎ ﬁle", None, ["python", "file"]),  # full-width letters and a ligature (NFKC)
    ("Руководство по установке", "ru", ["руководств", "по", "установк"]),
    ("Ёлка", None, ["елка"]),
    ("Οδηγός εγκατάστασης", "el", ["οδηγ", "εγκαταστασ"]),
    ("دليل التثبيت", None, ["دلیل", "التثبیت"]),  # Arabic yeh spelt as the Persian one: one keyboard's word
    ("الْعَرَبِيَّة", None, ["العربیة"]),  # vowel marks dropped
    ("کتاب‌ها", "fa", ["کتاب"]),  # "the books": the joiner inside the word kept it one word, stemmed
    ("Soft\u00adware", None, ["software"]),
    # The invisible characters text copied about holds inside words: a word joiner (a CMS's "e-mail"
    # kept on one line), a zero-width no-break space, a right-to-left mark in Arabic; a zero-width
    # space still separates (Thai and Khmer text marks word bounds with it).
    ("Word\u2060press", None, ["wordpress"]),
    ("Java\ufeffScript", None, ["javascript"]),
    ("العربية\u200f الفصحى", None, ["العربیة", "الفصحی"]),
    ("کتاب\u200fها", "fa", ["کتاب"]),
    ("Un\u200bicode", None, ["un", "icode"]),
    # Catalan's "l·l" is inside its word (the installation guide's title in Catalan), as typed with
    # or without the dot; a middle dot between spaced words, as a menu's separator, is no word.
    ("Guia d'instal·lació de Debian", "ca", ["guia", "d", "installac", "de", "deb"]),
    ("paral·lels col·lecció", "ca", ["parall", "collecc"]),
    ("Inici · Documentació", None, ["inici", "documentacio"]),
    # Between two letters only (UAX #29's MidLetter): between digits it separates, as the Greek ano
    # teleia (a middle dot in NFKC) does where a space follows it.
    ("1 kW·h = 3,6·10 MJ", None, ["1", "kwh", "3", "6", "10", "mj"]),
    ("λόγος\u0387 άλλος", None, ["λογοσ", "αλλοσ"]),
    ("列奥纳多·达·芬奇", "zh", ["列奥", "奥纳", "纳多", "多达", "达芬", "芬奇"]),
    ("Tiếng Việt đây", "vi", ["tieng", "viet", "day"]),
    ("日本語のテキスト", "ja", ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]),
    ("安装", "zh", ["安装"]),
    ("书", "zh", ["书"]),
    ("데비안 설치 안내서", "ko", ["데비", "비안", "설치", "안내", "내서"]),
    ("ภาษาไทย", "th", ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]),
    ("Debian 12 日本語版", "ja", ["debian", "12", "日本", "本語", "語版"]),
    ("!!! ... ---", None, []),
]


@pytest.mark.parametrize("text, language, expected", TERMS)
def test_terms_of_real_text(text, language, expected):
    assert analysis.terms(text, language) == expected


@pytest.mark.parametrize(
    "typed, written",
    [
        ("securite", "Sécurité"),
        ("eleve", "ÉLÈVE"),
        ("tieng viet", "Tiếng Việt"),
        ("Orsted", "Ørsted"),
        ("oeuvre", "Œuvre"),
    ],
)
def test_accents_are_optional(typed, written):
    assert analysis.words(typed) == analysis.words(written)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The quick brown fox jumps over the lazy dog and the cat is in the house", "en"),
        ("Le chat est dans la maison et le chien est sur la table pour les enfants", "fr"),
        ("Der Hund ist nicht in dem Haus, und die Katze ist auf dem Tisch mit den Kindern", "de"),
        ("Это руководство описывает установку системы", "ru"),
        ("Το εγχειρίδιο περιγράφει την εγκατάσταση", "el"),
        ("این راهنما نصب گنو/لینوکس را شرح می‌دهد", "fa"),
        ("هذا الدليل يشرح التثبيت", "ar"),
        ("このマニュアルはインストールについて説明します", "ja"),
        ("본 문서는 설치 방법을 설명합니다", "ko"),
        ("本手册介绍安装方法", "zh"),
        ("Đây là một cuốn sách của người Việt và những người khác", "vi"),
        ("12 34 56", None),
        # The Debian installation guide's pages, which do not say their language: with accents folded
        # these were taken for none, Spanish, none, Czech, none and Italian.
        (
            "Ens alegrem que us hàgiu decidit a provar Debian i estem segurs que trobareu que la distribució"
            " Debian de GNU/Linux és única.",
            "ca",
        ),
        (
            "Aquest document es revisa constantment. Per trobar la informació d'última hora sobre el llançament"
            " 12 del sistema Debian GNU/Linux assegureu-vos de comprovar les pàgines",
            "ca",
        ),
        (
            "O Debian Installer, também conhecido como “ d-i ” , é o sistema de software para instalar um sistema"
            " Debian básico e funcional.",
            "pt",
        ),
        (
            "Este documento está constantemente a ser revisto. Assegure-se de que verifica as páginas de Debian"
            " 12 para verificar a existência de informação de última hora acerca do lançamento",
            "pt",
        ),
        (
            "GNU/Linux je operační systém, což je skupina programů, které vám mimo jiné umožňují komunikovat s"
            " počítačem a spouštět další programy.",
            "cs",
        ),
        (
            "Tiết đoạn này sẽ giúp đỡ bạn quyết định những kiểu vật chứa nào bạn có thể sử dụng để cài đặt hệ"
            " thống Debian.",
            "vi",
        ),
        (
            "Appendix E. Administrivia Table of Contents E.1. About This Document E.2. Contributing to This"
            " Document E.3. Major Contributions E.4. Trademark Acknowledgement",
            "en",
        ),
        # The Japanese guide's E.4 (a title and a sentence, kanji and a quarter short of kana): not Chinese.
        (
            "E.4. 商標表示 付録E 付記 E.4. 商標表示 すべての商標には、それぞれに所有者がいます。 E.3. 多大な貢献"
            " 付録F GNU General Public License",
            "ja",
        ),
        # The Vietnamese guide's chapter 5 contents: section titles, few common words, some English.
        (
            "Chương 5. Khởi động Hệ thống Cài đặt Mục lục 5.1. Khởi động trình cài đặt trên 64-bit PC 5.1.1. Khởi"
            " động từ thanh bộ nhớ USB 5.1.2. Booting from optical disc (CD/DVD) 5.1.3. Booting from Linux using"
            " GRUB 5.1.4. Khởi động bằng TFTP",
            "vi",
        ),
        # git's release notes (/usr/share/doc/git/RelNotes/2.28.1.txt): "v2" is a version, not Czech "v".
        (
            "Git v2.28.1 Release Notes ========================= This release merges up the fixes that appear in"
            " v2.17.6, v2.18.5, v2.19.6, v2.20.5, v2.21.4, v2.22.5, v2.23.4, v2.24.4, v2.25.5, v2.26.3 and v2.27.1"
            " to address the security issue CVE-2021-21300; see the release notes for these versions for details.",
            "en",
        ),
        # The Arabic script's languages.  Article 1 of the Universal Declaration of Human Rights, as the
        # Unicode Consortium's "UDHR in Unicode" gives it in Persian (pes), Arabic (arb) and Urdu (urd).
        # The first Persian sentence has none of پ چ ژ گ (it was taken for Arabic): its yeh is ی, not ي.
        ("تمام افراد بشر آزاد بدنیا میایند و از لحاظ حیثیت و حقوق با هم برابرند.", "fa"),
        (
            "يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميرًا وعليهم أن يعامل بعضهم بعضًا"
            " بروح الإخاء.",
            "ar",
        ),
        # Urdu's پ and چ were taken for Persian; its ے and ں, and its heh U+06C1, are its own.
        (
            "تمام انسان آزاد اور حقوق و عزت کے اعتبار سے برابر پیدا ہوئے ہیں۔ انہیں ضمیر اور عقل ودیعت ہوئی ہے۔ اس"
            " لیے انہیں ایک دوسرے کے ساتھ بھائی چارے کا سلوک کرنا چاہیے۔",
            "ur",
        ),
        # Sentences of glib's and GTK 2's Persian catalogs (libglib2.0-data, libgtk2.0-common): none of
        # پ چ ژ گ either, ی and ک in nearly every word.
        ("شناسه‌های کاربری باید برای نمونه و کارساز یکی باشد", "fa"),
        ("حافظه برای بار کردن تصویر کافی نیست، برای آزاد کردن حافظه خروج از بعضی برنامه‌ها را امتحان کنید", "fa"),
        # Arabic naming the Persian language in Persian: one ی among Arabic's ي is a word quoted.
        ("يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق (فارسی).", "ar"),
    ],
)
def test_language_detection(text, expected):
    assert analysis.detect_language(text) == expected
    # Accents as written, in either Unicode form (Vietnamese is often written decomposed).
    assert analysis.detect_language(unicodedata.normalize("NFD", text)) == expected


@given(
    st.lists(
        st.sampled_from(sorted({word for listed in analysis._COMMON_WORDS.values() for word in listed.split()})),
        max_size=150,
    )
)
def test_detection_reads_accents_in_either_unicode_form(common_words):
    text = " ".join(common_words)
    assert analysis.detect_language(unicodedata.normalize("NFD", text)) == analysis.detect_language(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1.3. Què és Debian GNU/Linux?", {"1", "3", "què", "és", "debian", "gnu", "linux"}),
        ("A.1. Preliminaries", {"a", "1", "preliminaries"}),
        ("Ｐｙｔｈｏｎ ３.４ ﬁle_name", {"python", "3", "4", "file", "name"}),  # NFKC; "_" separates
        ("Straße", {"strasse"}),  # case folded
        ("Κεφάλαιο 2. Απαιτήσεις", {"κεφάλαιο", "2", "απαιτήσεισ"}),  # accents kept; final sigma folded
        ("Tiết đoạn này", {"tiết", "đoạn", "này"}),
        ("第2章 システム要件", {"第2章", "システム要件"}),  # runs not cut into bigrams
        ("الفصل 2. متطلبات", {"الفصل", "2", "متطلبات"}),
        ("Unix™", {"unix"}),
        ("!!", set()),
    ],
)
def test_written_words(text, expected):
    assert analysis.written_words(text) == expected


@given(st.text(max_size=100))
def test_written_words_are_the_same_in_either_unicode_form(text):
    assert analysis.written_words(unicodedata.normalize("NFD", text)) == analysis.written_words(text)


@pytest.mark.parametrize(
    "tag, code",
    [
        ("fr", "fr"),
        ("fr-CA", "fr"),
        ("zh_CN", "zh"),
        ("EN-us", "en"),
        ("", None),
        ("x", None),
        ("1234", None),
        # The ISO 639-1 codes withdrawn for others (old pages, Java's locales): the new code.
        ("iw", "he"),
        ("iw-IL", "he"),
        ("in", "id"),
        ("in_ID", "id"),
        ("ji", "yi"),
        ("jw", "jv"),
        ("mo", "ro"),
        # ISO 639-2 codes, terminology (T) and bibliographic (B): the ISO 639-1 code, a region after it
        # read as after a code of two letters.
        ("eng", "en"),
        ("ENG-us", "en"),
        ("fra", "fr"),
        ("fre", "fr"),
        ("fre_CA", "fr"),
        ("deu", "de"),
        ("ger", "de"),
        ("zho", "zh"),
        ("chi", "zh"),
        ("fas", "fa"),
        ("per", "fa"),
        ("heb", "he"),
        ("ara", "ar"),
        ("urd", "ur"),
        ("jpn", "ja"),
        ("kor", "ko"),
        ("ell", "el"),
        ("gre", "el"),
        ("srp", "sr"),
        ("nob", "nb"),
        ("nor", "no"),
        # A code of three letters with none of two: kept (Hawaiian, Cantonese).
        ("haw", "haw"),
        ("yue-HK", "yue"),
        # No one language: undetermined, multiple, none, uncoded (as if none were said: detected).
        ("und", None),
        ("mul", None),
        ("zxx", None),
        ("mis", None),
        # Still no tag.
        ("engl", None),
        ("eng1", None),
        ("e-ng", None),
    ],
)
def test_language_codes(tag, code):
    assert analysis.language_code(tag) == code


@pytest.mark.parametrize(
    ("tag", "code"),
    [
        ("und", "und"),
        ("UND", "und"),
        ("und-Latn", "und"),
        ("mul_Arab", "mul"),
        (" zxx ", "zxx"),
        ("mis", "mis"),
        ("undx", None),  # no tag
        ("fr", None),  # a language
        ("en-und", None),  # English, a subtag after it
        ("", None),
    ],
)
def test_no_language_codes(tag, code):
    assert analysis.no_language_code(tag) == code


@given(st.text(alphabet=st.sampled_from("undmlzxisfrUND-_ "), max_size=8))
def test_a_tag_names_a_language_or_no_one_language_never_both(tag):
    assert analysis.language_code(tag) is None or analysis.no_language_code(tag) is None
    if analysis.no_language_code(tag) is not None:
        assert analysis.language_code(tag) is None


@pytest.mark.parametrize(
    ("folded", "written"),
    [
        # Case folding makes every sigma U+03C3; Greek writes the one ending a word U+03C2.
        ("εγκατάστασησ", "εγκατάστασης"),
        ("σασ ενθαρρύνουμε", "σας ενθαρρύνουμε"),
        ("πακέτα τησ επίσημησ διανομήσ.", "πακέτα της επίσημης διανομής."),
        ("σύστημα", "σύστημα"),  # inside a word: U+03C3
        ("σ", "σ"),  # a letter alone
        ("αβσ1", "αβσ1"),  # a digit after it: inside the word (a letter and digit run)
        ("debian", "debian"),
    ],
)
def test_with_final_sigma(folded, written):
    assert analysis.with_final_sigma(folded) == written


@given(st.text(alphabet=st.sampled_from("σςαά \u0301.1x"), max_size=30))
def test_with_final_sigma_changes_only_a_sigma(text):
    written = analysis.with_final_sigma(text)
    assert analysis.with_final_sigma(written) == written
    assert all(a == b or (a, b) == ("\u03c3", "\u03c2") for a, b in zip(text, written, strict=True))


@given(st.text(alphabet=st.sampled_from("σαά \u0301x"), max_size=30))
def test_with_final_sigma_writes_it_as_lowercasing_does(text):
    # Python's lower() writes a capital sigma ending a word ς (Unicode's Final_Sigma context; a digit
    # after it, or a "." before it, left out: words of ours differ there from lower()'s).
    assert analysis.with_final_sigma(text) == text.upper().lower()


# The languages the analysis knows something of: a stemmer, common words, a script.
KNOWN_LANGUAGES = (
    set(analysis.STEMMERS)
    | set(analysis._COMMON_WORDS)
    | {"el", "ar", "fa", "ur", "he", "hi", "ta", "hy", "ja", "ko", "zh", "th", "uk", "sr", "ru", "vi"}
)


@pytest.mark.parametrize("code", sorted(KNOWN_LANGUAGES))
def test_every_known_language_is_read_from_its_code_of_two_or_three_letters(code):
    assert analysis.language_code(code) == code
    assert code in {analysis.language_code(three) for three in analysis._CODES if len(three) == 3}


ISO_639_2 = Path("/usr/share/iso-codes/json/iso_639-2.json")  # Debian's iso-codes


@pytest.mark.skipif(not ISO_639_2.is_file(), reason="needs Debian's iso-codes")
def test_the_three_letter_codes_are_iso_639_2s_own():
    languages = json.loads(ISO_639_2.read_text(encoding="utf-8"))["639-2"]
    expected = {}
    for language in languages:
        for three in (language["alpha_3"], language.get("bibliographic")):
            if three and len(three) == 3:
                expected[three] = language.get("alpha_2", three)
    # (Those of no one language, "Undetermined languages" and the like, are no language: see test_language_codes.)
    expected.update(dict.fromkeys(("und", "mul", "zxx", "mis")))
    assert {three: analysis.language_code(three) for three in expected} == expected


def test_tokens_keep_offsets_in_the_text_as_written():
    text = "Le 日本語 Sécurité"
    found = list(analysis.tokens(text, ["fr"]))
    assert [text[token.start : token.end] for token in found] == ["Le", "日本", "本語", "Sécurité"]
    assert found[-1].terms == ("securite", "securit")  # unstemmed and stemmed, accents folded


# Half-width katakana, whose sound marks NFKC composes with the letter before (ﾃﾞ is デ): each bigram
# where the characters it is made of stand, so that a word of several bigrams is marked whole.
@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("ﾃﾞﾋﾞｱﾝ", [("デビ", "ﾃﾞﾋﾞ"), ("ビア", "ﾋﾞｱ"), ("アン", "ｱﾝ")]),
        ("の ｶﾞｲﾄﾞ", [("の", "の"), ("ガイ", "ｶﾞｲ"), ("イド", "ｲﾄﾞ")]),
        ("xﾃﾞ", [("x", "x"), ("デ", "ﾃﾞ")]),
        ("ｲﾝｽﾄｰﾙ", [("イン", "ｲﾝ"), ("ンス", "ﾝｽ"), ("スト", "ｽﾄ"), ("トー", "ﾄｰ"), ("ール", "ｰﾙ")]),
    ],
)
def test_tokens_of_half_width_katakana_stand_where_their_characters_do(text, pieces):
    found = [(token.terms[0], text[token.start : token.end]) for token in analysis.tokens(text, [None])]
    assert found == pieces


@given(st.text(alphabet=st.sampled_from("ﾃﾞﾋﾞｱﾝｶﾞｲﾄﾟﾊｰﾙのア 日x"), max_size=30))
def test_a_tokens_characters_normalized_are_its_term(text):
    # NFKC is the oracle: where a run's bigrams can be placed, each stands on the characters giving it.
    for token in analysis.tokens(text, [None]):
        if len(token.terms) == 1:
            assert analysis.fold(analysis.normalize(text[token.start : token.end])) == token.terms[0], text


# Real text with symbols NFKC spells with letters: the Debian installation guide (it, zh_CN, ko, da)
# and Python's docs.  The symbol separates words, as in the text (not "unixtm", "core™i7").
@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "strumenti software liberi da usare con Unix™ e sistemi",
            ["strumenti", "software", "liberi", "da", "usare", "con", "unix", "e", "sistemi"],
        ),
        (
            "开发了大量用于 Unix™ 的自由软件",
            ["开发", "发了", "了大", "大量", "量用", "用于", "unix", "的自", "自由", "由软", "软件"],
        ),
        ("유닉스(Unix™) 및", ["유닉", "닉스", "unix", "및"]),
        ("인텔™에서", ["인텔", "에서"]),
        ("Intel® Core™ i7-4960HQ processor", ["intel", "core", "i7", "4960hq", "processor"]),
        ("brug med Unix™ og", ["brug", "med", "unix", "og"]),
        ("5㎏ №5 30℃ Ⓐ", ["5", "5", "30"]),
    ],
)
def test_symbols_spelt_with_letters_separate_words(text, expected):
    assert analysis.words(text) == expected
    # ... as snippets read the text, a word run at a time, where it stands.
    assert [token.terms[0] for token in analysis.tokens(text)] == expected


def test_a_soft_hyphen_is_inside_a_word_for_snippets_too():
    text = "Die Instal\u00adlation von Debian"
    assert analysis.words(text) == ["die", "installation", "von", "debian"]
    found = list(analysis.tokens(text, ["de"]))
    assert [text[token.start : token.end] for token in found] == ["Die", "Instal\u00adlation", "von", "Debian"]
    assert found[1].terms[0] == "installation"


def test_the_symbols_spelt_with_letters_are_all_listed():
    # Worked out from Unicode as analysis.py says: no word character, an NFKC form holding a letter or
    # digit, none of a bigram script.
    expected = set()
    for code in range(0x80, 0x110000):
        character = chr(code)
        if 0xD800 <= code <= 0xDFFF or analysis._WORD_CHARACTER.match(character) or character == "_":
            continue
        spelt = unicodedata.normalize("NFKC", character)
        if spelt != character and any(c.isalnum() for c in spelt) and not analysis._BIGRAM_CHAR.search(spelt):
            expected.add(code)
    listed = {code for code in range(0x80, 0x110000) if analysis._SPELT_SYMBOLS.match(chr(code))}
    assert listed == expected and ord("™") in listed


def test_the_unicode_tables_written_out_are_those_the_analyzer_works_out():
    """unicodetables.py spares every start two scans of Unicode: it must hold what those scans give on
    this Python (a changed folding rule, another Unicode version: run the generator again)."""
    assert unicodedata.unidata_version == unicodetables.UNICODE_VERSION
    assert analysis._mark_ranges() == unicodetables.MARK_RANGES
    assert analysis._folding_table() == unicodetables.FOLDED
    assert generator.TABLES.read_text(encoding="ascii") == generator.source()
    # The analyzer uses them: combining marks join a word, folding drops them and spells letters plainly.
    assert analysis.words("cafe\u0301 đa") == ["cafe", "da"] and analysis._WORD_RUN.fullmatch("e\u0301\u0951")


def test_words_of_each_is_words_of_each_text():
    texts = ["Ａb Ç", "日本語", "", "x_y", "a\x00b"]
    assert analysis.words_of_each(texts) == [analysis.words(text.replace("\x00", " ")) for text in texts]
    assert analysis.words_of_each([]) == []


def test_spellings_are_the_page_spelling_of_folded_words():
    found, spellings, _ = analysis.words_spellings_and_characters("Authenticité et sécurité, SÉCURITÉ")
    assert found == ["authenticite", "et", "securite", "securite"]
    assert spellings == {"authenticite": "authenticité", "securite": "sécurité"}


# German as the installation guide writes it (installation-guide-amd64, de/): case folding spells ß "ss".
@pytest.mark.parametrize(
    "text, expected",
    [
        ("C.1. Anzahl und Größe der Debian-Partitionen", {"grosse": "größe"}),
        ("E-Mails nach außerhalb verschicken", {"ausserhalb": "außerhalb"}),
        ("sollten standardmäßig Protokolleinträge", {"standardmassig": "standardmäßig"}),
        ("GRÖẞE, dann Größe", {"grosse": "größe"}),  # the capital sharp s; the first spelling
        ("Straße2 und Maß_nahme", {"strasse2": "straße2", "mass": "maß"}),  # "_" separates
        ("Die Strasse", {}),  # written with ss: nothing to keep
        ("日本ß", {}),  # a run cut into bigrams: no one word
        ("Größe der Partitionen", {"grosse": "größe"}),
        ("x" * 64 + "ß", {"x" * 64 + "ss": "x" * 64 + "ß"}),  # a word of 65 characters
        ("x" * 65 + "ß " + "ß" + "y" * 65, {}),  # longer runs are no words (not read past SHARP_S_REACH)
        # A page's run of 200,000 letters beside one ß: read to SHARP_S_REACH, not backtracked over (it
        # took seconds at 8,000 letters, hours at the body's 500,000: a review's find).
        ("a" * 200_000 + " Maß " + "ß" * 200_000, {"mass": "maß"}),
    ],
    ids=lambda value: value[:40] if isinstance(value, str) else None,
)
def test_sharp_s_spellings_keep_the_sharp_s(text, expected):
    assert analysis.sharp_s_spellings(text) == expected


@given(st.text(alphabet=st.sampled_from("aßẞSsöÖ\u0301_ 日-"), max_size=40))
def test_sharp_s_spellings_spell_the_words_of_the_text(text):
    found = analysis.sharp_s_spellings(text)
    for word, spelling in found.items():
        assert word in analysis.words(text) and analysis.words(spelling) == [word] and "ß" in spelling
        assert spelling.replace("ß", "ss") == analysis.normalize(spelling)  # normalized but for its ß
    assert found == {} or "ß" in text or "ẞ" in text


@pytest.mark.parametrize(
    ("run", "pieces"),
    [
        ("ネットワークの設定", [("katakana", "ネットワーク"), ("hiragana", "の"), ("han", "設定")]),
        ("ハードディスクからの起動", [("katakana", "ハードディスク"), ("hiragana", "からの"), ("han", "起動")]),
        ("设置网络", [("han", "设置网络")]),
        ("日々の設定", [("han", "日々"), ("hiragana", "の"), ("han", "設定")]),  # 々 is Han's
        ("ｶﾀｶﾅ漢字", [("katakana", "ｶﾀｶﾅ"), ("han", "漢字")]),
        ("데비안아카이브", [("other", "데비안아카이브")]),
        ("ภาษาไทย", [("other", "ภาษาไทย")]),
        ("", []),
    ],
)
def test_script_pieces(run, pieces):
    assert analysis.script_pieces(run) == pieces


@given(st.text(alphabet=st.sampled_from("設定网络ネットーのからデ안녕々ｶ"), max_size=30))
def test_script_pieces_cut_a_run_where_its_script_changes(run):
    pieces = analysis.script_pieces(run)
    assert "".join(piece for _, piece in pieces) == run
    assert all(first[0] != second[0] for first, second in itertools.pairwise(pieces))  # (neighbours differ)


# Properties, over any text.
@given(st.text(max_size=300))
def test_words_are_folded_normalized_runs(text):
    for word in analysis.words(text):
        assert word and word == analysis.fold(analysis.normalize(word))
        assert not any(unicodedata.category(character).startswith(("Z", "P", "C")) for character in word)
        assert "_" not in word


@given(st.text(max_size=300))
def test_analysis_is_idempotent_on_its_own_words(text):
    found = analysis.words(text)
    assert analysis.words(" ".join(found)) == [
        piece for word in found for piece in (analysis.words(word) if len(word) > 1 else [word])
    ]


@given(st.text(max_size=200))
def test_token_offsets_lie_in_the_text(text):
    for token in analysis.tokens(text, ["en", "fr"]):
        assert 0 <= token.start < token.end <= len(text) and token.terms


@given(st.lists(st.text(max_size=40), max_size=20))
def test_words_of_each_property(texts):
    assert analysis.words_of_each(texts) == [analysis.words(text.replace("\x00", " ")) for text in texts]


def _words_a_word_at_a_time(text: str) -> list[str]:
    """``words`` written plainly: each run normalized, folded and cut into bigrams on its own (the
    analyzer folds each distinct run once and looks the rest up: it must give the same words)."""
    found = []
    for run in analysis.word_runs_of(analysis.normalize(text)):
        plain = analysis.fold(run)
        for segmented, other in analysis._SCRIPT_RUN.findall(plain):
            found.extend(analysis.bigrams(segmented) if segmented else [other] if other else [])
    return found


@pytest.mark.parametrize(
    "text",
    [
        "Ｐython３ et sécurité, SÉCURITÉ Straße",
        "Ελληνικά κείμενα και Ελληνικά",
        "Русский текст, русский ТЕКСТ",
        "العربية والفارسية: کتاب كتاب",
        "日本語のテキスト and 한국어 텍스트 中文文本",
        "Tiếng Việt có dấu: Tiếng Việt",
        "a\u0301\u0301 \u0301 ǰ _x_ 404",  # a run folding drops whole ("\u0301" alone) is no word
    ],
)
def test_words_are_those_of_each_run_alone(text):
    assert analysis.words(text) == _words_a_word_at_a_time(text)


@given(st.text(max_size=300))
def test_words_are_those_of_each_run_alone_property(text):
    assert analysis.words(text) == _words_a_word_at_a_time(text)


@given(
    st.lists(
        st.sampled_from(["books", "running", "installation", "installer", "sécurité", "日本", "42"])
        | st.text(max_size=12),
        max_size=30,
    )
)
def test_stems_are_the_stemmers_word_by_word(words):
    # Whatever the memo of words stemmed before holds, each word's stem is the Snowball stemmer's.
    fresh = Stemmer.Stemmer("english")
    assert analysis.stem(words, "en") == [fresh.stemWord(word) for word in words]
    assert [analysis.stem_word(word, "en") for word in words] == [fresh.stemWord(word) for word in words]
    assert analysis.stem(words, None) == words


def test_the_memos_are_bounded(monkeypatch):
    monkeypatch.setattr(analysis, "MEMO_WORDS", 10)
    monkeypatch.setattr(analysis, "MEMOS_WORDS", 14)
    monkeypatch.setattr(analysis, "_stem_memos", {})
    words = [f"reading{number}s" for number in range(25)]
    assert analysis.stem(words[:12], "en") == [f"reading{number}" for number in range(12)]
    assert analysis.stem(words[12:], "en") == [f"reading{number}" for number in range(12, 25)]
    assert len(analysis._stem_memos["en"]) == 13  # a new memo, started when the last one was full
    for language in ("fr", "de", "es"):
        analysis.stem(["livres"], language)
    assert list(analysis._stem_memos) == ["fr", "de", "es"]  # past 14 words in all: the least recently used dropped
    long_word = "a" * 200 + "ings"
    assert analysis.stem([long_word, "books"], "en") == Stemmer.Stemmer("english").stemWords([long_word, "books"])
    assert long_word not in analysis._stem_memos["en"] and "books" in analysis._stem_memos["en"]  # not kept


def test_the_terms_of_words_read_are_kept_once_for_languages_alike():
    list(analysis.tokens("books", [None, "xx", "en"]))
    list(analysis.tokens("books", ["en", None, "en"]))
    assert ("en",) in analysis._variant_memos  # languages without a stemmer give no terms of their own
    assert (None, "xx", "en") not in analysis._variant_memos


@pytest.mark.parametrize(
    "text, words, expected",
    [
        ("apt aptitude apt_get apt", ["apt"], [(0, "apt"), (13, "apt"), (21, "apt")]),  # "_" separates
        ("Москва, москвич, москва", ["москва"], [(17, "москва")]),
        ("cafe\u0301 cafe", ["cafe"], [(6, "cafe")]),  # a combining mark belongs to the word before it
        ("日本語と日本", ["日本"], []),  # inside a longer run of letters
        ("the book, a books", ["books", "book"], [(4, "book"), (12, "books")]),
        ("", ["word"], []),
    ],
)
def test_word_positions(text, words, expected):
    assert analysis.word_positions(text, words) == expected


def test_word_positions_inside_long_words_read_every_word():
    # A word found thousands of times inside a longer one: read a word at a time, same answer.
    text = "a" * 100_000 + " " + " ".join("a" * length for length in range(1, 9))
    found = analysis.word_positions(text, {"a" * length: None for length in range(1, 9)})
    assert found == [(100_001 + sum(range(1, length)) + length - 1, "a" * length) for length in range(1, 9)]


@given(st.text(alphabet=st.sampled_from("ab_ \u0301é-1日"), max_size=40), st.integers(0, 3))
def test_word_positions_are_where_word_runs_stand(text, misses):
    runs = [(found.start(), found.group()) for found in analysis._WORD_RUN.finditer(text.replace("_", " "))]
    distinct = list(dict.fromkeys(run for _, run in runs))
    analysis._POSITION_MISSES = misses  # both ways: by searching, and reading every word
    try:
        assert analysis.word_positions(text, distinct) == runs
    finally:
        analysis._POSITION_MISSES = 64
    for (first_start, first), (start, _) in itertools.pairwise(runs):
        assert not analysis.has_word_between(text, first_start + len(first), start)
        assert analysis.has_word_between(text, first_start, start)


# Text of the characters analysis treats apart: marks alone and joined, joiners, soft hyphens, marks
# of direction, middle dots (and the Greek ano teleia, a middle dot in NFKC), "_",
# half-width kana and voiced marks, Hangul jamo, compatibility ideographs, ß, dotted İ, final sigma,
# Arabic and Persian letters, letters past U+FFFF, accented Latin.
_ODD_TEXT = st.text(
    alphabet=st.sampled_from(
        list("ab é\u0301\u200c\u200d\u00ad\u2060\ufeff\u200f\u202e·\u0387_ｶﾞｧ\u1100\u1161\uf900日本ßİςكيأ\U00020000ẞǰ. ")
    ),
    max_size=60,
)


@given(_ODD_TEXT)
def test_fold_is_a_character_at_a_time(text):
    assert analysis.fold(text) == text.translate(analysis._FOLDED)


@given(_ODD_TEXT)
def test_odd_text_words_are_those_of_each_run_alone(text):
    assert analysis.words(text) == _words_a_word_at_a_time(text)


# ``words`` normalizes only the pieces of a text holding a character that is not ASCII, its ASCII
# capitals made small first: the words and spellings of normalizing the whole text first.
def _words_and_spellings_of_the_whole_text(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    spellings: dict[str, str] = {}
    found = analysis._words_of_normalized(analysis.normalize(text), spellings)
    return found, list(spellings.items())


def _words_and_spellings(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    found, spellings, _ = analysis.words_spellings_and_characters(text)
    return found, list(spellings.items())  # in their order: the first spelling of a word wins


@pytest.mark.parametrize(
    "text",
    [
        "H\u0302\u0331 Ｈ\u0302\u0331",  # "h" composes with U+0331, "H" does not
        "A\uff9e\u0331 H\uff9e\u0331",  # a half-width voiced mark is NFKC's U+3099, a mark
        "a<\u0338b =\u0338 >\u0338",  # ASCII punctuation that composes: "≮", "≠", "≯"
        "Cafe\u0301 CAFE\u0301 École ÉCOLE Ǆemal ǅ",
        "Tiếng Việt, no\u00a0break\u00a0space, Ｆｕｌｌ－ｗｉｄｔｈ, ¨a ﬁne ½",
    ],
)
def test_words_normalized_a_piece_at_a_time_are_those_of_the_whole_text(text):
    assert _words_and_spellings(text) == _words_and_spellings_of_the_whole_text(text)
    assert analysis.words(text) == _words_a_word_at_a_time(text)


_CAPITALS_AND_MARKS = st.text(
    alphabet=st.sampled_from(list("AHhIiKkSsZz<=>._ é\u0301\u0302\u0307\u0323\u0331\u0338\uff9e\u00a0\u3000İẞǅΣς日ｶ¨")),
    max_size=40,
)


@given(_CAPITALS_AND_MARKS)
def test_words_normalized_a_piece_at_a_time_property(text):
    assert _words_and_spellings(text) == _words_and_spellings_of_the_whole_text(text)


def test_only_marks_compose_with_what_precedes_them():
    # What lets ``words`` split a text before normalizing it: the second of every canonical pair (what
    # composes with the character before it) is a mark, and no ASCII separator composes but "<", "=",
    # ">" with U+0338; every character str.split splits at stays a space.
    pairs = 0
    for code in range(0x110000):
        decomposition = unicodedata.decomposition(chr(code))
        if not decomposition or decomposition.startswith("<") or len(decomposition.split()) != 2:
            continue
        first, second = (chr(int(part, 16)) for part in decomposition.split())
        pairs += 1
        assert unicodedata.category(second)[0] == "M" and not analysis._starts_alone(second)
        assert not first.isascii() or first.isalnum() or (first in "<=>" and second == "\u0338")
    assert pairs > 900
    spaces = [chr(code) for code in range(0x110000) if chr(code).isspace()]
    assert all(analysis.normalize(space).isspace() for space in spaces)
    assert not analysis._starts_alone("\u0331") and not analysis._starts_alone("\uff9e")
    assert analysis._starts_alone("é") and analysis._starts_alone("\u00a0")


def _giving_a_token_at_a_time(text, languages, wanted, starts):
    """What ``tokens_giving`` gives, written plainly: each run's words analyzed alone (``words``, no
    memo), a bigram a token where its characters can be placed in the text (``_character_spans``), and
    the filter; then a run's last character alone when it is one of *starts*, following nothing
    (None), the words about it following one another."""
    tokens = []
    for word_run in analysis._WORD_RUN.finditer(text.replace("_", " ")):
        for script_run in analysis._SCRIPT_RUN.finditer(word_run.group()):
            piece, start = script_run.group(), word_run.start() + script_run.start()
            found = analysis.words(piece)
            spans = _character_spans(piece) if found and script_run.group(1) else None
            if spans is not None and len(spans) != len(found) + len(found[0]) - 1:
                spans = (
                    [(index, index + 1) for index in range(len(piece))]
                    if len(found) == max(1, len(piece) - 1)
                    else None
                )
            if spans is not None:
                tokens += [
                    ((pair,), start + spans[index][0], start + spans[index + len(pair) - 1][1], False)
                    for index, pair in enumerate(found)
                ]
                if len(found[-1]) == 2 and found[-1][1:] in starts:
                    tokens.append(((found[-1][1:],), start + spans[-1][0], start + spans[-1][1], True))
            elif found:
                stems = [
                    word
                    for language in languages
                    if language in analysis.STEMMERS
                    for word in Stemmer.Stemmer(analysis.STEMMERS[language]).stemWords(found)
                ]
                tokens.append((tuple(dict.fromkeys(found + stems)), start, start + len(piece), False))
    follows = False
    for terms, start, end, alone in tokens:
        if alone:
            yield analysis.Token(terms, start, end), None
            continue
        if not wanted.isdisjoint(terms) or (starts and terms[0][:1] in starts):
            yield analysis.Token(terms, start, end), follows
            follows = True
        else:
            follows = False


def _character_spans(piece):
    """Where each character of *piece* normalized (and folded) comes from in it, read from the lengths
    of its prefixes normalized: from the character whose addition made it to the last before the next
    one's (a character composed of several spans them; each of those one is spelled as spans it)."""
    if len(piece) > analysis.SPANNED_RUN:
        return None
    lengths = [len(analysis.fold(analysis.normalize(piece[:end]))) for end in range(len(piece) + 1)]
    if lengths != sorted(lengths):
        return None
    spans = []
    for character in range(lengths[-1]):
        first = min(end for end in range(1, len(piece) + 1) if lengths[end] > character) - 1
        last = max(end for end in range(len(piece) + 1) if lengths[end] <= character + 1)
        spans.append((first, max(first + 1, last)))
    return spans


def test_tokens_giving_say_which_follow_one_another():
    found = analysis.tokens_giving("Books, a book, the 日本語の本", ["en"], {"book", "日本", "本語"})
    assert [(token.start, follows) for token, follows in found] == [(0, False), (9, False), (19, False), (20, True)]


@given(
    st.lists(st.sampled_from(["a", "b", "book", "Books", "日本語", "ｶﾞ", "ｱｲｳ", "é", "_", "ab", "の"]), max_size=12).map(
        " ".join
    ),
    st.sets(st.sampled_from(["a", "b", "book", "日本", "本語", "ab", "ガ", "イウ"]), max_size=3),
    st.sets(st.sampled_from(["日", "語", "ア", "ウ"]), max_size=2),
)
def test_tokens_giving_is_the_tokens_giving_a_wanted_term(text, wanted, starts):
    assert list(analysis.tokens_giving(text, ["en"], wanted, starts)) == list(
        _giving_a_token_at_a_time(text, ["en"], wanted, starts)
    )


@given(
    st.text(alphabet=st.sampled_from("日本語のア安装ｶﾞ abé、"), max_size=40),
    st.sets(st.sampled_from(["日本", "本語", "語の", "安装", "装安", "のの", "日日", "ab", "ガ"]), max_size=4),
    st.sets(st.sampled_from(["日", "の", "a"]), max_size=2),
)
def test_tokens_giving_in_long_runs_of_a_bigram_script(text, wanted, starts):
    # Runs of a bigram script without spaces: its bigrams kept are found by a search for each.
    assert list(analysis.tokens_giving(text, ["en"], wanted, starts)) == list(
        _giving_a_token_at_a_time(text, ["en"], wanted, starts)
    )


@pytest.mark.parametrize(
    "text, wanted, starts, found",
    [
        ("日日日", {"日日"}, set(), [(0, False), (1, True)]),  # overlapping bigrams
        ("本日本語", {"日本", "本語"}, set(), [(1, False), (2, True)]),
        ("日本語", set(), {"語"}, [(2, None)]),  # the last character, which starts no bigram, alone
        ("日本語", {"本語"}, {"語"}, [(1, False), (2, None)]),
        ("日本語 book", {"book"}, {"語"}, [(2, None), (4, False)]),
        ("日本語 book", {"本語", "book"}, {"語"}, [(1, False), (2, None), (4, True)]),  # (a phrase unbroken)
        ("日本 語", set(), {"語"}, [(3, False)]),  # a run of one character is its own term
        ("日本語", set(), {"本"}, [(1, False)]),
        ("book 日本", {"book", "日本"}, set(), [(0, False), (5, True)]),
        ("日本 book", {"book", "日本"}, set(), [(0, False), (3, True)]),
        ("日本語 book", {"日本", "book"}, set(), [(0, False), (4, False)]),  # 本語 between
    ],
)
def test_tokens_giving_in_a_bigram_script_table(text, wanted, starts, found):
    given_tokens = analysis.tokens_giving(text, ["en"], wanted, starts)
    assert [(token.start, follows) for token, follows in given_tokens] == found


def test_the_bytes_split_at_are_no_words_for_every_character():
    # The analyzer splits text in C at ASCII characters that are no letter or digit and at whitespace,
    # before the pattern reads what is left: none of them may be a word's character.
    differ = [
        code
        for code in range(0x110000)
        if (chr(code).isspace() or (code < 0x80 and analysis._ASCII_NOT_IN_WORDS[code] == 0x20))
        and code != ord("_")
        and analysis._WORD_RUN.match(chr(code))
    ]
    assert differ == []
    assert all(analysis._ASCII_NOT_IN_WORDS[code] == code for code in range(0x80, 0x100))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("«café»—crème, l'été", ["cafe", "creme", "l", "ete"]),  # punctuation inside a piece split at
        ("日本。テスト、語", ["日本", "テス", "スト", "語"]),
        ("a\u00a0b\u3000c\u2028d\x85e", ["a", "b", "c", "d", "e"]),  # whitespace past ASCII
        ("snake_case_ο_λόγος", ["snake", "case", "ο", "λογοσ"]),  # case folding: final sigma a sigma
        ("ipv6 — Ｐython３", ["ipv6", "python3"]),
        ("\u0301\u0301 ǰ", ["j"]),  # marks alone fold to nothing: no word
    ],
)
def test_words_split_at_every_character_that_is_no_words(text, expected):
    assert analysis.words(text) == expected


def test_is_word_character_is_the_regular_expressions_for_every_character():
    differ = [
        code
        for code in range(0x110000)
        if analysis._is_word_character(chr(code)) != bool(analysis._WORD_CHARACTER.match(chr(code)))
    ]
    assert differ == []


@pytest.mark.parametrize(
    "text, runs",
    [
        ("Debian GNU/Linux 12", [(0, "Debian"), (7, "GNU"), (11, "Linux"), (17, "12")]),
        ("snake_case, ipv6", [(0, "snake"), (6, "case"), (12, "ipv6")]),
        ("тест — δοκιμή", [(0, "тест"), (7, "δοκιμή")]),
        ("café\u0301 نصب", [(0, "café\u0301"), (6, "نصب")]),
        ("新书店 ＡＢＣ", [(0, "新书店"), (4, "ＡＢＣ")]),
        ("", []),
    ],
)
def test_word_runs_at(text, runs):
    assert analysis.word_runs_at(text) == runs


@given(st.text(alphabet=st.sampled_from("ab_ 1-é\u0301新.\u200d"), max_size=60))
def test_word_runs_at_are_the_runs_where_they_stand(text):
    runs = analysis.word_runs_at(text)
    assert [run for _, run in runs] == analysis.word_runs_of(text)
    assert all(text[start : start + len(run)] == run for start, run in runs)
    assert [start for start, _ in runs] == sorted({start for start, _ in runs})


@given(
    st.lists(
        st.sampled_from(["books", "installations", "sécurité", "установка", "βιβλία", "kitapları", "日本", "42", ""])
        | st.text(max_size=12),
        max_size=20,
    ),
    st.sampled_from([*sorted(analysis.STEMMERS), None, "xx"]),
)
def test_a_word_stemmed_alone_is_the_stemmers(words, language):
    # A query's word not in the memo is stemmed there and then (not added): the Snowball stemmer's stem.
    kept = dict(analysis._stem_memos)
    analysis._stem_memos.clear()
    try:
        found = [analysis.stem_word(word, language) for word in words]
        assert language not in analysis._stem_memos
    finally:
        analysis._stem_memos.clear()
        analysis._stem_memos.update(kept)
    name = analysis.STEMMERS.get(language or "")
    expected = [Stemmer.Stemmer(name).stemWord(word) for word in words] if name else words
    assert found == expected


# The characters of a bigram script a text's words hold (a query of one character matches the bigrams
# it starts; these tell a page holding it only at a run's end): real text of the Debian reference
# (ja), the installation guide (zh_CN, ko, with a half-width katakana's NFKC).
@pytest.mark.parametrize(
    "text, characters",
    [
        ("目次 序章 1. 免責事項", ["目", "次", "序", "章", "免", "責", "事", "項"]),
        ("用于 Unix™ 的自由", ["用", "于", "的", "自", "由"]),
        ("데비안 설치", ["데", "비", "안", "설", "치"]),
        ("ﾃｷｽﾄ", ["テ", "キ", "ス", "ト"]),
        ("書 Debian", ["書"]),
        ("Debian GNU/Linux Ελληνικά", []),
    ],
)
def test_characters_of_bigram_scripts(text, characters):
    words, _, found = analysis.words_spellings_and_characters(text)
    assert found == characters
    assert words == analysis.words(text)


_SEGMENTED_TEXT = st.text(alphabet=st.sampled_from("日本語の章序目次テキストｷｽ한국어 .,a1-「」é"), max_size=60)


@given(_SEGMENTED_TEXT)
def test_the_characters_are_those_of_the_words(text):
    words, _, characters = analysis.words_spellings_and_characters(text)
    assert characters == list(
        dict.fromkeys(character for word in words for character in word if analysis.is_segmented(character))
    )


# A quick look for a folded word in lowercased text (snippets past the stored text): the word as
# the page writes it, accents, full-width forms and ligature letters included.
@pytest.mark.parametrize(
    "folded, text, found",
    [
        ("ubersetzung", "die übersetzung von quellcode", "übersetzung"),
        ("strasse", "die straße", "straße"),
        ("aeroport", "æroport", "æroport"),
        ("debian", "ｄｅｂｉａｎ の インストール", "ｄｅｂｉａｎ"),
        ("προσβασιμοτητ", "5.2. προσβασιμότητα", "προσβασιμότητ"),
        ("ustanovka", "установка", None),  # no transliteration
        ("cafe", "café crème", "café"),
        ("cafe", "cafe", "cafe"),
        ("разметк", "при разметке", "разметк"),
        ("kiem tra", "kiểm tra", "kiểm tra"),
    ],
)
def test_unfolded_pattern(folded, text, found):
    match = re.search(analysis.unfolded_pattern(folded), text)
    assert (match.group() if match else None) == found


_FOLDING_LETTERS = "abcdeèéêëàâäçïîôöùûüñøåæœßαάεέηήιίοόυύωώаеиоуё" + "ＡＢａｂ０１"


@given(st.text(alphabet=st.sampled_from(_FOLDING_LETTERS), min_size=1, max_size=20))
def test_unfolded_pattern_matches_what_folds_to_its_word(written):
    # Lowercased and composed as pages are: what folds (normalized) to a word is matched by its pattern.
    text = unicodedata.normalize("NFC", written).lower()
    folded = analysis.fold(analysis.normalize(text))
    assert re.fullmatch(analysis.unfolded_pattern(folded), text)


# Named for the accented letters a text holds (the pattern compiles in a fraction of the time): the
# same matches in that text.
@pytest.mark.parametrize(
    "folded, text, found",
    [
        ("cafe", "un café crème", "café"),
        ("strasse", "die straße und die strasse", "straße"),
        ("strasse", "die strasse, die straẞe", "strasse"),
        ("kiem tra", "kiểm tra", "kiểm tra"),
        ("debian", "ｄｅｂｉａｎ", "ｄｅｂｉａｎ"),
        ("ubersetzung", "übersicht", None),
        ("affirm", "we af\ufb01rm it", None),  # (ff is a pair of its own: not f and fi, as the whole pattern)
        ("affirm", "we a\ufb00irm it", "a\ufb00irm"),
    ],
)
def test_unfolded_pattern_of_the_letters_a_text_holds(folded, text, found):
    present = analysis.unfolded_characters_in(text) & analysis.unfolded_characters_of([folded])
    match = re.search(analysis.unfolded_pattern(folded, present), text)
    assert (match.group() if match else None) == found


def test_unfolded_pattern_names_only_the_letters_a_text_holds():
    assert analysis.unfolded_pattern("cafe", frozenset("é")) == "caf[eé]"
    assert analysis.unfolded_pattern("strasse", frozenset()) == "strasse"
    assert analysis.unfolded_characters_in("plain ascii") == frozenset()
    assert analysis.unfolded_characters_in("кафе café ｃ") == frozenset("éｃ")


@given(
    st.text(alphabet=st.sampled_from(_FOLDING_LETTERS + "fl\ufb00\ufb01\ufb02 "), max_size=40),
    st.lists(st.text(alphabet=st.sampled_from("abcdefilosuyαεаеｄ"), min_size=1, max_size=6), min_size=1, max_size=3),
)
@example("we af\ufb01rm it, an af\ufb02uent man", ["affirm", "affluent"])  # (a pair's ligature absent)
def test_unfolded_pattern_of_a_texts_letters_finds_what_the_whole_pattern_finds(written, folded):
    text = unicodedata.normalize("NFC", written).lower()
    present = analysis.unfolded_characters_in(text) & analysis.unfolded_characters_of(folded)
    whole = re.compile("|".join(analysis.unfolded_pattern(word) for word in folded))
    named = re.compile("|".join(analysis.unfolded_pattern(word, present) for word in folded))
    assert [found.span() for found in named.finditer(text)] == [found.span() for found in whole.finditer(text)]


@pytest.mark.parametrize(
    "text, may",
    [
        ("plain ascii — and a dash", False),
        ("café", True),
        ("ｄｅｂｉａｎ", True),
        ("straße", True),
        ("中文文本", False),
        ("установка", False),
        ("ё", True),
        ("", False),
    ],
)
def test_may_be_folded(text, may):
    assert analysis.may_be_folded(text) is may


@given(st.text(alphabet=st.sampled_from("abcé—ß中ёуｄ ."), max_size=40))
def test_text_that_may_not_be_folded_is_its_own_folded_form(text):
    lowered = text.lower()
    if not analysis.may_be_folded(lowered):
        assert analysis.fold(analysis.normalize(lowered)) == lowered
