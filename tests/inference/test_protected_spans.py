"""Protected spans (t2t_lite.inference.protected_spans): finding printf specifiers, brace fields and
markup, checking that an output keeps them, and repairing one that does not. Pure Python, quick.

The table is real: msgid/msgstr pairs from the German catalogs on this machine (`msgunfmt
/usr/share/locale/de/LC_MESSAGES/<domain>.mo`), inlined so the test reads no system files.
"""
import random

import pytest

from t2t_lite.errors import UserError
from t2t_lite.inference import protected_spans as ps
from t2t_lite.inference import span_finding

ALL = frozenset(span_finding.KINDS)
FORMAT = frozenset(span_finding.FORMAT_KINDS)  # printf, brace, markup: the tables below are theirs

# (domain, msgid, msgstr, the msgid's protected spans in order)
REAL = [
    ("Linux-PAM", " from %.*s", " von %.*s", ["%.*s"]),
    ("coreutils", "%.*s: invalid conversion specification", "%.*s: ungültige Umwandlungsangabe",
     ["%.*s"]),
    ("Linux-PAM", "%s failed: unknown status 0x%x", "%s schlug fehl: Unbekannter Status 0x%x",
     ["%s", "%x"]),
    ("dpkg", "archive contained object '%.255s' of unknown type 0x%x",
     "Archiv enthielt Objekt »%.255s« von unbekanntem Typ 0x%x", ["%.255s", "%x"]),
    ("Linux-PAM", "Access has been granted (last access was %ld seconds ago).",
     "Zugriff erlaubt (letzter Zugriff war vor %ld Sekunden).", ["%ld"]),
    ("appstream", "errors: %lu", "Fehler: %lu", ["%lu"]),
    ("apt", "Invalid operator '%c' at offset %d, did you mean '%c%c' or '%c='? - in: %s",
     "Ungültiger Operator »%c« bei Versatz %d, meinten Sie »%c%c« oder »%c=«? - in: %s",
     ["%c", "%d", "%c", "%c", "%c", "%s"]),
    ("bash", "run_pending_traps: bad value in trap_list[%d]: %p",
     "run_pending_traps: Ungültiger Wert in trap_list[%d]: %p", ["%d", "%p"]),
    ("avahi", "<i>No service currently selected.</i>", "<i>Momentan ist kein Dienst ausgewählt.</i>",
     ["<i>", "</i>"]),
    ("avahi", "Browsing for services in domain <b>%s</b>:",
     "Domain <b>%s</b> wird nach Diensten durchsucht:", ["<b>", "%s", "</b>"]),
    ("software-properties", "<b>Automatic updates</b>", "<b>Automatische Aktualisierungen</b>",
     ["<b>", "</b>"]),
    ("coreutils", "%s: pass %lu/%lu (%s)...%s/%s %d%%",
     "%s: Durchgang %lu/%lu (%s)…%s/%s %d%%", ["%s", "%lu", "%lu", "%s", "%s", "%s", "%d", "%%"]),
    ("coreutils", "format %s has no %% directive", "das Format %s enthält keine %%-Anweisung",
     ["%s", "%%"]),
    ("dpkg", "ar member size %jd too large", "ar-Element-Größe %jd ist zu groß", ["%jd"]),
    ("dpkg", "symbolic link '%.250s' size has changed from %jd to %zd",
     "Größe des symbolischen Links »%.250s« wurde von %jd zu %zd geändert",
     ["%.250s", "%jd", "%zd"]),
    ("dpkg", "malloc failed (%zu bytes)", "malloc fehlgeschlagen (%zu Byte)", ["%zu"]),
    ("findutils", "Only one instance of {} is supported with -exec%s ... +",
     "Es wird nur eine Instanz von {} unterstützt mit -exec%s ... +", ["{}", "%s"]),
    ("git", "Could not parse HEAD^{tree}", "Konnte HEAD^{tree} nicht parsen.", ["{tree}"]),
    ("git", "%%(body) does not take arguments", "%%(body) akzeptiert keine Argumente", ["%%"]),
    ("git", "failed to stat '%*s%s%s'", "Konnte '%*s%s%s' nicht lesen.", ["%*s", "%s", "%s"]),
    ("pg_amcheck-15", "%*s/%s relations (%d%%), %*s/%s pages (%d%%)",
     "%*s/%s Relationen (%d%%), %*s/%s Seiten (%d%%)",
     ["%*s", "%s", "%d", "%%", "%*s", "%s", "%d", "%%"]),
    ("git", "Continuing in %0.1f seconds, assuming that you meant '%s'.",
     "Setze in %0.1f Sekunden fort unter der Annahme, dass Sie '%s' meinten.", ["%0.1f", "%s"]),
    ("net-tools", "on (%2.2f/%ld/%d)", "ein (%2.2f/%ld/%d)", ["%2.2f", "%ld", "%d"]),
    ("glib20", "Empty entity “&;” seen; valid entities are: &amp; &quot; &lt; &gt; &apos;",
     "Leere Entität »&;« gefunden; gültige Entitäten sind &amp; &quot; &lt; &gt; &apos;",
     ["&amp;", "&quot;", "&lt;", "&gt;", "&apos;"]),
    ("glib20", "UNIX timestamp %lld does not fit into 64 bits",
     "UNIX-Zeitstempel %lld passt nicht in 64 Bit", ["%lld"]),
    ("gtk20", "%1$s on %2$s", "%1$s, %2$s", ["%1$s", "%2$s"]),
    ("libc", "`%1$s' definition does not end with `END %1$s'",
     "Die Definition von »%1$s« ist nicht durch »END %1$s« abgeschlossen", ["%1$s", "%1$s"]),
    ("python-apt", "Downloading file %(current)li of %(total)li with %(speed)s/s",
     "Datei %(current)li von %(total)li wird mit %(speed)s/s heruntergeladen.",
     ["%(current)li", "%(total)li", "%(speed)s"]),
    ("python-apt", "Breaks existing package '%(pkgname)s' dependency %(depname)s "
     "(%(deprelation)s %(depversion)s)",
     "Beschädigt vorhandenes Paket »%(pkgname)s« wegen Abhängigkeit %(depname)s "
     "(%(deprelation)s %(depversion)s)",
     ["%(pkgname)s", "%(depname)s", "%(deprelation)s", "%(depversion)s"]),
    ("make", "target pattern contains no '%%'", "Ziel-Muster enthält kein „%%“", ["%%"]),
    # prose percent signs and usage metavariables are not protected
    ("gsettings-desktop-schemas", "Allow volume above 100%", "Lautstärke über 100% erlauben", []),
    ("git", "checkout <branch> even if already checked out in other worktree",
     "<Branch> auschecken, auch wenn dieser bereits in einem anderen Arbeitsverzeichnis "
     "ausgecheckt ist", []),
]


