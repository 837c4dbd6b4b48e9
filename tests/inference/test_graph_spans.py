"""graph_spans: the TF string-op twin of protected_spans that exports run under TF Serving.

Its finder must find what span_finding.find_spans finds (on real catalog lines: the held-out
format strings of bench/data and the inlined table of test_protected_spans), and its repair must
give what protected_spans.restore gives, byte for byte (PARITY, and random mutations of real
references), which keeps every span as protected_spans.kept_exactly reads them."""
import functools
import os
import random

import pytest
import tensorflow as tf

from t2t_lite.inference import graph_span_finding, graph_spans
from t2t_lite.inference import protected_spans as ps
from t2t_lite.inference import span_finding
from tests.inference.test_protected_spans import REAL, _mutate

ALL = frozenset(span_finding.KINDS)
HELD_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "data",
                        "format_strings_de")
EDGES = ["% d and % 5i", "% dx, % d, and % d%s", "100 % done, 50% of them", "%", "{", "<", "&",
         "Usage: %s <file> [<link>] AT&T", '<a href="%s">link</a>', "{größe} {0:<b>}</b>",
         "<b>x</b> <br/> <br> <hr class=a> &amp; &#160; &#x1F600;", "<p>\u00a0</p>", "",
         "{{literal}} and a stray }", "%1$s %2$d %% %(name)s %'d %I64d %<PRIu64> %Id"]


# Code-like text (code_spans.py): issue 59's real lines and the prose that must stay prose.
CODE_LINES = [
    "Use --removeall to remove every entry", "--verbose : print verbose messages",
    "-x, -xvf, --long-option, --opt=VALUE, --output=<file> and -f16 (161616, 400)",
    "Unlock the devices of /etc/crypttab.", "See ~/.config/foo, ./configure, ../x, C:\\W\\x.ini",
    "Report bugs at https://docs.xfce.org/apps/parole/bugs.", "(see www.example.org/a?b=1)",
    "Sample rates 44100 and 48000 Hz", "Version 1.2.3, pages 1-10, 3.14, 1,000 and $5",
    "Clemens Ladisch <clemens@ladisch.de>", "Flag NM_SETTING_DCB_FLAG_ENABLE",
    "config_file, __init__, ConfigFile, macOS, os.path, file.txt, v1.2, g_free(), a.b()",
    "Usage: foo <file> [<dir name>] </b>", '<a href="https://x.org">x</a> %s-bit %sconfig_file',
    "Save the file. e.g. a file, i.e. this one, z.B. so, Ph.D.", "The e-mail is read-only",
    "Wi-Fi, UTF-8, and/or TCP/IP, x86-64, don't", "utf8, MP3, 5px, 0x1F, 3rd, 1920x1080",
    "Re_load, _Open, Save _As", "Größe: ünï_cödé 5ä x\u00a0--y «--z» “/etc/x”",
    "Copyright (C) 2009-2012 A. Name <a@b.org>, B. Name <b@c.de>", "%s: %s", "1.2.3",
]
CODE = frozenset(span_finding.KINDS) - frozenset(span_finding.FORMAT_KINDS)


