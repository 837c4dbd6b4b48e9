"""The checks each translated line goes through after the search, before it is written.

    repair_spans(...)        every hypothesis's protected spans kept exactly
                             (protected_spans.restore); lines with spans and repairs counted
    count_constraints(...)   whether each constrained line's best output keeps its phrases

batch_decode.decode_lines runs them in this order, so a line's constraints are judged on the
output as it is written: after the span repair. Both add to a batch_decode.DecodeStats.
"""
from t2t_lite.inference import constraints as constraints_lib
from t2t_lite.inference import protected_spans, span_finding


def repair_spans(texts, results, kinds, stats, repaired):
    """results with every line's protected spans (protected_spans.py) kept exactly: each
    hypothesis goes through protected_spans.restore, which repairs what the search changed
    (on held-out format strings this scored higher BLEU than searching again with the lost
    spans forced in: a span's subwords in context rarely match its own tokenization), and
    removes a span the model invented where the source has none, as the export's repair does.
    repaired[i] is set to whether line i's best translation changed."""
    for i, text in enumerate(texts):
        if not results[i]:
            continue
        restored = [(protected_spans.restore(text, output, kinds), score)
                    for output, score in results[i]]
        best = restored[0][0]
        if span_finding.find_spans(text, kinds) or best.changed:
            stats.protected += 1
            stats.protect_repaired += best.changed
        repaired[i] = best.changed
        results[i] = [(fixed.text, score) for fixed, score in restored]
    return results


def count_constraints(stats, constraints, results):
    """Counts every line once (stats.constrained, stats.constraints_unmet): a line with
    constraints whose best output (as written: after the span repair) keeps them all as whole
    words (constraints.unmet_phrases), or could not; a line without is not constrained. A
    source with no tokens gives "", which keeps no positive phrase. Returns, per line, None (no
    constraints) or whether it met them all."""
    met = [None] * len(results)
    for i, (line, hypotheses) in enumerate(zip(constraints or (), results)):
        if not line.strip():
            continue
        stats.constrained += 1
        text = hypotheses[0][0] if hypotheses else ""
        met[i] = not constraints_lib.unmet_phrases(text, line)
        stats.constraints_unmet += not met[i]
    return met