@pytest.mark.parametrize("domain,msgid,msgstr,expected", REAL, ids=[r[1][:40] for r in REAL])
def test_real_catalog_spans_and_references(domain, msgid, msgstr, expected):
    spans = span_finding.find_spans(msgid, FORMAT)
    assert [s.text for s in spans] == expected
    assert all(msgid[s.start:s.end] == s.text for s in spans)
    assert span_finding.constraint_phrases(spans) == expected
    assert ps.kept_exactly(msgid, msgstr, FORMAT)  # the human reference keeps them
    assert ps.restore(msgid, msgstr, FORMAT) == (msgstr, False)
    assert ps.restore(msgid, msgid, FORMAT) == (msgid, False)


@pytest.mark.parametrize("text,spans", [
    ("%s %d %5.2f %-10s %ld %lu %zu %lld %*d %.*s",
     ["%s", "%d", "%5.2f", "%-10s", "%ld", "%lu", "%zu", "%lld", "%*d", "%.*s"]),
    ("%1$s %2$d %% %(name)s %(count)d %'d %I64d %<PRIu64> %Id %hhx %Lf %m",
     ["%1$s", "%2$d", "%%", "%(name)s", "%(count)d", "%'d", "%I64d", "%<PRIu64>", "%Id", "%hhx",
      "%Lf", "%m"]),
    ("100 % done, 50% of them, 100% sure, 5% in, 10%-20%", []),
    ("% d and % 5i", ["% d", "% 5i"]),
    ("{0} {name} {name!r} {0:>10} {} {obj.attr[0]:{width}}",
     ["{0}", "{name}", "{name!r}", "{0:>10}", "{}", "{obj.attr[0]:{width}}"]),
    ("{{literal}} and a stray }", ["{{", "}}", "}"]),
    ('<b>x</b> <a href="x">y</a> <br/> <br> &amp; &#160; &#x1F600;',
     ["<b>", "</b>", '<a href="x">', "</a>", "<br/>", "<br>", "&amp;", "&#160;", "&#x1F600;"]),
    ("Usage: %s <file> [<link>] AT&T", ["%s"]),
    ('<a href="%s">link</a>', ['<a href="%s">', "</a>"]),
])
def test_find_spans(text, spans):
    assert [s.text for s in span_finding.find_spans(text, FORMAT)] == spans


