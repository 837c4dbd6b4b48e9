"""Code-like text kept verbatim (t2t_lite.inference.code_spans through protected_spans): URLs,
e-mail addresses, paths, options, numbers, identifiers and <placeholders> found outside format
spans, kept byte for byte by the repair, and lines of such text alone copied. Pure Python, quick.

The first table holds the real catalog lines a model broke (issue 59) and the words that must
stay prose."""
import pytest

from t2t_lite.inference import code_spans
from t2t_lite.inference import protected_spans as ps
from t2t_lite.inference import span_finding

ALL = frozenset(span_finding.KINDS)
CODE = frozenset(code_spans.CODE_KINDS)


def spans(text, kinds=ALL):
    return [(s.text, s.kind) for s in span_finding.find_spans(text, kinds)]


@pytest.mark.parametrize("text,expected", [
    ("Use --removeall to remove every entry", [("--removeall", "option")]),
    ("--verbose : print verbose messages", [("--verbose", "option")]),
    ("-x, -xvf, --long-option, --opt=VALUE, --output=<file> and -f16 (161616, 400)",
     [("-x", "option"), ("-xvf", "option"), ("--long-option", "option"),
      ("--opt=VALUE", "option"), ("--output=<file>", "option"), ("-f16", "option"),
      ("161616", "number"), ("400", "number")]),
    ("Unlock the devices of /etc/crypttab.", [("/etc/crypttab", "path")]),
    ("See ~/.config/foo, ./configure, ../x and C:\\Windows\\x.ini",
     [("~/.config/foo", "path"), ("./configure", "path"), ("../x", "path"),
      ("C:\\Windows\\x.ini", "path")]),
    ("Report bugs at https://docs.xfce.org/apps/parole/bugs.",
     [("https://docs.xfce.org/apps/parole/bugs", "url")]),
    ("(see www.example.org/a?b=1)", [("www.example.org/a?b=1", "url")]),
    ("Sample rates 44100 and 48000 Hz", [("44100", "number"), ("48000", "number")]),
    ("Version 1.2.3, pages 1-10, 3.14, 1,000 and $5",
     [("1.2.3", "number"), ("1-10", "number"), ("3.14", "number"), ("1,000", "number"),
      ("5", "number")]),
    ("Clemens Ladisch <clemens@ladisch.de>", [("clemens@ladisch.de", "email")]),
    ("Flag NM_SETTING_DCB_FLAG_ENABLE", [("NM_SETTING_DCB_FLAG_ENABLE", "identifier")]),
    ("config_file, __init__, ConfigFile, macOS, os.path, file.txt, v1.2, g_free(), a.b()",
     [("config_file", "identifier"), ("__init__", "identifier"), ("ConfigFile", "identifier"),
      ("macOS", "identifier"), ("os.path", "identifier"), ("file.txt", "identifier"),
      ("v1.2", "identifier"), ("g_free()", "identifier"), ("a.b()", "identifier")]),
    ("Usage: foo <file> [<dir_name>] <invalid size>",
     [("<file>", "placeholder"), ("<dir_name>", "placeholder")]),
    ("Entities &amp; and &#169; stay", [("&amp;", "markup"), ("&#169;", "markup")]),
    # code inside format spans or tags is theirs; code right after a span is not code
    ('<a href="https://x.org">x</a> %s-bit %sconfig_file',
     [('<a href="https://x.org">', "markup"), ("</a>", "markup"), ("%s", "printf"),
      ("%s", "printf")]),
])
def test_code_like_spans(text, expected):
    assert spans(text) == expected
    assert all(text[s.start:s.end] == s.text for s in span_finding.find_spans(text, ALL))


@pytest.mark.parametrize("text", [
    "Save the file.", "Done. Next step", "e.g. a file, i.e. this one, z.B. so, Ph.D.",
    "The e-mail is read-only and up-to-date", "Wi-Fi, UTF-8, and/or TCP/IP, x86-64",
    "Hello World, OK, USB, GNOME, PDFs, URLs", "don't, it's",
    "utf8, MP3, 5px, 0x1F, 3rd, 1920x1080",
    "Re_load, _Open, Save _As", "a - b, a / b, -- and ---", "Größe: ünï_cödé", "",
])
def test_prose_is_no_span(text):
    assert spans(text, CODE) == []


def test_kinds_select_code_classes():
    text = "Use --all on /etc/x at https://x.org, mail a@b.org, set max_size to 10 for <file>"
    for kind, found in [("option", "--all"), ("path", "/etc/x"), ("url", "https://x.org"),
                        ("email", "a@b.org"), ("identifier", "max_size"), ("number", "10"),
                        ("placeholder", "<file>")]:
        assert spans(text, {kind}) == [(found, kind)]
    # a class not protected is still read whole: no number inside a URL, no path inside one
    assert spans("https://x.org/1/2 and 7", {"number", "path"}) == [("7", "number")]


