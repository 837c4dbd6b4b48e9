"""Format strings the model never saw: a held-out EN->DE test set, and how often a decoder keeps them.

    # build: German catalogs of Debian packages NOT installed here (the gettext problem trains on
    # /usr/share/locale, so an installed package's messages are training data)
    .venv/bin/python bench/format_strings.py --build --out_dir=bench/data/format_strings_de
    # measure: t2t-lite-decoder with --protect=none and --protect=auto
    .venv/bin/python bench/format_strings.py --measure --model_dir=M --data=bench/data/format_strings_de

--build downloads (apt-get download) PACKAGES into --cache_dir, refuses any that dpkg says is
installed, reads each .deb's usr/share/locale/de/LC_MESSAGES/*.mo with polib, and keeps the
non-plural entries whose msgid has printf or brace specifiers (span_finding.find_spans) and whose
msgstr is non-empty. A line file holds one line per message, so a trailing newline is stripped from
both sides and messages with a newline or tab inside are left out; a msgid that also appears in a
catalog on this machine (/usr/share/locale/de, what the gettext problem reads: shared gnulib
messages, for instance) is left out too, and so is a repeated msgid (the first package in PACKAGES
order keeps it). At most --max_lines lines, a seeded sample (then sorted back into catalog order).
Written: D/source.en, D/reference.de (line-aligned), D/packages.txt (package, version, sha256 of
the .deb, catalogs, lines kept) and D/README.txt (the counts).

--measure runs the real CLI (sys.executable -m t2t_lite.bin.decoder) on D/source.en twice,
with --protect=none and --protect=auto, and prints one JSON line and a table: for each run and for
the human references, the share of lines whose specifiers are kept exactly
(protected_spans.kept_exactly with every kind), and each run's BLEU against the references
(sacrebleu); also the "none" run's output after protected_spans.restore alone (the repair with no
constrained search: kept by construction, so its BLEU is the one to beat), and after
graph_spans.repair, the TF-op repair an export's serving signatures run. A decoder without the --protect flag gets the "none" run without it, and the "auto"
run is reported as unavailable.
"""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import harness  # noqa: E402  (bench/harness.py: no TensorFlow at import)
from t2t_lite.inference import protected_spans, span_finding  # noqa: E402  (pure Python)

# Debian 12 packages with a German catalog, none installed on the machine the set was built on.
PACKAGES = (
    "mc-data", "cpio", "gawk", "nano", "sudo", "m4", "util-linux-locales", "mutt",
    "aptitude-common", "bison", "texinfo", "xfsprogs", "a2ps", "enscript", "sharutils", "recode",
    "indent", "kbd", "flex", "wdiff", "quota", "dialog", "acl", "attr", "aspell", "gnuchess",
)
SPECIFIER_KINDS = frozenset({"printf", "brace"})
ALL_KINDS = frozenset(span_finding.FORMAT_KINDS)  # the format strings this bench measures
LOCAL_CATALOGS = "/usr/share/locale/de/LC_MESSAGES"
SEED = 43


def installed(package):
    """True unless dpkg says the package is not installed (or only its config files remain)."""
    result = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", package],
                            capture_output=True, text=True)
    return result.returncode == 0 and result.stdout.strip() not in ("", "not-installed",
                                                                    "config-files")


def download(package, cache_dir):
    """The path of the package's .deb in cache_dir, downloaded with apt-get download if absent."""
    debs = glob.glob(os.path.join(cache_dir, f"{package}_*.deb"))
    if not debs:
        result = subprocess.run(["apt-get", "download", package], cwd=cache_dir,
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"error: apt-get download {package} failed:\n{result.stderr}")
        debs = glob.glob(os.path.join(cache_dir, f"{package}_*.deb"))
    if len(debs) != 1:
        raise SystemExit(f"error: expected one {package} .deb in {cache_dir}, found {debs}")
    return debs[0]


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True,
                          check=True).stdout.strip()




def german_catalogs(deb, into):
    """Paths of the German .mo files inside a .deb, extracted under `into`."""
    subprocess.run(["dpkg-deb", "-x", deb, into], check=True)
    return sorted(glob.glob(os.path.join(into, "usr/share/locale/de/LC_MESSAGES/*.mo")))