def test_kinds_select_and_movability():
    text = "%s %1$s %(n)d %% {} {0} {{ <b>&amp;</b>"
    printf = ["%s", "%1$s", "%(n)d", "%%"]
    assert [s.text for s in span_finding.find_spans(text, {"printf"})] == printf
    assert [s.text for s in span_finding.find_spans(text, {"brace"})] == ["{}", "{0}", "{{"]
    assert [s.text for s in span_finding.find_spans(text, {"markup"})] == ["<b>", "&amp;", "</b>"]
    assert span_finding.find_spans(text, ()) == []
    movable = {s.text: s.movable for s in span_finding.find_spans(text, FORMAT)}
    assert movable == {"%s": False, "%1$s": True, "%(n)d": True, "%%": True, "{}": False,
                       "{0}": True, "{{": True, "<b>": False, "&amp;": True, "</b>": False}
    with pytest.raises(ValueError):
        span_finding.find_spans(text, {"printf", "latex"})


def test_kept_exactly_rules():
    assert ps.kept_exactly("%1$s in %2$s", "in %2$s: %1$s", FORMAT)  # positional may move
    assert not ps.kept_exactly("%s in %d", "in %d: %s", FORMAT)  # unnumbered may not
    assert ps.kept_exactly("{a} of {b}", "{b} von {a}", FORMAT)
    assert not ps.kept_exactly("{} of {}", "{} von {} {}", FORMAT)
    assert not ps.kept_exactly("<i><b>x</b></i>", "<b><i>x</b></i>", FORMAT)  # nesting as in source
    assert not ps.kept_exactly("%s files", "%s Dateien %d", FORMAT)  # no extra specifier
    assert not ps.kept_exactly("%s files", "%S Dateien", FORMAT)
    assert ps.kept_exactly("%s files", "%s Dateien", {"brace"})


@pytest.mark.parametrize("source,broken,fixed", [
    # dropped
    ("Delete %s from %d files.", "Lösche aus %d Dateien.", "Lösche aus %s %d Dateien."),
    ("<b>%s</b> of %d", "<b></b> von %d", "<b>%s</b> von %d"),
    ("<b>%s</b> of %d", "<b>%s von %d", "<b>%s</b> von %d"),
    ("File %1$s in %2$s", "In %2$s Datei", "In %2$s Datei %1$s"),
    ("%s", "", "%s"),
    # duplicated, extra
    ("Error: %s", "Fehler: %s %s", "Fehler: %s"),
    ("Saved %s.", "Gespeichert %s %x.", "Gespeichert %s."),
    ("Saved.", "Gespeichert %s, weiter.", "Gespeichert, weiter."),
    # reordered
    ("Delete %s from %d files.", "Lösche %d aus %s Dateien.", "Lösche %s aus %d Dateien."),
    ("<i><b>x</b></i>", "<b><i>x</b></i>", "<i><b>x</b></i>"),
    # mangled
    ("Delete %s from %d files.", "Lösche % s aus %d Dateien.", "Lösche %s aus %d Dateien."),
    ("Delete %s from %d files.", "Lösche %S aus %d Dateien.", "Lösche %s aus %d Dateien."),
    ("%(n)d files", "%(n) d Dateien", "%(n)d Dateien"),
    ("Name: {name}", "Name: { name }", "Name: {name}"),
    ('<a href="%s">link</a>', '<a href="%S">Link</a>', '<a href="%s">Link</a>'),
    # a missing one keeps the source's tight binding; a wrong one of the same form stands in
    ("%s:%d:%d: converting host list to ALL", "%s:%d: Rechnerliste wird umgewandelt",
     "%s:%d:%d: Rechnerliste wird umgewandelt"),
    ("unable to deregister hook of type %d (version %d.%d)", "Hook %d (Version %d) nicht",
     "Hook %d (Version %d.%d) nicht"),
    ("Size %8s : %s", "Größe %s: %s", "Größe %8s: %s"),
    ("%8s : %s", "%s: %s", "%8s : %s"),  # spans and punctuation alone: the line is copied
    ("ROUNDMODE value `%.*s' is invalid", "ROUNDMODE-Wert »%s« ist ungültig",
     "ROUNDMODE-Wert »%.*s« ist ungültig"),
    ("Searching %s: %3d%%", "Suchen nach %s: %33d%%", "Suchen nach %s: %3d%%"),
    # tags unbalanced
    ("<b>Bold</b> text", "<b>Fett Text", "<b>Fett Text</b>"),
    ("<b>%s %d</b>", "<b>%s", "<b>%s %d</b>"),
    ("Click <b>here</b>", "Hier </b> klicken", "Hier <b></b> klicken"),
    ("%s of %d at %u", "%u: %s", "%s: %d %u"),  # swapped slots: the k-th becomes the k-th
    ("%1$s of %2$d", "%2$d von %1$ s", "%2$d von %1$s"),
    # no other span: the pieces of mangled spans are deleted (issue 51's real outputs)
    ("x %s%zd%s %s", "x %s%zd%z %s", "x %s%zd %s %s"),
    ("Offset %<PRIu64>", "%<Offset %<PRIu64>", "%<PRIu64>"),
    ("Done (%.0f%%)", "Fertig (%.0 %.0f%%)", "Fertig ( %.0f%%)"),
    ("Files:%*s%s", "Datei %*s:%*%s", "Datei %*s:%s"),
    ("%s", "% %s", "%s"),
    ("arp: unknown address family %s.", "arp: % unbekannte Adressfamilie %s.",
     "arp: unbekannte Adressfamilie %s."),
    ("%(count)d items in %(folder)s", "lemente in %(derderderder) %(count)d %(folder)s",
     "lemente in %(count)d %(folder)s"),
    ("Wrote %(count)d bytes", "Während von %(current) Bytes %(count)d",
     "Während von Bytes %(count)d"),
    ("{0} and {1}", "{1} und { und {0} }", "{1} und und {0}"),
    ("<b>Bold</b> text", "<b>Fett</b Text", "<b>Fett Text</b>"),
    ("Tom &amp; Jerry", "Tom & amp; Jerry", "Tom &amp; Jerry"),
    # invented spans go, the source having none
    ("Reference to unknown", "Referenz verweist auf '%s'", "Referenz verweist auf ''"),
    ("Reference", "Referenz %z {0} <b>x</b>", "Referenz x"),
])
def test_restore_repairs(source, broken, fixed):
    restored = ps.restore(source, broken, FORMAT)
    assert restored == (fixed, True)
    assert ps.kept_exactly(source, restored.text, FORMAT)
    assert ps.restore(source, restored.text, FORMAT) == (fixed, False)


