"""po.catalog_file: what it does not change stays byte for byte, what it writes gettext reads
back as written and writes the same way, and what msgfmt refuses it refuses (issue 51, points 2
and 3). gettext's own tools are the judges: msgunfmt gives real catalogs (the system's .mo files),
msgfmt says what is broken, msgcat says how gettext writes a catalog."""
import glob
import os
import shutil
import subprocess

import pytest

from t2t_lite.errors import UserError
from t2t_lite.po import catalog_file

GETTEXT = all(shutil.which(tool) for tool in ("msgfmt", "msgunfmt", "msgcat"))
needs_gettext = pytest.mark.skipif(not GETTEXT, reason="gettext's tools are not installed")

HEADER = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset={charset}\\n"\n'
          '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n')
LONG_COMMENT = "#. " + " ".join(["word"] * 39)  # 158 characters: polib wraps it into three


def catalog(body, charset="UTF-8", header=HEADER):
    return (header.format(charset=charset) + body).encode("utf-8" if charset == "UTF-8"
                                                          else charset)


def msgfmt(path, *flags):
    return subprocess.run(["msgfmt", *flags, "-o", os.devnull, str(path)], capture_output=True,
                          text=True, errors="replace")


def msgcat(path):
    return subprocess.run(["msgcat", str(path)], capture_output=True, check=True).stdout


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---- (a) byte-identical round trips -------------------------------------------------------------