def messages(path):
    """(msgid, msgstr) of a .mo's non-plural entries, as single lines, or skipped."""
    import polib
    for entry in polib.mofile(path):
        if not entry.msgid or entry.msgid_plural or not entry.msgstr.strip():
            continue
        source, target = entry.msgid.strip("\n"), entry.msgstr.strip("\n")
        if any(c in side for side in (source, target) for c in "\n\t\r"):
            continue
        yield source, target


def local_msgids():
    import polib
    seen = set()
    for path in glob.glob(os.path.join(LOCAL_CATALOGS, "*.mo")):
        seen.update(entry.msgid.strip("\n") for entry in polib.mofile(path))
    return seen


def build(args):
    os.makedirs(args.cache_dir, exist_ok=True)
    os.makedirs(args.out_dir, exist_ok=True)
    refused = [p for p in PACKAGES if installed(p)]
    if refused:
        raise SystemExit(f"error: installed here, so their catalogs are training data: {refused}")
    local = local_msgids()
    pairs, seen, rows, skipped_local = [], set(), [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for package in PACKAGES:
            deb = download(package, args.cache_dir)
            catalogs = german_catalogs(deb, os.path.join(tmp, package))
            local_clash = [os.path.basename(c) for c in catalogs
                           if os.path.exists(os.path.join(LOCAL_CATALOGS, os.path.basename(c)))]
            if local_clash:
                raise SystemExit(f"error: {package}'s catalogs {local_clash} are also installed "
                                 f"under {LOCAL_CATALOGS}")
            kept = 0
            for catalog in catalogs:
                for source, target in messages(catalog):
                    if source in seen or not span_finding.find_spans(source, SPECIFIER_KINDS):
                        continue
                    seen.add(source)
                    if source in local:
                        skipped_local += 1
                        continue
                    pairs.append((source, target))
                    kept += 1
            rows.append(f"{package}\t{deb_field(deb, 'Version')}\t{harness.file_sha256(deb)}\t"
                        f"{','.join(os.path.basename(c) for c in catalogs)}\t{kept}")
    total = len(pairs)
    if total > args.max_lines:
        chosen = sorted(random.Random(SEED).sample(range(total), args.max_lines))
        pairs = [pairs[i] for i in chosen]
    for name, lines in (("source.en", [s for s, _ in pairs]),
                        ("reference.de", [t for _, t in pairs]),
                        ("packages.txt", ["# package\tversion\tsha256 of the .deb\tcatalogs\t"
                                          "candidate lines"] + rows)):
        with open(os.path.join(args.out_dir, name), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    kept_refs = sum(protected_spans.kept_exactly(s, t, ALL_KINDS) for s, t in pairs)
    readme = (f"Held-out EN->DE format strings, written by bench/format_strings.py --build.\n"
              f"{len(pairs)} lines (seeded sample, seed {SEED}, of {total} candidates) from "
              f"{len(PACKAGES)} Debian packages not installed where it was built (packages.txt);\n"
              f"{skipped_local} msgids left out because a catalog under {LOCAL_CATALOGS} has them.\n"
              f"Human references keeping their specifiers exactly: {kept_refs}/{len(pairs)}.\n")
    with open(os.path.join(args.out_dir, "README.txt"), "w", encoding="utf-8") as f:
        f.write(readme)
    print(readme, end="")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def decode(args, source, protect, out_path):
    """Runs t2t-lite-decoder; False when it has no --protect flag (then run again without it)."""
    model = ([f"--model_dir={args.model_dir}"] if args.model_dir
             else [f"--export_dir={args.export_dir}"])
    command = [sys.executable, "-m", "t2t_lite.bin.decoder", *model,
               f"--decode_from_file={source}", f"--decode_to_file={out_path}", "--start_over"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(command + [f"--protect={protect}"] + args.decoder_flag,
                            capture_output=True, text=True, env=env)
    if result.returncode != 0 and "protect" in result.stderr and "flag" in result.stderr.lower():
        if protect != "none":
            return False
        result = subprocess.run(command + args.decoder_flag, capture_output=True, text=True,
                                env=env)
    if result.returncode != 0:
        raise SystemExit(f"error: the decoder failed ({' '.join(command)}):\n"
                         f"{result.stderr[-3000:]}")
    return True


def kept_share(sources, outputs):
    kept = sum(protected_spans.kept_exactly(s, o, ALL_KINDS) for s, o in zip(sources, outputs))
    return kept, round(kept / len(sources), 4)


def graph_repair(sources, outputs):
    """The outputs as an export's serving signatures repair them (graph_spans.repair)."""
    import tensorflow as tf
    from t2t_lite.inference import graph_spans
    repaired, _ = tf.function(lambda s, o: graph_spans.repair(s, o, ALL_KINDS), autograph=False)(
        tf.constant(sources), tf.constant(outputs))
    return [text.decode("utf-8") for text in repaired.numpy()]


def measure(args):
    import sacrebleu
    source_path = os.path.join(args.data, "source.en")
    sources = read_lines(source_path)
    references = read_lines(os.path.join(args.data, "reference.de"))
    kept, share = kept_share(sources, references)
    result = {"lines": len(sources), "reference": {"kept": kept, "kept_share": share}}
    work = tempfile.mkdtemp(prefix="format_strings_")
    try:
        for protect in ("none", "auto"):
            out_path = os.path.join(work, f"out.{protect}.de")
            if not decode(args, source_path, protect, out_path):
                result[protect] = {"unavailable": "the decoder has no --protect flag"}
                continue
            outputs = read_lines(out_path)
            if len(outputs) != len(sources):
                raise SystemExit(f"error: {len(outputs)} output lines for {len(sources)} inputs")
            kept, share = kept_share(sources, outputs)
            bleu = sacrebleu.corpus_bleu(outputs, [references])
            result[protect] = {"kept": kept, "kept_share": share, "bleu": round(bleu.score, 2)}
            if protect == "none":  # the repair alone, after an unprotected search
                repaired = [protected_spans.restore(s, o, ALL_KINDS).text
                            for s, o in zip(sources, outputs)]
                kept, share = kept_share(sources, repaired)
                bleu = sacrebleu.corpus_bleu(repaired, [references])
                result["none+restore"] = {"kept": kept, "kept_share": share,
                                          "bleu": round(bleu.score, 2)}
                # What an export's text signatures run instead (graph_spans.repair, TF ops).
                repaired = graph_repair(sources, outputs)
                kept, share = kept_share(sources, repaired)
                bleu = sacrebleu.corpus_bleu(repaired, [references])
                result["none+graph_repair"] = {"kept": kept, "kept_share": share,
                                               "bleu": round(bleu.score, 2)}
            if args.keep_outputs:
                shutil.copy(out_path, os.path.join(args.keep_outputs, f"out.{protect}.de"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, sort_keys=True))
    print(f"{'run':<24}{'kept exactly':>14}{'share':>9}{'BLEU':>8}")
    for name in ("reference", "none", "none+restore", "none+graph_repair", "auto"):
        row = result.get(name)
        if row is None:
            continue
        label = {"reference": "human reference",
                 "none+restore": "--protect=none, restore()",
                 "none+graph_repair": "--protect=none, graph"}.get(name, f"--protect={name}")
        if "unavailable" in row:
            print(f"{label:<24}  {row['unavailable']}")
            continue
        bleu = f"{row['bleu']:8.2f}" if "bleu" in row else f"{'':>8}"
        print(f"{label:<24}{row['kept']:>8}/{len(sources):<5}{row['kept_share']:>9.1%}{bleu}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--measure", action="store_true")
    parser.add_argument("--out_dir", default=os.path.join(ROOT, "bench/data/format_strings_de"))
    parser.add_argument("--cache_dir",
                        default=os.path.expanduser("~/.cache/t2t_lite/format_strings_debs"))
    parser.add_argument("--max_lines", type=int, default=1000)
    parser.add_argument("--data", default=os.path.join(ROOT, "bench/data/format_strings_de"))
    parser.add_argument("--model_dir")
    parser.add_argument("--export_dir")
    parser.add_argument("--decoder_flag", action="append", default=[],
                        help="an extra decoder flag, e.g. --decoder_flag=--beam_size=4 (repeatable)")
    parser.add_argument("--keep_outputs", help="a folder to copy each run's translations to")
    args = parser.parse_args()
    if args.build == args.measure:
        parser.error("give one of --build or --measure")
    if args.measure and bool(args.model_dir) == bool(args.export_dir):
        parser.error("--measure needs one of --model_dir or --export_dir")
    build(args) if args.build else measure(args)


if __name__ == "__main__":
    main()
