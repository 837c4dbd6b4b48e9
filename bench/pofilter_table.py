"""pofilter's checks (translate-toolkit's library) on t2t-lite-po's outputs and on the humans'
catalogs of the same packages: failures per 1,000 translated entries, check by check.

    # a work folder of its own: the held-out catalogs linked in (outputs never land beside them)
    python bench/pofilter_table.py link --work_dir=W              (from /work/po-catalogs)
    # t2t-lite-po on every blanked catalog (bench/po_catalogs.py writes W/P/out.po)
    python bench/po_catalogs.py run --model_dir=M --work_dir=W --record_dir=R
    # the table, and its record
    python bench/pofilter_table.py table --work_dir=W [--record_dir=docs/records]

For each package of bench/data/po_catalogs_de.json with a W/P/out.po, both catalogs are judged by
one checker, configured as t2t-lite-po configures its judge (t2t_lite/po/review.py) from the
humans' catalog W/P/flagged.po: its Language, its accelerator mark (po/accelerators.convention:
the header's, else the mark its translations carry) and printf's one-character variables. Every
translated unit (fuzzy ones included, as pofilter includes them by default) goes through
translate-toolkit's StandardChecker.run_filters, pofilter's own entry point (so its
preconditions apply: an unchanged unit is not checked for repeated words), limited to the checks
t2t-lite-po guarantees (review.CHECKS) and pofilter's puncspacing, reported, not judged.
`table` prints the Markdown table (check, t2t-lite-po, the humans' catalogs, per 1,000 translated
entries; the entries left untranslated) and writes pofilter-table-CLASS-DATE.json (and .md).
"""
import argparse
import collections
import datetime
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import harness  # noqa: E402  (bench/harness.py: no TensorFlow at import)
import po_catalogs  # noqa: E402

from t2t_lite.po import catalog_file, review  # noqa: E402

REPORTED = review.CHECKS + ("puncspacing",)  # puncspacing: pofilter's, not one t2t-lite-po holds


def link(args):
    """W/P/{blank,flagged}.po as links to the fetched catalogs, for every listed package."""
    rows = po_catalogs.chosen(po_catalogs.read_list(args.list), args.only)
    for row in rows:
        folder = os.path.join(args.work_dir, row["package"])
        os.makedirs(folder, exist_ok=True)
        for name in ("blank.po", "flagged.po"):
            source = os.path.join(args.source_dir, row["package"], name)
            if not os.path.exists(source):
                po_catalogs.fail(f"{source} is missing: run bench/po_catalogs.py fetch first")
            target = os.path.join(folder, name)
            if not os.path.lexists(target):
                os.symlink(source, target)
    print(f"{len(rows)} catalogs linked into {args.work_dir}")


def checker_for(flagged_path):
    """The checker t2t-lite-po would configure from this catalog (review.Reviewer)."""
    catalog = catalog_file.read(flagged_path)
    return review.Reviewer.for_catalog(catalog.header_fields(), catalog.messages(),
                                       checks=REPORTED).checker


def judged(path, checker):
    """(translated units, Counter of failing checks, entries) of one catalog, as pofilter
    counts them."""
    from translate.storage import factory

    store = factory.getobject(path)
    translated, failures, entries = 0, collections.Counter(), 0
    for unit in store.units:
        if unit.isheader() or unit.isobsolete():
            continue
        entries += 1
        if not any(str(form) for form in (unit.target.strings if unit.hasplural()
                                          else [unit.target])):
            continue
        translated += 1
        failures.update(name for name in checker.run_filters(unit) if name in REPORTED)
    return translated, failures, entries


def per_thousand(count, translated):
    return round(1000.0 * count / translated, 1) if translated else None


