"""graph_spans: the TF string-op twin of protected_spans that exports run under TF Serving.

Its finder must find what protected_spans.find_spans finds (on real catalog lines: the held-out
format strings of bench/data and the inlined table of test_protected_spans), and its repair must
leave every output keeping its spans, as protected_spans.kept_exactly (the independent judge)
reads them."""
import functools
import os
import random

import pytest
import tensorflow as tf

from t2t_lite.inference import graph_spans
from t2t_lite.inference import protected_spans as ps
from tests.inference.test_protected_spans import REAL, _mutate

ALL = frozenset(ps.KINDS)
HELD_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "data",
                        "format_strings_de")
EDGES = ["% d and % 5i", "% dx, % d, and % d%s", "100 % done, 50% of them", "%", "{", "<", "&",
         "Usage: %s <file> [<link>] AT&T", '<a href="%s">link</a>', "{größe} {0:<b>}</b>",
         "<b>x</b> <br/> <br> <hr class=a> &amp; &#160; &#x1F600;", "<p>\u00a0</p>", "",
         "{{literal}} and a stray }", "%1$s %2$d %% %(name)s %'d %I64d %<PRIu64> %Id"]


def _lines(name):
    with open(os.path.join(HELD_OUT, name), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _texts():
    table = [text for _, msgid, msgstr, _ in REAL for text in (msgid, msgstr)]
    return table + EDGES + _lines("source.en") + _lines("reference.de")


def find_all(texts, kinds):
    """Each text's spans as graph_spans finds them (one traced map over all the texts)."""
    @tf.function(autograph=False)
    def joined(batch):
        return tf.map_fn(lambda text: tf.strings.reduce_join(graph_spans.find(text, kinds),
                                                             separator="\x03"), batch)
    return [[span for span in row.decode().split("\x03") if span]
            for row in joined(tf.constant(texts)).numpy()]


@pytest.mark.parametrize("kinds", [ALL, frozenset({"printf"}), frozenset({"brace"}),
                                   frozenset({"markup"}), frozenset({"printf", "brace"})],
                         ids=lambda k: ",".join(sorted(k)))
def test_finder_equals_protected_spans(kinds):
    texts = _texts()
    assert len(texts) > 2000
    found = find_all(texts, kinds)
    mismatches = [(text, graph, [s.text for s in ps.find_spans(text, kinds)])
                  for text, graph in zip(texts, found)
                  if graph != [s.text for s in ps.find_spans(text, kinds)]]
    assert mismatches == []
    assert sum(map(len, found)) > 40  # the lines do hold spans of these kinds


@functools.lru_cache(maxsize=None)
def _traced_repair(kinds):
    """graph_spans.repair over a batch of any size, traced once per `kinds` for every test (as
    an export's signature holds it: a batch of unknown size)."""
    batch = tf.TensorSpec([None], tf.string)
    return tf.function(lambda s, o: graph_spans.repair(s, o, kinds), autograph=False,
                       input_signature=[batch, batch])


def _repair(sources, outputs, kinds=ALL):
    fn = _traced_repair(kinds)
    texts, changed = fn(tf.constant(sources, tf.string), tf.constant(outputs, tf.string))
    return [t.decode() for t in texts.numpy()], changed.numpy().tolist()


@pytest.mark.parametrize("source,output,expected", [
    ("File %s not found.", "Datei %s nicht gefunden.", "Datei %s nicht gefunden."),  # kept
    ("File %s not found.", "Datei nicht gefunden.", "Datei nicht gefunden %s."),      # missing
    ("%s of %d", "%d von %s", "%s von %d"),                  # unnumbered ones keep their order
    ("%1$s of %2$d", "%2$d von %1$s", "%2$d von %1$s"),      # positional ones may move
    ("{name} has {count}", "{count} hat {name}", "{count} hat {name}"),
    ("Error: %s", "Fehler: %S", "Fehler: %s"),               # a mangled copy, in place
    ("Error: %s", "Fehler: %s %s", "Fehler: %s"),            # a surplus one is dropped
    ("<b>%s</b> saved", "%s gespeichert", "<b> gespeichert %s</b>"),  # the k-th for the k-th
    ("50% of %d", "50% von %d", "50% von %d"),               # prose percent is not a span
    ("", "", ""),
])
def test_repair_cases(source, output, expected):
    texts, changed = _repair([source], [output])
    assert texts == [expected]
    assert changed == [expected != output]
    assert ps.kept_exactly(source, texts[0], ALL)


def test_repair_keeps_spans_on_random_mutations_of_real_references():
    rng = random.Random(46)
    pairs = list(zip(_lines("source.en"), _lines("reference.de")))
    sources, outputs = [], []
    for _ in range(1500):
        source, reference = rng.choice(pairs)
        sources.append(source)
        outputs.append(_mutate(rng, source, reference))
    texts, changed = _repair(sources, outputs)
    broken = [(s, o, t) for s, o, t in zip(sources, outputs, texts)
              if not ps.kept_exactly(s, t, ALL)]
    assert broken == []
    for output, text, was_changed in zip(outputs, texts, changed):
        assert was_changed == (text != output)
    kept_already = [ps.kept_exactly(s, o, ALL) for s, o in zip(sources, outputs)]
    assert all(t == o for t, o, k in zip(texts, outputs, kept_already) if k)
    assert sum(changed) > 1000
    # Repairing a repaired output changes nothing.
    again, changed_again = _repair(sources, texts)
    assert again == texts and not any(changed_again)


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


def test_kinds_narrow_the_repair():
    texts, _ = _repair(["%s and {name}"], ["und"], frozenset({"brace"}))
    assert texts == ["und {name}"]
    texts, changed = _repair(["%s"], ["x"], frozenset())
    assert texts == ["x"] and changed == [False]
