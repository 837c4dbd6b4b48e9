"""What protecting each kind of code-like text costs or gains in BLEU, on held-out lines.

    .venv/bin/python bench/heldout_pairs.py --run_dir=R --model_dir=M --lines=3000
    .venv/bin/python -m t2t_lite.bin.decoder --model_dir=M --decode_from_file=R/test.src \\
        --decode_to_file=R/none.de --protect=none
    .venv/bin/python bench/code_spans.py --run_dir=R --translations=R/none.de [--out=R/code.json]

The decoder's protection is a repair after the search (protected_spans.restore on each
hypothesis), so one unprotected decode serves every setting: each row applies the repair with one
set of kinds to the "none" translations and scores them against the references (sacrebleu BLEU and
chrF). Per row: the lines that have a span of those kinds, the lines the repair changed, the lines
copied whole (a line of code alone), how many of the lines with spans the human reference keeps
exactly, and BLEU/chrF over all lines and over the lines with spans. Prints a table and writes the
JSON record to --out.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from t2t_lite.inference import code_spans, protected_spans, span_finding  # noqa: E402

FORMAT = frozenset(span_finding.FORMAT_KINDS)
CODE = frozenset(code_spans.CODE_KINDS)
ROWS = ([("none", frozenset()), ("format (printf, brace, markup)", FORMAT)]
        + [(kind, frozenset({kind})) for kind in code_spans.CODE_KINDS]
        + [("every code-like kind", CODE), ("auto (every kind)", FORMAT | CODE)])


def read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:  # a "\r" inside a line stays
        return [line[:-1] if line.endswith("\n") else line for line in f]


def scores(outputs, references):
    from sacrebleu.metrics import BLEU, CHRF

    if not outputs:
        return {"bleu": None, "chrf": None}
    return {"bleu": round(BLEU().corpus_score(outputs, [references]).score, 2),
            "chrf": round(CHRF().corpus_score(outputs, [references]).score, 2)}


def row(sources, references, raw, kinds):
    outputs = [protected_spans.restore(s, o, kinds).text if kinds else o
               for s, o in zip(sources, raw)]
    with_spans = [i for i, s in enumerate(sources)
                  if kinds and span_finding.find_spans(s, kinds)]
    copied = sum(1 for i in with_spans
                 if protected_spans.restore(sources[i], "\x07", kinds).text == sources[i])
    result = {"lines_with_spans": len(with_spans),
              "changed": sum(1 for o, r in zip(outputs, raw) if o != r),
              "copied": copied,
              "reference_keeps": sum(1 for i in with_spans
                                     if protected_spans.kept_exactly(sources[i], references[i],
                                                                     kinds)),
              "all": scores(outputs, references),
              "lines_with_spans_scores": scores([outputs[i] for i in with_spans],
                                                [references[i] for i in with_spans]),
              "unprotected_on_those": scores([raw[i] for i in with_spans],
                                             [references[i] for i in with_spans])}
    return result, outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run_dir", required=True, help="bench/heldout_pairs.py's folder")
    parser.add_argument("--translations", required=True, help="the --protect=none decode")
    parser.add_argument("--out", help="the JSON record to write")
    args = parser.parse_args()
    sources = read_lines(os.path.join(args.run_dir, "test.src"))
    references = read_lines(os.path.join(args.run_dir, "test.ref"))
    raw = read_lines(args.translations)
    if not len(sources) == len(references) == len(raw):
        sys.exit(f"error: {len(sources)} sources, {len(references)} references, "
                 f"{len(raw)} translations")
    table = {}
    print(f"{'kinds':32} {'lines':>5} {'changed':>7} {'copied':>6} {'ref keeps':>9} "
          f"{'BLEU':>6} {'chrF':>6}  {'BLEU on those lines (unprotected)':>34}")
    for name, kinds in ROWS:
        result, _ = row(sources, references, raw, kinds)
        table[name] = dict(result, kinds=sorted(kinds))
        those = result["lines_with_spans_scores"]["bleu"]
        before = result["unprotected_on_those"]["bleu"]
        print(f"{name:32} {result['lines_with_spans']:5} {result['changed']:7} "
              f"{result['copied']:6} {result['reference_keeps']:9} {result['all']['bleu']:6} "
              f"{result['all']['chrf']:6}  {those} ({before})")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"lines": len(sources), "rows": table}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