def _system_catalogs(count=60, max_bytes=150_000):
    """A deterministic sample of the system's .mo files (every k-th by path, small enough)."""
    files = sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo"))
    files = [f for f in files if os.path.getsize(f) < max_bytes]
    step = max(1, len(files) // count)
    return files[::step][:count]


@pytest.fixture(scope="module")
def real_catalogs(tmp_path_factory):
    """[(name, bytes)]: msgunfmt of the sampled .mo files."""
    if not GETTEXT:
        pytest.skip("gettext's tools are not installed")
    out = []
    for path in _system_catalogs():
        result = subprocess.run(["msgunfmt", path], capture_output=True)
        if result.returncode == 0:
            out.append((path, result.stdout))
    if len(out) < 10:
        pytest.skip("fewer than 10 .mo catalogs on this system")
    return out


def test_real_catalogs_round_trip_byte_for_byte(real_catalogs):
    entries = 0
    for name, data in real_catalogs:
        parsed = catalog_file.parse(data, name)
        assert parsed.to_bytes() == data, name
        entries += len(parsed.entries)
        for entry in parsed.entries:  # each entry's span is its own bytes
            start, end = entry.span
            assert entry.raw() == data[start:end]
    assert entries > 1000


HAND_MADE = {
    "obsolete_previous": '#~| msgid "Older"\n#~ msgid "Gone"\n#~ msgstr "Weg"\n',
    "bell_and_tab": 'msgid "Bell\\a and\\ttab\\b\\f\\v\\r"\nmsgstr "Glocke\\a und\\tTab"\n',
    "long_extracted_comment": LONG_COMMENT + '\n#: a.c:1\nmsgid "x"\nmsgstr ""\n',
    "context_and_previous": ('#, fuzzy\n#| msgctxt "old"\n#| msgid "Opn"\nmsgctxt "menu"\n'
                             'msgid "Open"\nmsgstr "Öffnen"\n'),
    "plural": ('#, c-format\nmsgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "%d Datei"\n'
               'msgstr[1] "%d Dateien"\n'),
    "odd_spacing": 'msgid"a"  "b"\t\nmsgstr\n"c"\n\n\n\nmsgid "d" msgstr "e"\n',
    "spaced_forms": 'msgid "f"\nmsgid_plural "fs"\nmsgstr [ 0 ]"g" msgstr[1]\n"h"\n',
    "octal_and_hex": 'msgid "\\101\\x42\\1234"\nmsgstr "\\x41"\n',
    "domain": 'domain "other"\nmsgid "a"\nmsgstr "b"\n',
    "comments_between": '# one\n\n# two\n#\n#,fuzzy,c-format\n#:a.c:1   b.c:2\nmsgid "a"\n'
                        'msgstr "b"\n# a comment at the end\n',
    "backslash_newline": '# a comment\\\ncontinued\nmsgid "a\\\nb"\nmsgstr "c"\n',
    "no_trailing_newline": 'msgid "a"\nmsgstr "b"',
}


@needs_gettext
@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_hand_made_catalogs_round_trip(tmp_path, name):
    data = catalog(HAND_MADE[name])
    path = write(tmp_path, f"{name}.po", data)
    assert msgfmt(path).returncode == 0, msgfmt(path).stderr  # a catalog gettext reads
    assert catalog_file.read(path).to_bytes() == data


@needs_gettext
def test_crlf_latin1_and_shift_jis_round_trip(tmp_path):
    crlf = catalog('msgid "a"\nmsgstr "b"\n').replace(b"\n", b"\r\n")
    latin1 = catalog('msgid "Gr\\u00fc\\u00dfe"\nmsgstr "Grüße"\n'.replace("\\u00fc\\u00df", "üß"),
                     charset="ISO-8859-1")
    # In Shift_JIS the second byte of 表 and ソ is 0x5C, a backslash in ASCII.
    sjis = catalog('msgid "Show table"\nmsgstr "表示ソ"\n', charset="SHIFT_JIS")
    for name, data in (("crlf", crlf), ("latin1", latin1), ("sjis", sjis)):
        path = write(tmp_path, f"{name}.po", data)
        assert msgfmt(path).returncode == 0, msgfmt(path).stderr
        parsed = catalog_file.read(path)
        assert parsed.to_bytes() == data
    assert parsed.entries[1].msgstr == "表示ソ"
    assert catalog_file.parse(latin1).entries[1].msgstr == "Grüße"


def test_values_are_read_as_gettext_reads_them():
    parsed = catalog_file.parse(catalog(
        HAND_MADE["bell_and_tab"] + "\n" + HAND_MADE["context_and_previous"] + "\n"
        + HAND_MADE["long_extracted_comment"] + "\n" + HAND_MADE["octal_and_hex"] + "\n"
        + HAND_MADE["plural"] + "\n" + HAND_MADE["obsolete_previous"]))
    header, bell, menu, long, octal, plural, gone = parsed.entries
    assert header.is_header and parsed.header is header
    assert parsed.header_fields() == [("Content-Type", "text/plain; charset=UTF-8"),
                                      ("Plural-Forms", "nplurals=2; plural=(n != 1);")]
    assert bell.msgid == "Bell\a and\ttab\b\f\v\r" and bell.msgstr == "Glocke\a und\tTab"
    assert (menu.msgctxt, menu.msgid, menu.flags) == ("menu", "Open", ["fuzzy"])
    assert (menu.previous_msgctxt, menu.previous_msgid) == ("old", "Opn")
    assert long.extracted_comments == [LONG_COMMENT[3:]] and long.references == ["a.c:1"]
    assert octal.msgid == "AB" + "S4" and octal.msgstr == "A"
    # \ooo and \xhh are bytes in the charset; a NUL ends the string, as in gettext.
    escapes = catalog_file.parse(catalog('msgid "\\303\\244\\xc3\\xa4\\377"\nmsgstr "a\\0b"\n'))
    assert escapes.entries[1].msgid == "ää\udcff" and escapes.entries[1].msgstr == "a"
    assert plural.msgid_plural == "%d files" and plural.flags == ["c-format"]
    assert plural.msgstr_plural == {0: "%d Datei", 1: "%d Dateien"} and plural.msgstr is None
    assert gone.obsolete and gone.previous_msgid == "Older" and gone.msgstr == "Weg"
    assert [e.line for e in parsed.entries] == [1, 6, 9, 16, 21, 24, 30]
    assert [e.msgid_line for e in parsed.entries] == [1, 6, 13, 18, 21, 25, 31]
    assert parsed.messages() == [bell, menu, long, octal, plural]


# ---- (d) refusals, as msgfmt refuses ------------------------------------------------------------

# name: (body, what the refusal says after "FILE:", polib accepts it too)
REFUSALS = {
    "unterminated_string": ('msgid "Hello\nmsgstr ""\n', "6: end-of-line within string", True),
    "unterminated_at_end": ('msgid "a"\nmsgstr "Hello', "7: end-of-file within string", True),
    "invalid_escape": ('msgid "a\\q"\nmsgstr ""\n', "6:10: invalid control sequence", True),
    "hex_without_digits": ('msgid "a"\nmsgstr "\\x"\n', "7:11: invalid control sequence", True),
    "duplicate_msgid": ('msgid "a"\nmsgstr "b"\n\nmsgid "a"\nmsgstr "c"\n',
                        "9: duplicate message definition (the first definition is at line 6)",
                        True),
    "duplicate_with_context": ('msgctxt "x"\nmsgid "a"\nmsgstr "b"\n\nmsgid "a"\nmsgstr "c"\n\n'
                               'msgctxt "x"\nmsgid "a"\nmsgstr "d"\n',
                               "14: duplicate message definition (the first definition is at "
                               "line 7)", True),
    "duplicate_of_an_obsolete_one": ('msgid "a"\nmsgstr "b"\n\n#~ msgid "a"\n#~ msgstr "c"\n',
                                     "9: duplicate message definition", True),
    "second_header": ('msgid ""\nmsgstr "x"\n', "6: duplicate message definition", True),
    "missing_msgstr": ('msgid "a"\n\nmsgid "b"\nmsgstr "c"\n', "6: missing 'msgstr' section",
                       False),
    "missing_msgstr_at_end": ('msgid "a"\n', "6: missing 'msgstr' section", True),
    "plural_without_forms": ('msgid "a"\nmsgid_plural "as"\n', "6: missing 'msgstr[]' section",
                             True),
    "plural_with_plain_msgstr": ('msgid "a"\nmsgid_plural "as"\nmsgstr "x"\n',
                                 "8:11: syntax error", True),
    "forms_without_plural": ('msgid "a"\nmsgstr[0] "x"\n', "6: missing 'msgid_plural' section",
                             True),
    "first_form_not_zero": ('msgid "a"\nmsgid_plural "b"\nmsgstr[1] "x"\nmsgstr[0] "y"\n',
                            "8: first plural form has nonzero index", True),
    "form_out_of_order": ('msgid "a"\nmsgid_plural "b"\nmsgstr[0] "x"\nmsgstr[2] "y"\n',
                          "9: plural form has wrong index", True),
    "unknown_keyword": ('msgid "a"\nmsgstrx "b"\n', '7: keyword "msgstrx" unknown', False),
    "junk_between_entries": ('msgid "a"\nmsgstr "b"\n\nhello\n', '9: keyword "hello" unknown',
                             False),
    "stray_number": ('msgid "a"\nmsgstr 5\n', "7:1: syntax error", True),
    "comment_inside_an_entry": ('msgid "a"\n# c\nmsgstr "b"\n', "6: missing 'msgstr' section",
                                True),
    "second_msgstr": ('msgid "a"\nmsgstr "b"\nmsgstr "c"\n', "8:7: syntax error", False),
    "previous_msgstr": ('#| msgstr "z"\nmsgid "a"\nmsgstr "b"\n',
                        '6: keyword "msgstr" unknown', False),
    "previous_after_context": ('msgctxt "x"\n#| msgid "o"\nmsgid "a"\nmsgstr "b"\n',
                               "7:9: syntax error", True),
    "comment_after_previous_mark": ('#| # c\nmsgid "a"\nmsgstr "b"\n', "8:7: syntax error",
                                    False),  # gettext reads the msgid line as a #| line
    "obsolete_half": ('msgid "a"\n#~ msgstr "b"\n', "7: inconsistent use of #~", True),
    "context_separator": ('msgid "a\\004b"\nmsgstr ""\n',
                          "6: context separator <EOT> within string", True),
}


@needs_gettext
@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refused_as_msgfmt_refuses(tmp_path, name):
    body, message, polib_accepts = REFUSALS[name]
    data = catalog(body)
    path = write(tmp_path, f"{name}.po", data)
    assert msgfmt(path).returncode != 0  # msgfmt's own input error
    with pytest.raises(UserError) as refused:
        catalog_file.read(path)
    assert str(refused.value) == f"{path}:{message}" or (
        str(refused.value).startswith(f"{path}:{message}"))
    if polib_accepts:  # the point: polib reads it without a word
        import polib

        polib.pofile(data.decode("utf-8"))


@needs_gettext
def test_refused_bytes_and_bom(tmp_path):
    bad = write(tmp_path, "bad.po", catalog('msgid "a"\nmsgstr "\xff"\n').replace(
        "ÿ".encode(), b"\xff"))
    assert msgfmt(bad).returncode != 0
    with pytest.raises(UserError, match=r"bad.po:7:9: invalid multibyte sequence: not valid "
                                        r"utf-8 \(the header's charset"):
        catalog_file.read(bad)
    # In a comment msgfmt lets them be, and so does the reader (the bytes are kept).
    comment = catalog("# \xff\n" + 'msgid "a"\nmsgstr "b"\n').replace("ÿ".encode(), b"\xff")
    assert catalog_file.parse(comment).to_bytes() == comment
    bom = write(tmp_path, "bom.po", b"\xef\xbb\xbf" + catalog('msgid "a"\nmsgstr "b"\n'))
    assert msgfmt(bom).returncode != 0
    with pytest.raises(UserError, match=r"bom.po:1:2: syntax error: the file starts with a "
                                        r"byte order mark"):
        catalog_file.read(bom)
    with pytest.raises(UserError, match=r"missing.po: cannot read"):
        catalog_file.read(tmp_path / "missing.po")


# ---- (b), (c) changing entries ------------------------------------------------------------------

def _like(source, text):
    """`text` with the leading and trailing newlines of `source` (msgfmt checks them)."""
    core = text.strip("\n") or "x"
    return ("\n" if source.startswith("\n") else "") + core + (
        "\n" if source.endswith("\n") else "")


def _retranslate(parsed):
    """Gives every third message another message's translation, fuzzy: {entry index: entry}."""
    messages = [e for e in parsed.messages() if e.translated()]
    changed = {}
    for i, entry in enumerate(messages):
        if i % 3:
            continue
        other = messages[(i + 7) % len(messages)]
        if any(flag.endswith("-format") for flag in entry.flags):
            other = entry  # its own translation: the directives msgfmt -c checks stay
        text = other.msgstr if other.msgid_plural is None else other.msgstr_plural[0]
        if entry.msgid_plural is None:
            entry.set_translation(msgstr=_like(entry.msgid, text), fuzzy=True)
        else:
            entry.set_translation(plural={k: form if other is entry else _like(
                entry.msgid_plural, text) for k, form in entry.msgstr_plural.items()},
                fuzzy=True)
        changed[parsed.entries.index(entry)] = entry
    return changed


@needs_gettext
def test_changed_catalogs_pass_msgfmt_keep_the_rest_and_write_as_msgcat(tmp_path,
                                                                        real_catalogs):
    checked = 0
    for name, data in real_catalogs[::4]:
        if msgfmt(write(tmp_path, "in.po", data), "-c", "--use-fuzzy").returncode:
            continue  # msgfmt -c judges what is changed, in a catalog it accepts
        parsed = catalog_file.parse(data, name)
        changed = _retranslate(parsed)
        parsed.set_header_fields({"PO-Revision-Date": "2026-12-05 10:00+0000",
                                  "X-Generator": "t2t-lite-po"})
        out = parsed.to_bytes()
        path = write(tmp_path, "out.po", out)
        assert msgfmt(path, "-c", "--use-fuzzy").returncode == 0, (name, msgfmt(path).stderr)
        again = catalog_file.parse(out, name)
        assert len(again.entries) == len(parsed.entries)
        for index, (before, after) in enumerate(zip(catalog_file.parse(data).entries,
                                                    again.entries)):
            if index in changed:  # read back as written
                assert after.fuzzy and after.msgstr == changed[index].msgstr
                assert after.msgstr_plural == changed[index].msgstr_plural
            elif index:  # untouched: its own bytes
                assert out[slice(*after.span)] == data[slice(*before.span)]
        assert dict(again.header_fields())["X-Generator"] == "t2t-lite-po"
        # msgunfmt writes as msgcat does: gettext writes the changed catalog the same way.
        assert msgcat(path) == out, name
        checked += len(changed)
    assert checked > 100


STRINGS = [
    "Tab\there, bell\a, backspace\b, form feed\f, vertical tab\v, return\r, "
    'quote " and backslash \\ — all escaped',
    "A long line of words " * 12 + "ending without a newline",
    "Eine sehr lange Zeile, die umbrochen wird, weil sie länger ist als neunundsiebzig "
    "Spalten es erlauben.\nZweite Zeile\n",
    "\nleading newline",
    "表示するファイルが見つかりませんでした。設定を確認してから、もう一度やり直してください。"
    "それでも問題が解決しない場合は管理者に連絡してください。",
    "https://example.org/a/very/long/path/that/has/no/spaces/at/all/and/keeps/going/on/and/on",
    "e\u0301 combining, emoji 😀, Ελληνικά, русский текст",
    "",
]


@needs_gettext
@pytest.mark.parametrize("text", STRINGS)
def test_written_strings_read_back_and_match_msgcat(tmp_path, text):
    source = write(tmp_path, "in.po", catalog(
        f'#, c-format\nmsgid "{_escape(_like(text, "source"))}"\nmsgstr ""\n'))
    parsed = catalog_file.parse(msgcat(source))  # the msgid as gettext writes it
    fuzzy = bool(text)  # gettext writes no fuzzy flag on an untranslated entry
    parsed.entries[1].set_translation(msgstr=text, fuzzy=fuzzy)
    path = write(tmp_path, "out.po", parsed.to_bytes())
    assert catalog_file.read(path).entries[1].msgstr == text
    assert catalog_file.read(path).entries[1].flags == ["fuzzy"] * fuzzy + ["c-format"]
    assert msgcat(path) == path.read_bytes()
    assert msgfmt(path, "-c", "--use-fuzzy").returncode == 0


def _escape(text):
    return "".join("\\" + catalog_file._ESCAPE[c] if c in catalog_file._ESCAPE else c
                   for c in text)


def test_fuzzy_line_placed_as_msgmerge_places_it():
    data = catalog('#: a.c:1\n#| msgid "Opn"\nmsgid "Open"\nmsgstr ""\n\n'
                   '#, c-format\nmsgid "%s"\nmsgstr ""\n\n#, fuzzy\nmsgid "b"\nmsgstr "c"\n\n'
                   '# plain\nmsgctxt "m"\nmsgid "d"\nmsgstr ""\n')
    parsed = catalog_file.parse(data)
    opened, format_, fuzzy, plain = parsed.messages()
    opened.set_translation(msgstr="Öffnen", fuzzy=True)
    format_.set_translation(msgstr="%s!", fuzzy=True)
    fuzzy.set_translation(msgstr="C", fuzzy=False)
    plain.set_translation(msgstr="D", fuzzy=True, drop_previous=True)
    out = parsed.to_bytes().decode()
    assert ('#: a.c:1\n#, fuzzy\n#| msgid "Opn"\nmsgid "Open"\nmsgstr "Öffnen"\n\n'
            '#, fuzzy, c-format\nmsgid "%s"\nmsgstr "%s!"\n\nmsgid "b"\nmsgstr "C"\n\n'
            '# plain\n#, fuzzy\nmsgctxt "m"\nmsgid "d"\nmsgstr "D"\n') in out
    # Calls repeat from the lines as read: un-fuzzying restores them.
    opened.set_translation(msgstr="", fuzzy=False)
    format_.set_translation(msgstr="", fuzzy=False)
    fuzzy.set_translation(msgstr="c", fuzzy=True)
    plain.set_translation(msgstr="", fuzzy=False)
    assert parsed.to_bytes() == data
    opened.set_translation(msgstr="Öffnen", fuzzy=False, drop_previous=True)
    assert "#| " not in parsed.to_bytes().decode()


def test_plural_forms_the_language_lacks_are_removed():
    parsed = catalog_file.parse(catalog(
        'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] ""\nmsgstr[1] ""\nmsgstr[2] ""\n'))
    entry = parsed.entries[1]
    entry.set_translation(plural={0: "%d Datei", 1: "%d Dateien"}, nplurals=2)
    assert parsed.to_bytes().endswith(b'msgstr[0] "%d Datei"\nmsgstr[1] "%d Dateien"\n')
    assert entry.msgstr_plural == {0: "%d Datei", 1: "%d Dateien"}
    entry.set_translation(plural={2: "%d Dateien (2)"})  # a language with three forms
    assert parsed.to_bytes().endswith(b'msgstr[1] "%d Dateien"\nmsgstr[2] "%d Dateien (2)"\n')
    with pytest.raises(ValueError, match="msgstr\\[0\\] .. msgstr\\[n-1\\]"):
        entry.set_translation(plural={5: "x"})
    with pytest.raises(ValueError, match="has plural forms"):
        entry.set_translation(msgstr="x")


def test_header_fields_rewrite_only_their_lines():
    long_value = "https://gitlab.gnome.org/GNOME/gnome-calculator/issues/a/long/address"
    header = ('# Translators\n#, fuzzy\nmsgid ""\nmsgstr ""\n"Project-Id-Version: x 1\\n"\n'
              '"Report-Msgid-Bugs-To: https://gitlab.gnome.org/GNOME/gnome-calculator/"\n'
              '"issues\\n"\n"PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\\n"\n'
              '"Content-Type: text/plain; charset=UTF-8\\n"\n\n')
    data = catalog('msgid "a"\nmsgstr ""\n', header=header)
    parsed = catalog_file.parse(data)
    parsed.set_header_fields({"Report-Msgid-Bugs-To": long_value,
                              "PO-Revision-Date": "2026-12-05 10:00+0000",
                              "Language": "de"}, fuzzy=False)
    out = parsed.to_bytes().decode()
    assert out == data.decode().replace("#, fuzzy\n", "").replace(
        '"Report-Msgid-Bugs-To: https://gitlab.gnome.org/GNOME/gnome-calculator/"\n'
        '"issues\\n"\n',
        '"Report-Msgid-Bugs-To: https://gitlab.gnome.org/GNOME/gnome-calculator/issues/"\n'
        '"a/long/address\\n"\n').replace(
        "YEAR-MO-DA HO:MI+ZONE", "2026-12-05 10:00+0000").replace(
        'charset=UTF-8\\n"\n', 'charset=UTF-8\\n"\n"Language: de\\n"\n')
    assert dict(catalog_file.parse(out.encode()).header_fields())["Report-Msgid-Bugs-To"] == (
        long_value)
    # A one-line header is rewritten whole, as msgmerge writes it.
    one_line = catalog_file.parse(b'msgid ""\nmsgstr "Project-Id-Version: x\\nLanguage: fr\\n"\n')
    one_line.set_header_fields({"Language": "de"})
    assert one_line.to_bytes() == (b'msgid ""\nmsgstr ""\n"Project-Id-Version: x\\n"\n'
                                   b'"Language: de\\n"\n')


def test_line_ends_and_charsets_are_kept():
    crlf = catalog_file.parse(catalog('msgid "a"\nmsgstr ""\n').replace(b"\n", b"\r\n"))
    crlf.entries[1].set_translation(msgstr="b", fuzzy=True)
    assert crlf.to_bytes().endswith(b'\r\n\r\n#, fuzzy\r\nmsgid "a"\r\nmsgstr "b"\r\n')
    last = catalog_file.parse(catalog('msgid "a"\nmsgstr ""'))
    last.entries[1].set_translation(msgstr="line one\nline two")
    assert last.to_bytes().endswith(b'msgstr ""\n"line one\\n"\n"line two"')
    latin1 = catalog_file.parse(catalog('msgid "a"\nmsgstr ""\n', charset="ISO-8859-1"))
    before = latin1.to_bytes()
    with pytest.raises(catalog_file.NotEncodable, match=r":6: '€' cannot be written in the "
                                                        r"catalog's charset ISO-8859-1"):
        latin1.entries[1].set_translation(msgstr="5 €", fuzzy=True)
    assert latin1.to_bytes() == before and latin1.entries[1].msgstr == ""
    with pytest.raises(catalog_file.NotEncodable):
        latin1.set_header_fields({"Last-Translator": "€uro"})
    assert latin1.to_bytes() == before and "Last-Translator" not in dict(latin1.header_fields())
    latin1.entries[1].set_translation(msgstr="Grüße")
    assert latin1.to_bytes().endswith('msgstr "Grüße"\n'.encode("latin-1"))


def test_entries_that_cannot_be_rewritten_in_place_say_so():
    parsed = catalog_file.parse(catalog(
        'msgid "a" msgstr ""\n\n#~ msgid "b"\n#~ msgstr ""\n\n'
        'msgid "c"\nmsgstr "d" msgid "e" msgstr ""\n\n'
        '# x\\\ny\nmsgid "f"\nmsgstr ""\n\nmsgid "g"\nmsgstr ""\n'))
    assert [e.rewritable for e in parsed.entries] == [True, False, False, False, False, False,
                                                      True]
    with pytest.raises(catalog_file.NotRewritable, match=r":6: the entry has its msgstr on its "
                                                         r"msgid's line"):
        parsed.entries[1].set_translation(msgstr="x")
    with pytest.raises(catalog_file.NotRewritable, match="shares a line with another entry"):
        parsed.entries[4].set_translation(msgstr="x")
    with pytest.raises(catalog_file.NotRewritable, match="continued by a backslash"):
        parsed.entries[5].set_translation(msgstr="x")
    parsed.entries[6].set_translation(msgstr="h")
    assert parsed.to_bytes().endswith(b'msgid "g"\nmsgstr "h"\n')
    with pytest.raises(ValueError, match="obsolete"):
        parsed.entries[2].set_translation(msgstr="x")
    with pytest.raises(ValueError, match="NUL"):
        catalog_file.string_lines("msgstr", "a\0b")


@needs_gettext
def test_mutated_catalogs_refused_exactly_when_msgfmt_refuses_them(tmp_path):
    """Deterministic damage (a quote, a backslash, a keyword, #~, #|, a line copied, bytes cut)
    to a catalog of every construct: the reader refuses exactly where msgfmt finds a syntax
    error. msgfmt's checks of content (newlines at both ends) are msgfmt -c's to judge."""
    import random

    seed = catalog(
        '# translator\n#. extracted\n#: a.c:1\n#, fuzzy, c-format\n#| msgctxt "old"\n'
        '#| msgid "Opn %s"\nmsgctxt "menu"\nmsgid "Open %s"\nmsgstr "\\a\\t\\101\\x42 %s"\n\n'
        'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "%d Datei"\n'
        'msgstr[1] ""\n"%d Dateien"\n\nmsgid "long"\nmsgstr ""\n"one "\n"two"\n\n'
        '#~| msgid "Older"\n#~ msgid "Gone"\n#~ msgstr "Weg"\n')
    assert msgfmt(write(tmp_path, "seed.po", seed)).returncode == 0
    pieces = [b'"', b"\\", b"\\q", b"#~ ", b"#| ", b"msgid ", b"msgstr ", b"msgstr[1] ",
              b'msgctxt "x"\n', b"\n", b"#", b" x", b"[", b"0", b'msgid_plural "p"\n',
              b"\\\n", b"\r", b"\x04"]
    rng = random.Random(51)
    cases = disagreements = 0
    for case in range(150):
        data, pos = seed, rng.randrange(len(seed))
        roll = rng.random()
        if roll < 0.5:
            data = data[:pos] + rng.choice(pieces) + data[pos:]
        elif roll < 0.8:
            data = data[:pos] + data[pos + rng.randrange(1, 6):]
        else:
            lines = data.split(b"\n")
            lines.insert(rng.randrange(len(lines)), lines[rng.randrange(len(lines))])
            data = b"\n".join(lines)
        path = write(tmp_path, f"case{case}.po", data)
        judged = msgfmt(path)
        if "do not both" in judged.stderr or "Charset" in judged.stderr:
            continue
        try:
            assert catalog_file.read(path).to_bytes() == data
            refused = None
        except UserError as error:
            refused = str(error)
        cases += 1
        disagreements += (judged.returncode != 0) != (refused is not None)
        assert (judged.returncode != 0) == (refused is not None), (data, judged.stderr, refused)
    assert cases > 100 and disagreements == 0


@needs_gettext
def test_cjk_charsets_count_ambiguous_characters_wide_as_gettext(tmp_path):
    text = "αβγ " * 12 + "°§ " * 10 + "Ω" * 5 + " ─" * 30 + "§─×─÷" * 20
    for charset in ("EUC-JP", "UTF-8"):
        parsed = catalog_file.parse(catalog('msgid "a"\nmsgstr ""\n', charset=charset))
        parsed.entries[1].set_translation(msgstr=text)
        path = write(tmp_path, f"{charset}.po", parsed.to_bytes())
        assert msgcat(path) == path.read_bytes(), charset
        assert catalog_file.read(path).entries[1].msgstr == text
