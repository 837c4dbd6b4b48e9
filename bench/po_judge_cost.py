"""What translate-toolkit's checks (t2t-lite-po's second judge, po/review.py) cost in entries/s:
t2t-lite-po on the same held-out catalogs with the judge and without it, in alternating rounds.

    python bench/po_catalogs.py fetch                       # once: the catalogs, digests checked
    python bench/po_judge_cost.py --model_dir=M [--only=hello,pv,...] [--rounds=2] [--output=R]

Each round translates every chosen catalog's blank.po in this process (t2t_lite.po.run
.translate_catalog, the model loaded once per catalog as the CLI loads it) twice: as shipped
("judge"), and with the reviewer given no checks ("no judge": msgfmt's reading alone). The judge's
cost is both its own time and the decoding it causes (a hypothesis it refuses sends the line to
the n-best and the forced attempts). entries/s is entries over wall seconds, the fastest of the
rounds; each arm's catalogs must be the same in every round (but for PO-Revision-Date). Prints a
Markdown table and writes a JSON record (default bench/results/po-judge-cost-<date>.json).
"""
import argparse
import datetime
import io
import json
import os
import sys
import tempfile
import time

import harness

harness.tensorflow_env()

sys.path.insert(0, harness.ROOT)

import po_catalogs  # noqa: E402
from constrained_decoding import commit, cpu_class, cpu_flags  # noqa: E402

from t2t_lite.po import review  # noqa: E402
from t2t_lite.po import run as po_run  # noqa: E402

DEFAULT = "hello,pv,sysstat,gnome-mines,iagno,kteatime,apt-listchanges,catfish"
ARMS = ("judge", "no judge")


def translate(arm, blank, output, model_dir):
    """(seconds, stats, the output's bytes) of one t2t-lite-po run in this process."""
    original = review.Reviewer.for_catalog
    if arm == "no judge":
        review.Reviewer.for_catalog = classmethod(
            lambda cls, fields, messages, target=None, checks=(): original(fields, messages,
                                                                          target, checks=()))
    try:
        started = time.perf_counter()
        stats = po_run.translate_catalog(po_run.PoOptions(input=blank, output=output,
                                                          model_dir=model_dir),
                                         progress=io.StringIO())
        seconds = time.perf_counter() - started
    finally:
        review.Reviewer.for_catalog = original
    with open(output, "rb") as f:
        return seconds, stats, f.read()


def without_revision_date(data):
    """A catalog's bytes less its PO-Revision-Date line (t2t-lite-po sets it to the minute)."""
    return b"".join(line for line in data.splitlines(keepends=True)
                    if not line.startswith(b'"PO-Revision-Date:'))


def measure(rows, args, work):
    results = {arm: {} for arm in ARMS}
    for number in range(args.rounds):
        arms = ARMS if number % 2 == 0 else ARMS[::-1]  # a shared machine's load moves
        for row in rows:
            blank = os.path.join(args.catalogs, row["package"], "blank.po")
            for arm in arms:
                output = os.path.join(work, f"{row['package']}-{arm.replace(' ', '_')}-{number}.po")
                seconds, stats, data = translate(arm, blank, output, args.model_dir)
                data = without_revision_date(data)
                seen = results[arm].get(row["package"])
                if seen is not None and seen["data"] != data:
                    po_catalogs.fail(f"{row['package']} ({arm}): round {number + 1} wrote "
                                     "another catalog than round 1")
                left = sum(stats.left_untranslated.values())
                best = min(seconds, seen["seconds"]) if seen else seconds
                results[arm][row["package"]] = {"data": data, "seconds": best,
                                                "entries": stats.entries, "left": left}
                print(f"  round {number + 1}/{args.rounds} {row['package']} ({arm}): "
                      f"{stats.entries} entries, {seconds:.1f}s, {left} left", flush=True)
    return results


def summary(results):
    out = {}
    for arm in ARMS:
        entries = sum(r["entries"] for r in results[arm].values())
        seconds = sum(r["seconds"] for r in results[arm].values())
        left = sum(r["left"] for r in results[arm].values())
        out[arm] = {"entries": entries, "seconds": round(seconds, 1),
                    "entries_per_s": round(entries / seconds, 2),
                    "left_untranslated": left,
                    "left_percent": round(100 * left / entries, 1)}
    out["judge_cost"] = round(1 - out["judge"]["entries_per_s"]
                              / out["no judge"]["entries_per_s"], 3)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--catalogs", default=po_catalogs.WORK_DIR,
                        help="bench/po_catalogs.py's work_dir (P/blank.po per package)")
    parser.add_argument("--list", default=po_catalogs.LIST)
    parser.add_argument("--only", default=DEFAULT, help="a comma list of packages")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--output", help="the JSON record")
    args = parser.parse_args()
    rows = po_catalogs.chosen(po_catalogs.read_list(args.list), args.only)
    record = {"date": datetime.date.today().isoformat(), "cpu_class": cpu_class(cpu_flags()),
              "cpus": os.cpu_count(), **commit(), "model_dir": args.model_dir,
              "packages": [row["package"] for row in rows], "rounds": args.rounds,
              "load_before": harness.load_note()}
    with tempfile.TemporaryDirectory(prefix="po-judge-cost-") as work:
        results = measure(rows, args, work)
    record["values"] = summary(results)
    record["per_catalog"] = {arm: {p: {k: v for k, v in r.items() if k != "data"}
                                   for p, r in results[arm].items()} for arm in ARMS}
    record["load_after"] = harness.load_note()
    values = record["values"]
    print("\n| arm | entries | seconds | entries/s | left untranslated |\n|---|---|---|---|---|")
    for arm in ARMS:
        v = values[arm]
        print(f"| {arm} | {v['entries']} | {v['seconds']} | {v['entries_per_s']} | "
              f"{v['left_untranslated']} ({v['left_percent']}%) |")
    print(f"judge's cost: {100 * values['judge_cost']:.1f}% of entries/s; {record['cpu_class']}, "
          f"{record['date']}, {record['load_after']}")
    output = args.output or os.path.join(harness.ROOT, "bench", "results",
                                         f"po-judge-cost-{record['date']}.json")
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"record: {output}")


if __name__ == "__main__":
    main()