def table(args):
    rows = po_catalogs.chosen(po_catalogs.read_list(args.list), args.only)
    sides = {"output": collections.Counter(), "humans": collections.Counter()}
    totals = {"output": 0, "humans": 0}
    entries = 0
    per_package = []
    for row in rows:
        folder = os.path.join(args.work_dir, row["package"])
        output = os.path.join(folder, "out.po")
        if not os.path.exists(output):
            continue
        checker = checker_for(os.path.join(folder, "flagged.po"))
        ours, our_failures, count = judged(output, checker)
        theirs, their_failures, _ = judged(os.path.join(folder, "flagged.po"), checker)
        entries += count
        totals["output"] += ours
        totals["humans"] += theirs
        sides["output"].update(our_failures)
        sides["humans"].update(their_failures)
        per_package.append({"package": row["package"], "entries": count, "translated": ours,
                            "humans_translated": theirs,
                            "accelerator_mark": checker.config.accelmarkers[:1] or None,
                            "failures": dict(our_failures),
                            "humans_failures": dict(their_failures)})
    if not per_package:
        po_catalogs.fail(f"no out.po under {args.work_dir}: run bench/po_catalogs.py run first")
    lines = ["| check | t2t-lite-po | the humans' catalogs |", "|---|---:|---:|"]
    values = {}
    for name in sorted(REPORTED, key=lambda n: (-sides["output"][n], n)):
        ours = per_thousand(sides["output"][name], totals["output"])
        theirs = per_thousand(sides["humans"][name], totals["humans"])
        values[name] = {"t2t_lite_po": ours, "humans": theirs}
        note = " (reported, not judged)" if name not in review.CHECKS else ""
        lines.append(f"| {name}{note} | {ours} | {theirs} |")
    judged_names = review.CHECKS
    all_ours = per_thousand(sum(sides["output"][n] for n in judged_names), totals["output"])
    all_theirs = per_thousand(sum(sides["humans"][n] for n in judged_names), totals["humans"])
    lines.append(f"| all {len(judged_names)} judged checks | {all_ours} | {all_theirs} |")
    left = entries - totals["output"]
    text = "\n".join(lines) + (
        f"\n\n{len(per_package)} catalogs, {entries} entries: t2t-lite-po translated "
        f"{totals['output']} ({left} left untranslated, {100.0 * left / entries:.2f}%), the "
        f"humans {totals['humans']}.\n")
    print(text)
    _record(args, text, values, all_ours, all_theirs, entries, totals, per_package)


def _record(args, text, values, all_ours, all_theirs, entries, totals, per_package):
    flags, cpu, cpu_tag = po_catalogs.cpu_class()
    date = datetime.date.today().isoformat()
    head, dirty = po_catalogs.commit()
    record_dir = args.record_dir or os.path.join(args.work_dir, "records")
    os.makedirs(record_dir, exist_ok=True)
    record_id = f"pofilter-table-{cpu_tag}-{date}"
    record = {
        "id": record_id,
        "what": "translate-toolkit's checks (pofilter's run_filters, translate-toolkit 3.20.4) "
                "on t2t-lite-po's outputs and on the humans' catalogs of the same held-out "
                "packages, failures per 1,000 translated entries (bench/pofilter_table.py)",
        "command": "python bench/pofilter_table.py " + " ".join(sys.argv[1:]),
        "date": date, "cpu_class": cpu, "cpu_flags": flags,
        "load_before": harness.load_note(), "commit": head, "commit_is": "measured",
        "uncommitted": dirty,
        "values": {"per_1000": values, "all_judged": {"t2t_lite_po": all_ours,
                                                      "humans": all_theirs},
                   "catalogs": len(per_package), "entries": entries,
                   "translated": totals["output"], "humans_translated": totals["humans"],
                   "left_untranslated": entries - totals["output"],
                   "per_catalog": per_package},
    }
    po_catalogs.write_record(record_dir, record_id, record, text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("link", "table"))
    parser.add_argument("--list", default=po_catalogs.LIST, help="the catalog list (JSON)")
    parser.add_argument("--work_dir", required=True, help="the folder of P/out.po outputs")
    parser.add_argument("--source_dir", default=po_catalogs.WORK_DIR,
                        help="link: where bench/po_catalogs.py fetch put the catalogs")
    parser.add_argument("--only", help="a comma list of packages")
    parser.add_argument("--record_dir", help="table: where the record goes (default: "
                        "WORK_DIR/records)")
    args = parser.parse_args(argv)
    {"link": link, "table": table}[args.command](args)


if __name__ == "__main__":
    main()