def test_restore_tidies_whitespace_of_deletions_only():
    assert ps.restore("Error: %s", "Fehler %s %d: ok", FORMAT).text == "Fehler %s: ok"
    assert ps.restore("done", "%d fertig", FORMAT).text == "fertig"
    assert ps.restore("a %s b", "a  b", FORMAT).text == "a  b %s"  # the output's own spaces stay


def test_prose_percent_survives_where_the_source_has_it():
    for source, output in [("Allow volume above 100%", "Lautstärke über 100% erlauben"),
                           ("Copied 50% of %d files", "50 % von %d Dateien kopiert"),
                           ("10%-20% of %s", "10 %-20 % von %s")]:
        assert ps.kept_exactly(source, output, FORMAT)
        assert ps.restore(source, output, FORMAT) == (output, False)
    # as often as the source has them, and only the bare sign: "% z" reads as a directive
    assert ps.restore("100% done", "100 % fertig, % z %", FORMAT).text == "100 % fertig,"
    assert not ps.kept_exactly("done", "100% fertig", FORMAT)
    assert ps.restore("done", "100% fertig", FORMAT).text == "100 fertig"


def test_no_other_span_is_part_of_kept_exactly():
    assert not ps.kept_exactly("%s files", "%s Dateien %z", FORMAT)
    assert not ps.kept_exactly("%(n)d files", "%(n)d Dateien %(x)", FORMAT)
    assert not ps.kept_exactly("{0} files", "{0} Dateien {", FORMAT)
    assert ps.kept_exactly("{0} files", "{0} Dateien {", {"printf"})  # only the kinds protected
    assert not ps.kept_exactly("<b>x</b>", "<b>x</b> < /b>", FORMAT)
    assert ps.kept_exactly("Usage: %s <file>", "Aufruf: %s <Datei>", FORMAT)  # a metavariable


def test_a_source_always_keeps_its_own_spans():
    """restore gives the source back when all else fails, so the source must read as clean
    against itself, whatever its braces: "{a b}" is no field, its braces stray ones."""
    for source in ["{refer\tence}", "{float_type} {float_nu\tmber}: ", "a { x } b }", "%z 50%",
                   "</b <b>x</b> & amp;"]:
        assert ps.kept_exactly(source, source, FORMAT), source
        fixed = ps.restore(source, "x", FORMAT).text
        assert ps.kept_exactly(source, fixed, FORMAT), (source, fixed)