@pytest.mark.parametrize("source,broken,fixed", [
    # issue 59's real outputs
    ("Use --removeall to remove every entry", "Verwenden Sie --remove, um alles zu entfernen",
     "Verwenden Sie --removeall, um alles zu entfernen"),
    ("Unlock the devices of /etc/crypttab.", "Entsperrt die Geräte von /cet/cryptrypt.",
     "Entsperrt die Geräte von /etc/crypttab."),
    ("Sample rates 44100 and 48000 Hz", "Abtastraten und Hz", "Abtastraten und Hz 44100 48000"),
    ("Set NM_SETTING_DCB_FLAG_ENABLE", "Setze NM", "Setze NM NM_SETTING_DCB_FLAG_ENABLE"),
    ("Press <b>Apply</b> to save your settings", "Drücken Sie <A><b></b> Übernehmen",
     "Drücken Sie <b></b> Übernehmen"),
    # mangled copies and stand-ins of the same kind
    ("Read the config_file setting", "Lies die Config_File Einstellung",
     "Lies die config_file Einstellung"),
    ("Usage: foo <file>", "Aufruf: foo <Datei>", "Aufruf: foo <file>"),
    ("Between 2 and 5 threads", "Zwischen 2 und 6 Threads", "Zwischen 2 und 5 Threads"),
    # a surplus copy goes
    ("Page 5 of 10", "Seite 5 von 10 10", "Seite 5 von 10"),
])
def test_restore_keeps_code(source, broken, fixed):
    restored = ps.restore(source, broken, ALL)
    assert restored == (fixed, True)
    assert ps.kept_exactly(source, fixed, ALL)
    assert ps.restore(source, fixed, ALL) == (fixed, False)


def test_quotes_around_code_in_either_language():
    assert spans("Run “--force” or '--all' or »--x« or „--y“", CODE) == [
        ("--force", "option"), ("--all", "option"), ("--x", "option"), ("--y", "option")]
    assert ps.kept_exactly("Use --force here", "Verwenden Sie hier »--force«", ALL)
    # an apostrophe is no quote: no option inside "Sum-of-the-Years’-Digits"
    assert spans("the Sum-of-the-Years’-Digits method", CODE) == []


def test_an_output_may_have_code_of_its_own():
    assert ps.kept_exactly("Two files", "2 Dateien", ALL)
    assert ps.kept_exactly("Open the file", "Öffnen Sie die Datei mit Strg+O in macOS", ALL)
    assert ps.restore("Two files", "2 Dateien", ALL) == ("2 Dateien", False)


@pytest.mark.parametrize("source", [
    "Clemens Ladisch <clemens@ladisch.de>", "Jörg van der Berg (jvdb@example.org)",
    "Copyright (C) 2009-2012 A. Name <a@b.org>, B. Name <b@c.de>",
    "https://docs.xfce.org/apps/parole/", "1.2.3", "--verbose", "/etc/crypttab", "%s: %s",
    "(%d%%)", "config_file=%s",
])
def test_lines_of_code_alone_are_copied(source):
    assert ps.restore(source, "Übersetzung", ALL) == (source, True)
    assert ps.restore(source, source, ALL) == (source, False)
    assert not ps.kept_exactly(source, "Übersetzung", ALL)


@pytest.mark.parametrize("source", ["Send a mail to a@b.org", "Version 1.2.3 released",
                                    "Contact Clemens <a@b.org> for help", "Done."])
def test_lines_with_prose_are_translated(source):
    assert not ps.restore(source, source + " x", ALL).text == source


def test_author_lines_need_email_protected():
    line = "Clemens Ladisch <clemens@ladisch.de>"
    assert ps.restore(line, "Clemens", ALL - {"email"}).text != line


# ---- glossaries keep out of code (issue 60, point 3) ------------------------------------------

def _glossary(tmp_path, text):
    from t2t_lite.inference import constraints

    path = tmp_path / "g.tsv"
    path.write_text(text, encoding="utf-8")
    return constraints.Glossary.load(str(path))


@pytest.mark.parametrize("protect", [frozenset(), ALL], ids=["none", "all"])
@pytest.mark.parametrize("line", [
    "Use --output-file to choose the output", "Read the config_file setting",
    "Set ConfigFile first", "Open /etc/file.conf", "See https://x.org/file/index.html",
    "Mail file@x.org", "Call load_file() now", "Usage: cat <file>", "Edit file.txt",
])
def test_a_glossary_term_is_not_matched_inside_code(tmp_path, line, protect):
    glossary = _glossary(tmp_path, "file\tDatei\nfile\t!Feil\n")
    assert glossary.matches(line, protect) == []


def test_a_glossary_term_is_matched_as_a_word_of_prose_beside_code(tmp_path):
    glossary = _glossary(tmp_path, "file\tDatei\nNetworkManager\tNetworkManager\n")
    line = "Use --output-file to choose the output file"
    assert [line[a:b] for a, b, _ in glossary.matches(line)] == ["file"]
    assert glossary.matches(line)[0][0] == len(line) - 4
    # a term that is code itself holds its span whole
    assert glossary.phrases_for("Restart NetworkManager") == [(False, ["NetworkManager"])]
    assert glossary.phrases_for("Open the file (e.g. a read-only file).") == [(False, ["Datei"])]