def _lines(name):
    with open(os.path.join(HELD_OUT, name), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _texts():
    table = [text for _, msgid, msgstr, _ in REAL for text in (msgid, msgstr)]
    return table + EDGES + CODE_LINES + _lines("source.en") + _lines("reference.de")


def find_all(texts, kinds):
    """Each text's spans as graph_span_finding finds them (one traced map over all the texts)."""
    @tf.function(autograph=False)
    def joined(batch):
        return tf.map_fn(lambda text: tf.strings.reduce_join(graph_span_finding.find(text, kinds),
                                                             separator="\x03"), batch)
    return [[span for span in row.decode().split("\x03") if span]
            for row in joined(tf.constant(texts)).numpy()]


@pytest.mark.parametrize("kinds", [ALL, frozenset({"printf"}), frozenset({"brace"}),
                                   frozenset({"markup"}), frozenset({"printf", "brace"}), CODE,
                                   frozenset({"number", "path"}),
                                   frozenset({"printf", "identifier", "placeholder"})],
                         ids=lambda k: ",".join(sorted(k)))
def test_finder_equals_protected_spans(kinds):
    texts = _texts()
    assert len(texts) > 2000
    found = find_all(texts, kinds)
    mismatches = [(text, graph, [s.text for s in span_finding.find_spans(text, kinds)])
                  for text, graph in zip(texts, found)
                  if graph != [s.text for s in span_finding.find_spans(text, kinds)]]
    assert mismatches == []
    assert sum(map(len, found)) > 40  # the lines do hold spans of these kinds


@functools.lru_cache(maxsize=None)
def _repair_fn(kinds):
    """One traced repair per kinds (a trace takes seconds), for outputs [N]."""
    spec = tf.TensorSpec([None], tf.string)
    return tf.function(lambda s, o: graph_spans.repair(s, o, kinds), autograph=False,
                       input_signature=[spec, spec])


def _repair(sources, outputs, kinds=ALL):
    texts, changed = _repair_fn(kinds)(tf.constant(sources, tf.string),
                                       tf.constant(outputs, tf.string))
    return [t.decode() for t in texts.numpy()], changed.numpy().tolist()


@pytest.mark.parametrize("source,output,expected", [
    ("File %s not found.", "Datei %s nicht gefunden.", "Datei %s nicht gefunden."),  # kept
    ("File %s not found.", "Datei nicht gefunden.", "Datei nicht gefunden %s."),      # missing
    ("%s of %d", "%d von %s", "%s von %d"),                  # unnumbered ones keep their order
    ("%1$s of %2$d", "%2$d von %1$s", "%2$d von %1$s"),      # positional ones may move
    ("{name} has {count}", "{count} hat {name}", "{count} hat {name}"),
    ("Error: %s", "Fehler: %S", "Fehler: %s"),               # a mangled copy, in place
    ("Error: %s", "Fehler: %s %s", "Fehler: %s"),            # a surplus one is dropped
    ("<b>%s</b> saved", "%s gespeichert", "<b>%s</b> gespeichert"),  # beside its neighbours
    ("50% of %d", "50% von %d", "50% von %d"),               # prose percent is not a span
    ("", "", ""),
])
def test_repair_cases(source, output, expected):
    texts, changed = _repair([source], [output])
    assert texts == [expected]
    assert changed == [expected != output]
    assert ps.kept_exactly(source, texts[0], ALL)


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_repair_keeps_spans_on_random_mutations_of_real_references():
    rng = random.Random(46)
    pairs = list(zip(_lines("source.en"), _lines("reference.de")))
    sources, outputs = [], []
    for _ in range(1500):
        source, reference = rng.choice(pairs)
        sources.append(source)
        outputs.append(_mutate(rng, source, reference, ALL))
    texts, changed = _repair(sources, outputs)
    broken = [(s, o, t) for s, o, t in zip(sources, outputs, texts)
              if not ps.kept_exactly(s, t, ALL)]
    assert broken == []
    unequal = [(s, o, t, ps.restore(s, o, ALL).text) for s, o, t in zip(sources, outputs, texts)
               if t != ps.restore(s, o, ALL).text]
    assert unequal == []
    for output, text, was_changed in zip(outputs, texts, changed):
        assert was_changed == (text != output)
    kept_already = [ps.kept_exactly(s, o, ALL) for s, o in zip(sources, outputs)]
    assert all(t == o for t, o, k in zip(texts, outputs, kept_already) if k)
    assert sum(changed) > 1000
    # Repairing a repaired output changes nothing.
    again, changed_again = _repair(sources, texts)
    assert again == texts and not any(changed_again)


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_hypotheses_of_one_source_are_repaired_as_each_pair_alone():
    """outputs [N, K], as the n-best signatures give them: the source's spans found once serve
    its K hypotheses, with the result of repairing each (source, hypothesis) pair on its own."""
    rng = random.Random(7)
    pairs = list(zip(_lines("source.en"), _lines("reference.de")))[:200]
    sources = [rng.choice(pairs) for _ in range(60)]
    nbest = [[_mutate(rng, source, reference) for _ in range(3)] for source, reference in sources]
    fn = tf.function(lambda s, o: graph_spans.repair(s, o, ALL), autograph=False)
    texts, changed = fn(tf.constant([s for s, _ in sources]), tf.constant(nbest))
    assert texts.shape == changed.shape == (60, 3)
    flat_texts, flat_changed = _repair([s for s, _ in sources for _ in range(3)],
                                       [o for row in nbest for o in row])
    assert [t.decode() for t in texts.numpy().reshape(-1)] == flat_texts
    assert changed.numpy().reshape(-1).tolist() == flat_changed


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_kinds_narrow_the_repair():
    texts, _ = _repair(["%s and {name}"], ["und"], frozenset({"brace"}))
    assert texts == ["und {name}"]
    texts, changed = _repair(["%s"], ["x"], frozenset({"brace"}))
    assert texts == ["x"] and changed == [False]
    texts, changed = _repair(["%s"], ["x %z"], frozenset())
    assert texts == ["x %z"] and changed == [False]  # no kinds: nothing is repaired


PRINTF, BRACE, MARKUP = frozenset({"printf"}), frozenset({"brace"}), frozenset({"markup"})
# (source, hypothesis, kinds): both repairs must give the same string (issue 51).
PARITY = [
    # strays of mangled spans, from real outputs
    ("%s%zd%s %s, %zu, %s %zu %s", "%s%zd%z %s, %zu, %s %zu %s", ALL),
    ("Offset %<PRIu64>", "%<Offset RIu64 %<PRIu64>", ALL),
    ("Done (%.0f%%)", "(%.0 (%.0f%%)", ALL),
    ("Files:%*s%s", "Datei %*s:%*%s", ALL),
    ("%s", "% %s", ALL),
    ("arp: unknown address family %s.", "arp: % unbekannte Adressfamilie %s.", ALL),
    ("%(count)d items in %(folder)s", "lemente in %(derderderder) %(count)d %(folder)s", ALL),
    ("Wrote %(count)d bytes", "Während von %(current) Bytes %(count)d", ALL),
    ("value 0x%04x", "Wert 0x", PRINTF),
    ("%d%%", "%d %", ALL),
    # spans the model invented, the source having none or fewer
    ("Reference to unknown", "Referenz verweist auf '%s'", ALL),
    ("Reference to unknown", "Referenz verweist auf '%s' %d {0} <b>x</b> &amp;", ALL),
    ("Saved.", "Gespeichert %s, weiter.", ALL),
    ("Error: %s", "Fehler: %s %s %d", ALL),
    ("", "", ALL),
    ("", "%s", ALL),
    ("", "  %z  ", ALL),
    ("%s", "", ALL),
    # prose percent signs survive where the source has them
    ("Allow volume above 100%", "Lautstärke über 100% erlauben", ALL),
    ("Copied 50% of %d files", "50% von %d Dateien kopiert", ALL),
    ("Copied 50% of %d files", "50 % von %d Dateien kopiert % s", ALL),
    ("10%-20% of %s", "10 %-20 % von %s", PRINTF),
    ("100% done", "100 % fertig, % z", PRINTF),
    # mangled copies, in place
    ("Delete %s from %d files.", "Lösche % s aus %d Dateien.", ALL),
    ("Delete %s from %d files.", "Lösche %S aus %d Dateien.", ALL),
    ("%(n)d files", "%(n) d Dateien", ALL),
    ("%1$s of %2$d", "%2$d von %1$ s", ALL),
    # order, missing ones beside their neighbours
    ("%s of %d", "%d von %s", ALL),
    ("%s:%d:%d: converting host list", "%s:%d: Rechnerliste", ALL),
    ("unable to deregister hook of type %d (version %d.%d)", "Hook %d (Version %d) nicht", ALL),
    ("%8s : %s", "%s: %s", ALL),
    ("%s of %d at %u", "%u: %s", ALL),
    ("Delete %s from %d files.", "Lösche aus %d Dateien.", ALL),
    # brace fields
    ("Name: {name}", "Name: { name }", ALL),
    ("{} of {}", "{} von {} {}", BRACE),
    ("{0} and {1}", "{1} und { und {0}", BRACE),
    ("{{literal}} and a stray }", "{{wörtlich}} und ein }", BRACE),
    ("{name} has {count}", "{count} hat {name} {", ALL),
    ("Width {:>10}", "Breite {:>1O}", BRACE),
    ("{refer\tence} and {a b}", "{ {REF  E%1$ sRENCE} und", ALL),  # no brace field: pieces
    # tags and entities
    ("<b>%s</b> saved", "%s gespeichert", ALL),
    ("<b>%s</b> of %d", "<b>%s von %d", ALL),
    ("Click <b>here</b>", "Hier </b> klicken", ALL),
    ("<i><b>x</b></i>", "<b><i>x</b></i>", ALL),
    ("<b>Bold</b> text", "< b>Fett</ b > Text", MARKUP),
    ("<b>Bold</b> text", "<b>Fett</b Text", MARKUP),
    ('<a href="%s">link</a>', '<a href="%S">Link</a>', ALL),
    ("Tom &amp; Jerry", "Tom & amp; Jerry", ALL),
    ("Tom &amp; Jerry &#160;x", "Tom &amp ; Jerry x &#160;", MARKUP),
    ("Usage: %s <file>", "Aufruf: %s <Datei>", ALL),
    # tabs and other controls stay where the repair touches them
    ("Name:\t%s", "Name:\t%z %s", ALL),
    ("Name:\t%s\tx", "Name %z\t%S\tx", ALL),
    ("a\t%s\x07", "a\t%d\x07", ALL),
    ("%s\t", "Datei\t", ALL),
    ("col1\tcol2 %d", "Spalte1\tSpalte2 %z\t%d", PRINTF),
    ("Name:\t%s", "Name:", ALL),
    ("%s\t%d\u3000%u", "\t%d", ALL),
    # unicode
    ("{größe} bytes", "{ größe } Bytes", BRACE),
    ("Größe: %s – fertig.", "Größe: –  %z fertig.", ALL),
    ("日本 %s", "日本 %z 語 %s", ALL),
    ("%s 😀 done", "😀 % s fertig", ALL),
    ("Ünïcödé %(näme)s", "Ünïcödé %(näme) s", PRINTF),
    # code-like text: issue 59's real outputs, stand-ins, the output's own, copied lines
    ("Use --removeall to clean", "Verwenden Sie --remove zum Aufräumen", ALL),
    ("Unlock the devices of /etc/crypttab.", "Entsperrt die Geräte von /cet/cryptrypt.", ALL),
    ("Report bugs at https://docs.xfce.org/apps/parole/bugs", "Fehler an ht://www.x.x/s/s/", ALL),
    ("Sample rates 44100 and 48000 Hz", "Abtastraten und Hz", ALL),
    ("Set NM_SETTING_DCB_FLAG_ENABLE", "Setze NM", CODE),
    ("Press <b>Apply</b> to save your settings", "Drücken Sie <A><b></b> Übernehmen", ALL),
    ("Press <b>Apply</b> to save your settings", "Drücken Sie <A><b></b> Übernehmen", MARKUP),
    ("Usage: %s <file>", "Aufruf: %s <Datei> <X>", MARKUP),
    ("Usage: foo <file> <dir>", "Aufruf: foo <Datei>", ALL),
    ("Read the config_file setting", "Lies die Config_File Einstellung", ALL),
    ("Between 2 and 5 threads", "Zwischen 2 und 6 Threads 6", ALL),
    ("Two files", "2 Dateien", ALL),
    ("Page 5 of 10", "Seite 5 von 10 10", CODE),
    ("--verbose : print verbose messages", "die ausführbar :", ALL),
    ("Clemens Ladisch <clemens@ladisch.de>", "Clemens Ladisch", ALL),
    ("Clemens Ladisch <clemens@ladisch.de>", "Clemens Ladisch", ALL - {"email"}),
    ("https://docs.xfce.org/apps/parole/", "https://docs.xfce.org/apps/", ALL),
    ("1.2.3", "1,2,3", CODE),
    ("%s: %s", "Datei %s: %s", PRINTF),
    ("Mail a@b.org or see ~/.x", "Schreiben Sie a@b.org an oder ~/.x ~/.x", ALL),
]


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_graph_repair_equals_protected_spans_repair():
    """The decoder's repair and the export's give the same string for the same hypothesis."""
    assert len(PARITY) >= 40
    for kinds in {kinds for _, _, kinds in PARITY}:
        rows = [(s, o) for s, o, k in PARITY if k == kinds]
        texts, changed = _repair([s for s, _ in rows], [o for _, o in rows], kinds)
        expected = [ps.restore(s, o, kinds) for s, o in rows]
        assert [(s, o, t) for (s, o), t in zip(rows, texts)] == \
            [(s, o, e.text) for (s, o), e in zip(rows, expected)]
        assert changed == [e.changed for e in expected]
        assert all(ps.kept_exactly(s, t, kinds) for (s, _), t in zip(rows, texts))


@pytest.mark.slow  # a graph traced for each of four kinds: the whole suite runs it
def test_graph_repair_equals_protected_spans_repair_on_strays_of_every_kind():
    """Random real references, mutated and sprinkled with the pieces a model leaves (strays,
    broken tags, tabs, controls, Unicode), under each kind alone and all: the same strings."""
    rng = random.Random(51)
    pairs = list(zip(_lines("source.en"), _lines("reference.de")))
    pairs += [("<b>%s</b> and <i>%d</i>", "<b>%s</b> und <i>%d</i>"),
              ("{name} has {count} {}", "{name} hat {count} {}"),
              ("Tom &amp; Jerry %1$s", "Tom &amp; Jerry %1$s"),
              ("100% of {0}\t%s", "100% von {0}\t%s")]
    bits = ["%", "%z", "% ", "%(x)", "%(n) d", "%<PRI", "{", "}", "{ x }", "< b>", "</b", "&amp ;",
            "\t", "\x07", "  ", ".", "%%", "%1$ s", "%S", "50% ", "ü", "😀", "%.0", "%*"]
    bits += [" 7", "-x", "/x", "a_b", "<A>", "x@y.de", "www.a.de", "2.0", "e.g.", "MaxSize"]
    pairs += [(line, line) for line in CODE_LINES]
    for kinds in (ALL, PRINTF, BRACE, MARKUP, CODE):
        sources, outputs = [], []
        for _ in range(150):
            source, reference = rng.choice(pairs)
            output = _mutate(rng, source, reference, kinds)
            for _ in range(rng.randint(1, 3)):
                at = rng.randint(0, len(output))
                output = output[:at] + rng.choice(bits) + output[at:]
            sources.append(source)
            outputs.append(output)
        texts, _ = _repair(sources, outputs, kinds)
        assert [(s, o, t) for s, o, t in zip(sources, outputs, texts)] == \
            [(s, o, ps.restore(s, o, kinds).text) for s, o in zip(sources, outputs)]
        assert all(ps.kept_exactly(s, t, kinds) for s, t in zip(sources, texts))
