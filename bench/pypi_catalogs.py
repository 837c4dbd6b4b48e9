"""German catalogs shipped inside PyPI packages, with the flags their authors' extractors set
(`python-format`, `python-brace-format`, `javascript-format`), blanked for t2t-lite-po.

    # once, where the list is chosen: pip download, digests, counts -> the list
    python bench/pypi_catalogs.py build
    # anywhere: pip download exactly the listed files (--require-hashes), extract, blank
    python bench/pypi_catalogs.py fetch --work_dir=W
    # then, as for the Debian catalogs (the same list format, the same checks):
    python bench/po_catalogs.py run --list=bench/data/pypi_catalogs_de.json --work_dir=W ...
    python bench/pofilter_table.py table --list=bench/data/pypi_catalogs_de.json --work_dir=W

Unlike the Debian catalogs (.mo files turned back into PO, their flags restored by xgettext),
these are the PO files as their projects ship them: comments, references and flags intact. Per
catalog, W/P/flagged.po is the file from the package (its sha256 on the list) and W/P/blank.po
the same with every msgstr emptied. The packages are not committed: the list
(bench/data/pypi_catalogs_de.json) names each distribution file and its sha256, and `fetch`
downloads them with `pip download --no-deps --require-hashes`.
"""
import argparse
import collections
import datetime
import os
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import harness  # noqa: E402
import po_catalogs  # noqa: E402

LIST = os.path.join(ROOT, "bench", "data", "pypi_catalogs_de.json")
# (catalog name, distribution, version, the .po inside its wheel)
CATALOGS = (
    ("deform", "deform", "2.0.15", "deform/locale/de/LC_MESSAGES/deform.po"),
    ("colander", "colander", "2.0", "colander/locale/de/LC_MESSAGES/colander.po"),
    ("django", "django", "5.2.9", "django/conf/locale/de/LC_MESSAGES/django.po"),
    ("django-admin", "django", "5.2.9", "django/contrib/admin/locale/de/LC_MESSAGES/django.po"),
    ("django-admin-js", "django", "5.2.9",
     "django/contrib/admin/locale/de/LC_MESSAGES/djangojs.po"),
    ("django-auth", "django", "5.2.9", "django/contrib/auth/locale/de/LC_MESSAGES/django.po"),
    ("ckan", "ckan", "2.12.0", "ckan/i18n/de/LC_MESSAGES/ckan.po"),
    ("plone-widgets", "plone.app.locales", "7.0.4",
     "plone/app/locales/locales/de/LC_MESSAGES/widgets.po"),
    ("plone-cmfplacefulworkflow", "plone.app.locales", "7.0.4",
     "plone/app/locales/locales/de/LC_MESSAGES/cmfplacefulworkflow.po"),
)


def download(requirements, folder):
    """pip download --no-deps of `requirements` lines into folder; the files it saved."""
    os.makedirs(folder, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(requirements) + "\n")
    hashes = ["--require-hashes"] if all("--hash=" in r for r in requirements) else []
    result = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                             "--only-binary=:all:", *hashes, "-d", folder, "-r", f.name],
                            capture_output=True, text=True)
    os.unlink(f.name)
    if result.returncode != 0:
        po_catalogs.fail(f"pip download failed: {result.stderr.strip()[-500:]}")


def wheel_of(folder, distribution, version):
    prefix = f"{distribution.replace('.', '_').replace('-', '_').lower()}-{version}-"
    found = [name for name in os.listdir(folder) if name.lower().startswith(prefix)
             and name.endswith(".whl")]
    if not found:
        po_catalogs.fail(f"no wheel of {distribution} {version} in {folder}")
    return os.path.join(folder, found[0])


def prepare(folder, wheel, member):
    """W/P/flagged.po (the shipped file) and W/P/blank.po; the facts the list records."""
    os.makedirs(folder, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read(member)
    flagged, blank = (os.path.join(folder, name) for name in ("flagged.po", "blank.po"))
    with open(flagged, "wb") as f:
        f.write(data)
    with open(blank, "wb") as f:
        f.write(po_catalogs.blank(data))
    entries = po_catalogs.messages(po_catalogs.parse(data))
    flags = collections.Counter(flag.decode() for entry in entries
                                for flag in entry.flags if flag.endswith(b"-format"))
    return {"entries": len(entries), "flags": dict(sorted(flags.items())),
            "po_sha256": harness.file_sha256(flagged),
            "blank_po_sha256": harness.file_sha256(blank),
            "original_checks": po_catalogs.checks(flagged)}


def build(args):
    downloads = os.path.join(args.work_dir, "downloads")
    download(sorted({f"{d}=={v}" for _, d, v, _ in CATALOGS}), downloads)
    rows = []
    for name, distribution, version, member in CATALOGS:
        wheel = wheel_of(downloads, distribution, version)
        facts = prepare(os.path.join(args.work_dir, name), wheel, member)
        rows.append({"package": name, "distribution": distribution, "version": version,
                     "file": os.path.basename(wheel), "file_sha256": harness.file_sha256(wheel),
                     "po": member, "domain": os.path.basename(member)[:-3],
                     "source_language": "python", **facts})
        print(f"{name}: {facts['entries']} entries, flags {facts['flags']}")
    listing = {"about": "German catalogs shipped in PyPI packages, their own flags kept, for "
                        "bench/pypi_catalogs.py (and bench/po_catalogs.py run --list=)",
               "made": datetime.date.today().isoformat(), "catalogs": rows,
               "totals": {"catalogs": len(rows), "entries": sum(r["entries"] for r in rows)}}
    with open(args.list, "w", encoding="utf-8") as f:
        import json
        json.dump(listing, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"list: {args.list}")


def fetch(args):
    rows = po_catalogs.chosen(po_catalogs.read_list(args.list), args.only)
    downloads = os.path.join(args.work_dir, "downloads")
    files = {(r["distribution"], r["version"]): r["file_sha256"] for r in rows}
    download(sorted(f"{d}=={v} --hash=sha256:{digest}" for (d, v), digest in files.items()),
             downloads)
    problems = []
    for row in rows:
        wheel = wheel_of(downloads, row["distribution"], row["version"])
        facts = prepare(os.path.join(args.work_dir, row["package"]), wheel, row["po"])
        differ = [k for k in ("entries", "po_sha256", "blank_po_sha256") if facts[k] != row[k]]
        if differ:
            problems.append(f"{row['package']}: {', '.join(differ)} differ from the list")
        print(f"{row['package']}: {facts['entries']} entries, flags {facts['flags']} -> "
              f"{os.path.join(args.work_dir, row['package'], 'blank.po')}", flush=True)
    if problems:
        po_catalogs.fail("the prepared catalogs differ from the list:\n" + "\n".join(problems))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("build", "fetch"))
    parser.add_argument("--list", default=LIST, help="the catalog list (JSON)")
    parser.add_argument("--work_dir", required=True, help="where the catalogs go")
    parser.add_argument("--only", help="fetch: a comma list of catalogs")
    args = parser.parse_args(argv)
    {"build": build, "fetch": fetch}[args.command](args)


if __name__ == "__main__":
    main()