def test_tabs_and_controls_stay_where_the_repair_works():
    assert ps.restore("Name:\t%s", "Name:\t%z %s", FORMAT).text == "Name:\t %s"
    assert ps.restore("Name:\t%s\tx", "Name %z\t%S\tx", FORMAT).text == "Name \t%s\tx"
    assert ps.restore("a %s\t", "Datei\t", FORMAT).text == "Datei\t %s"
    assert ps.restore("%s\t", "Datei\t", FORMAT).text == "%s\t"  # copied
    assert ps.restore("a\x07%s", "a\x07 %z", FORMAT).text == "a\x07 %s"
    # a span added back is set off by the whitespace the source has beside it
    assert ps.restore("a\t%s", "%z\tx", FORMAT).text == "\tx\t%s"
    assert ps.restore("Name\t%s", "Name", FORMAT).text == "Name\t%s"
    assert ps.restore("a%s\t%d", "\t%d", FORMAT).text == "\t%s\t%d"


def _mutate(rng, source, reference, kinds=FORMAT):
    """A reference with its spans of `kinds` dropped, duplicated, swapped or mangled at
    random."""
    text = reference
    inserts = ["%s", "%d", "{x}", "<b>", "</i>", " % s", "&amp;"]
    if kinds - FORMAT:
        inserts += [" 42 ", " --force", " /etc/x", " max_size", " <Datei>", " a@b.org", "1.5"]
    for _ in range(rng.randint(1, 3)):
        spans = span_finding.find_spans(text, kinds)
        op = rng.choice(["drop", "duplicate", "swap", "mangle", "insert"])
        if op == "insert" or not spans:
            pos = rng.randint(0, len(text))
            text = text[:pos] + rng.choice(inserts) + text[pos:]
            continue
        s = rng.choice(spans)
        if op == "drop":
            text = text[:s.start] + text[s.end:]
        elif op == "duplicate":
            pos = rng.randint(0, len(text))
            text = text[:pos] + s.text + text[pos:]
        elif op == "swap" and len(spans) > 1:
            a, b = sorted(rng.sample(spans, 2))
            text = (text[:a.start] + b.text + text[a.end:b.start] + a.text + text[b.end:])
        elif op == "mangle":
            mangled = rng.choice([s.text.upper(), s.text[:1] + " " + s.text[1:], s.text[:-1]])
            text = text[:s.start] + mangled + text[s.end:]
    return text


def test_restore_always_keeps_spans_on_random_mutations():
    rng = random.Random(43)
    extra = [("<b>%s</b> and <i>%d</i>", "<b>%s</b> und <i>%d</i>"),
             ("{name} has {count} {}", "{name} hat {count} {}")]
    pairs = [(msgid, msgstr) for _, msgid, msgstr, _ in REAL] + extra
    changed = 0
    for _ in range(500):
        source, reference = rng.choice(pairs)
        broken = _mutate(rng, source, reference)
        restored = ps.restore(source, broken, FORMAT)
        assert ps.kept_exactly(source, restored.text, FORMAT), (source, broken, restored)
        assert ps.restore(source, restored.text, FORMAT) == (restored.text, False)
        assert restored.changed == (restored.text != broken)
        changed += restored.changed
    assert changed > 250


def test_parse_setting():
    assert ps.parse_setting("auto") == "auto"
    assert ps.parse_setting("none") == "none"
    assert ps.parse_setting("printf,markup") == frozenset({"printf", "markup"})
    assert ps.parse_setting(" brace ") == frozenset({"brace"})
    for bad in ("", "all", "printf,", "auto,printf", "Printf"):
        with pytest.raises(UserError, match="--protect"):
            ps.parse_setting(bad)


def test_resolve():
    assert ps.resolve("auto", "translate_ende_gettext") == ALL
    assert ps.resolve("auto", "translate_gettext") == ALL
    assert ps.resolve("auto", "translate_ende_wmt14") == frozenset()
    assert ps.resolve("none", "translate_ende_gettext") == frozenset()
    assert ps.resolve("printf", "translate_ende_wmt14") == {"printf"}
    assert ps.resolve(frozenset({"brace"})) == {"brace"}
    assert ps.resolve("auto") == ALL  # no problem: PO input (narrowed per entry by po/formats.py)
    assert ps.resolve("auto", "translate_ende_wmt14", po=True) == ALL
