"""English-German test pairs the demo's model never saw, from the held-out catalogs of
bench/po_catalogs.py: a run folder bench/constrained_decoding.py reads as it reads the demo's.

    .venv/bin/python bench/po_catalogs.py fetch              # once: the catalogs, digests checked
    .venv/bin/python bench/heldout_pairs.py --run_dir=R --model_dir=M [--lines=3000] [--seed=5]
    .venv/bin/python bench/constrained_decoding.py --run_dir=R --model_dir=M --no_cost

Each fetched catalog's original.po (the human translation, msgunfmt of the package's .mo) is read
with t2t_lite's PO reader; a pair is a translated singular entry without a context whose msgid has
at least 2 words and no line break, and whose msgstr has no line break and no character the
model's SentencePiece vocabulary lacks (a phrase with such a character is refused by the decoder,
so a line of the evaluation could not carry it). Pairs are shuffled with --seed and each msgid is
kept once; the first --lines go to R/test.src and R/test.ref, and R/results.json names the
model's trained steps (copied from M's run folder when there is one).
"""
import argparse
import glob
import json
import os
import random
import sys

import harness

sys.path.insert(0, harness.ROOT)

from t2t_lite.po import catalog_file  # noqa: E402

CATALOGS = "/work/po-catalogs"


def pairs_of(path):
    """[(msgid, msgstr)] of one catalog's usable entries (see the module docstring)."""
    found = []
    for entry in catalog_file.read(path).messages():
        if (entry.msgctxt is None and entry.msgid_plural is None and entry.msgstr
                and "\n" not in entry.msgid + entry.msgstr and len(entry.msgid.split()) >= 2):
            found.append((entry.msgid, entry.msgstr))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run_dir", required=True, help="the folder to write")
    parser.add_argument("--model_dir", required=True, help="its vocabulary filters the pairs")
    parser.add_argument("--catalogs", default=CATALOGS, help="bench/po_catalogs.py's work_dir")
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    import sentencepiece

    vocab = glob.glob(os.path.join(args.model_dir, "*.spm.model"))
    if not vocab:
        sys.exit(f"error: no SentencePiece model (*.spm.model) in {args.model_dir}")
    pieces = sentencepiece.SentencePieceProcessor(model_file=vocab[0])
    catalogs = sorted(glob.glob(os.path.join(args.catalogs, "*", "original.po")))
    if not catalogs:
        sys.exit(f"error: no catalogs in {args.catalogs}; run bench/po_catalogs.py fetch first")
    pairs = [pair for path in catalogs for pair in pairs_of(path)]
    random.Random(args.seed).shuffle(pairs)
    chosen, seen = [], set()
    for source, target in pairs:
        if source not in seen and pieces.unk_id() not in pieces.encode(target):
            seen.add(source)
            chosen.append((source, target))
        if len(chosen) == args.lines:
            break
    os.makedirs(args.run_dir, exist_ok=True)
    for name, column in (("test.src", 0), ("test.ref", 1)):
        with open(os.path.join(args.run_dir, name), "w", encoding="utf-8") as f:
            f.writelines(pair[column] + "\n" for pair in chosen)
    results = os.path.join(os.path.dirname(os.path.abspath(args.model_dir)), "results.json")
    if os.path.exists(results):
        with open(results) as f, open(os.path.join(args.run_dir, "results.json"), "w") as out:
            json.dump(json.load(f), out)
    print(f"{len(chosen)} pairs from {len(catalogs)} catalogs ({len(pairs)} usable entries) "
          f"in {args.run_dir}")


if __name__ == "__main__":
    main()
