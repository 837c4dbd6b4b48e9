"""Real gettext catalogs the project never saw: blanked, filled by t2t-lite-po, judged by msgfmt.

    # once, where the list is chosen (root, apt sources of Debian 12): writes the list and digests
    python bench/po_catalogs.py build
    # anywhere: re-fetch exactly the listed .debs (digests checked), msgunfmt, restore flags, blank
    python bench/po_catalogs.py fetch
    # the benchmark: t2t-lite-po on every blanked catalog, then msgfmt's checks and a table
    python bench/po_catalogs.py run --model_dir=M        (or --export_dir=E)
    # the pipeline proven without a model: a fake translator that copies msgid into msgstr
    python bench/po_catalogs.py run --dry_identity

The list (bench/data/po_catalogs_de.json) names, per catalog: the Debian 12 package, its version,
the .deb's sha256, the German .mo inside it and the .mo's sha256, the source language the flags are
restored for, the entries and the restored flags' counts. No package on it is installed where it
was chosen (dpkg), and no catalog's domain is under /usr/share/locale/de (what the gettext problem
trains on) or in bench/data/format_strings_de. The catalogs themselves are not committed: they live
in --work_dir (default /work/po-catalogs), one folder per package:

    debs/P_V_A.deb    the downloaded package (apt-get download P=V), sha256 checked
    P/root/           dpkg-deb -x of it; the .mo's sha256 checked
    P/original.po     msgunfmt of the .mo: the human translation, no comments, no flags
    P/flagged.po      original.po with the flags xgettext would have set (below)
    P/blank.po        flagged.po with every msgstr emptied (plural forms too): the benchmark input
    P/out.po          what the translator wrote; P/out.stderr its stderr

Restoring the flags msgunfmt drops. A .mo keeps no comments, so the `#, c-format` lines that
msgfmt -c needs to check a translation's directives are gone. They are put back as xgettext sets
them when a programmer wrote no `xgettext:` comment and passed no --flag: for each msgid (and
msgid_plural), each format parser of the source language parses it, and the entry gets the flag
when the string is a valid format string of that language with at least one directive (a `%` that
does not parse gives nothing; `50% done` is c-format: `% d` is a directive). Rather than copy that
rule, the script asks xgettext itself (the one on PATH, 0.21 on Debian 12): it writes every entry's
msgctxt / msgid / msgid_plural, as the catalog's own quoted strings, into one call per line of a
source file of the package's language, runs xgettext on it and copies each entry's `#,` line back
(by the line number in the reference). The source language is decided by what the package ships:
5 or more .py files -> Python (python-format, python-brace-format); a dependency on libkf5i18n5
(KDE Frameworks i18n) -> C++ with xgettext --kde and the i18n/i18nc/i18np/i18ncp keywords (every
entry kde-format, as KDE's own catalogs have it); else C (c-format). What this cannot restore:
strings a program passes to its own printf-like functions without a format directive, strings
from .ui / .desktop / .xml files (xgettext gives them no flag; here they are read as C or
Python), and `xgettext: no-c-format` comments. A header without a Language field gets
`Language: de` (recorded as header_language_added).

The blanked input keeps the header as it is (Language: de, Plural-Forms when the catalog has one).

What `run` checks, per catalog, on the translator's output (out.po):
- filled / left untranslated: entries whose msgstr (every form) is empty are counted here, and the
  reasons are those the translator's summary line on stderr gives (the parts naming "untranslated");
- `msgfmt -c --use-fuzzy -o /dev/null out.po`, `msgfmt --check-accelerators=_ --use-fuzzy ...` and
  `msgfmt --check-accelerators --use-fuzzy ...` (the default mark `&`): pass, or the errors. The
  same three checks on flagged.po (the human translation) are in the list, so a catalog that gettext
  already rejects as it ships is told apart;
- byte for byte: the input and the output, each reduced to a skeleton, must be equal bytes. The
  skeleton keeps every line in order, except: the msgstr lines of an entry the output translated
  become one `msgstr <translated>` (or `msgstr[k] <translated>`) line, so the plural forms' keys
  still count; a `#,` line of such an entry loses its `fuzzy` flag (and goes when nothing is left);
  the header's "PO-Revision-Date: ..." line goes (and each --header_field the translator documents
  that it sets; for t2t-lite-po, the fields it documents, t2t_lite.po.header.FIELDS_SET). So
  comments, flags, msgctxt, msgid, wrapping, blank lines, entry order, untranslated entries and
  the rest of the header must come out as they went in.

`run` prints a Markdown table (package, entries, seconds, entries/s, left untranslated and why,
msgfmt -c, accelerators, byte for byte) and writes a record (the table beside it, .md):
docs/records/po-catalogs-CLASS-DATE.json for a model run; WORK_DIR/records/ for --dry_identity or
--translator_command (not a model's figure). The translator is
`python -m t2t_lite.bin.po --model_dir=M --input=P/blank.po --output=P/out.po` (each command
printed before it runs), timed by wall clock per catalog (model loading included);
--po_flag passes it more flags, --translator_command replaces it (a template with {input} and
{output}), --dry_identity uses `po_catalogs.py identity`, which copies each msgid into its msgstr
(msgid_plural into msgstr[1..]) and marks it fuzzy: a trivially valid catalog.
"""
import argparse
import datetime
import difflib
import glob
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import harness  # noqa: E402  (bench/harness.py: no TensorFlow at import)

LIST = os.path.join(ROOT, "bench", "data", "po_catalogs_de.json")
WORK_DIR = "/work/po-catalogs"
LOCAL_CATALOGS = "/usr/share/locale/de/LC_MESSAGES"
FORMAT_STRINGS_PACKAGES = os.path.join(ROOT, "bench", "data", "format_strings_de", "packages.txt")
MO_DIR = "usr/share/locale/de/LC_MESSAGES"
PYTHON_FILES = 5  # a package shipping at least this many .py files is a Python program
KDE_DEPENDENCY = "libkf5i18n5"

# (package, German .mo inside it), Debian 12. Chosen by `build` once; `fetch` and `run` read the
# JSON list, not this. A mix: C command-line tools and libraries (c-format heavy), GTK/GNOME and
# Xfce apps in C and Vala (`_` accelerators), Python apps (python-format, python-brace-format),
# KDE apps (`&` accelerators, msgctxt, kde-format), plural-heavy ones (e2fsprogs, neomutt,
# gpodder, dolphin, kteatime).
PACKAGES = (
    # C: command-line tools and libraries
    ("alsa-utils", "alsa-utils.mo"), ("cryptsetup-bin", "cryptsetup.mo"),
    ("dselect", "dselect.mo"), ("e2fsprogs-l10n", "e2fsprogs.mo"),
    ("gcc-12-locales", "cpplib-12.mo"), ("gdbm-l10n", "gdbm.mo"), ("grub-common", "grub.mo"),
    ("hello", "hello.mo"), ("lftp", "lftp.mo"), ("libexif12", "libexif-12.mo"),
    ("libgpg-error-l10n", "libgpg-error.mo"), ("libsane-common", "sane-backends.mo"),
    ("neomutt", "neomutt.mo"), ("network-manager", "NetworkManager.mo"), ("pv", "pv.mo"),
    ("sysstat", "sysstat.mo"), ("udisks2", "udisks2.mo"),
    # C / C++ / Vala: GTK apps
    ("aisleriot", "aisleriot.mo"), ("baobab", "baobab.mo"), ("evince-common", "evince.mo"),
    ("file-roller", "file-roller.mo"), ("geany-common", "geany.mo"), ("gedit-common", "gedit.mo"),
    ("gnome-calculator", "gnome-calculator.mo"), ("gnome-chess", "gnome-chess.mo"),
    ("gnome-mines", "gnome-mines.mo"), ("gnome-sudoku", "gnome-sudoku.mo"),
    ("gnome-terminal-data", "gnome-terminal.mo"), ("hexchat-common", "hexchat.mo"),
    ("iagno", "iagno.mo"), ("mousepad", "mousepad.mo"), ("quadrapassel", "quadrapassel.mo"),
    ("ristretto", "ristretto.mo"), ("synaptic", "synaptic.mo"),
    ("xfce4-terminal", "xfce4-terminal.mo"), ("zenity-common", "zenity.mo"),
    # Python
    ("accerciser", "accerciser.mo"), ("apt-listchanges", "apt-listchanges.mo"),
    ("blueman", "blueman.mo"), ("catfish", "catfish.mo"), ("gnome-music", "org.gnome.Music.mo"),
    ("gnome-tweaks", "gnome-tweaks.mo"), ("gpodder", "gpodder.mo"), ("meld", "meld.mo"),
    ("system-config-printer-common", "system-config-printer.mo"),
    ("terminator", "terminator.mo"), ("zim", "zim.mo"),
    # KDE (C++, KDE Frameworks i18n)
    ("ark", "ark.mo"), ("dolphin", "dolphin.mo"), ("filelight", "filelight.mo"),
    ("kcalc", "kcalc.mo"), ("kcharselect", "kcharselect.mo"), ("kdiff3", "kdiff3.mo"),
    ("kfind", "kfind.mo"), ("kmines", "kmines.mo"), ("kompare", "kompare.mo"),
    ("konsole", "konsole.mo"), ("kpat", "kpat.mo"), ("kruler", "kruler.mo"),
    ("ksudoku", "ksudoku.mo"), ("kteatime", "kteatime.mo"), ("ktimer", "ktimer.mo"),
)

# Per source language: the xgettext options, and the call written for each kind of entry
# (singular, with msgctxt, plural, plural with msgctxt).
XGETTEXT = {
    "c": (["--language=C", "-k_", "-kpgettext:1c,2", "-kngettext:1,2", "-knpgettext:1c,2,3"],
          ("_", "pgettext", "ngettext", "npgettext"), ".c"),
    "python": (["--language=Python", "-k_", "-kpgettext:1c,2", "-kngettext:1,2",
                "-knpgettext:1c,2,3"], ("_", "pgettext", "ngettext", "npgettext"), ".py"),
    "kde": (["--language=C++", "--kde", "-ki18n:1", "-ki18nc:1c,2", "-ki18np:1,2",
             "-ki18ncp:1c,2,3"], ("i18n", "i18nc", "i18np", "i18ncp"), ".cpp"),
}
# Header fields a translator may set; the byte-for-byte comparison leaves them out (--header_field).
HEADER_FIELDS_SET = ("PO-Revision-Date",)
CHECKS = (("msgfmt_c", ["-c"]), ("accelerators_underscore", ["--check-accelerators=_"]),
          ("accelerators_ampersand", ["--check-accelerators"]))


def fail(message):
    raise SystemExit(f"error: {message}")


# ---- PO files as lines -------------------------------------------------------------------------
# A PO file is read as bytes and never re-encoded: entries are runs of non-blank lines; within an
# entry, a field is a comment line (`#...`, `#~` included) or a keyword line (msgctxt, msgid,
# msgid_plural, msgstr, msgstr[k]) with the `"..."` continuation lines after it.

KEYWORD = re.compile(rb"^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s")
QUOTED = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*$')


def lines_of(data):
    """The file's lines, each with its b"\\n" (the last may lack it)."""
    return re.findall(rb"[^\n]*\n|[^\n]+$", data)


class Entry:
    """An entry's lines, `start` its first line's number (1-based), `fields` [(key, lines)]."""

    def __init__(self, lines, start):
        self.lines, self.start, self.fields = lines, start, []
        for line in lines:
            match = KEYWORD.match(line)
            if line.startswith(b"#"):
                self.fields.append((b"#", [line]))
            elif match:
                self.fields.append((match.group(1), [line]))
            elif line.lstrip().startswith(b'"') and self.fields and self.fields[-1][0] != b"#":
                self.fields[-1][1].append(line)
            else:
                self.fields.append((b"?", [line]))

    def field(self, key):
        return next((lines for k, lines in self.fields if k == key), None)

    def has(self, key):
        return self.field(key) is not None

    @property
    def is_message(self):
        return self.has(b"msgid")

    @property
    def is_header(self):
        return self.is_message and not self.has(b"msgctxt") and value(self.field(b"msgid")) == b""

    @property
    def msgstrs(self):
        return [(k, lines) for k, lines in self.fields if k.startswith(b"msgstr")]

    @property
    def untranslated(self):
        return all(value(lines) == b"" for _, lines in self.msgstrs)

    @property
    def flags(self):
        return [flag for k, lines in self.fields if k == b"#" and lines[0].startswith(b"#,")
                for flag in flag_list(lines[0])]


def quoted_parts(lines):
    """The `"..."` tokens of a field, as written (escapes kept)."""
    parts = []
    for line in lines:
        match = QUOTED.search(line)
        if match is None:
            fail(f"not a quoted string: {line[:80]!r}")
        parts.append(match.group(0).rstrip())
    return parts


def value(lines):
    """A field's string, still escaped (enough to tell empty from not)."""
    return b"".join(part[1:-1] for part in quoted_parts(lines))


def flag_list(line):
    return [flag.strip() for flag in line[2:].split(b",") if flag.strip()]


def parse(data):
    """The file as units: an Entry, or a run of blank lines (bytes)."""
    units, current, start = [], [], 1
    for number, line in enumerate(lines_of(data), 1):
        if line.strip():
            if not current:
                start = number
            current.append(line)
            continue
        if current:
            units.append(Entry(current, start))
            current = []
        units.append(line)
    if current:
        units.append(Entry(current, start))
    return units


def messages(units):
    """The non-header message entries (obsolete `#~` entries are comments, not messages)."""
    return [u for u in units if isinstance(u, Entry) and u.is_message and not u.is_header]


def join(units):
    return b"".join(u if isinstance(u, bytes) else b"".join(u.lines) for u in units)


def rebuild(entry, fields):
    return Entry([line for _, lines in fields for line in lines], entry.start)


# ---- restoring the flags -----------------------------------------------------------------------

def source_language(deb):
    """python, kde or c, by what the .deb ships (see the module's docstring)."""
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True,
                             check=True).stdout
    if sum(line.endswith(".py") for line in listing.splitlines()) >= PYTHON_FILES:
        return "python"
    depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True,
                             check=True).stdout
    return "kde" if KDE_DEPENDENCY in depends else "c"


def xgettext_source(entries, language):
    """One call per line: line i holds entries[i-1]'s strings, as the catalog quotes them."""
    _, (plain, with_context, plural, plural_with_context), _ = XGETTEXT[language]
    lines = []
    for entry in entries:
        args = []
        if entry.has(b"msgctxt"):
            args.append(b" ".join(quoted_parts(entry.field(b"msgctxt"))))
        args.append(b" ".join(quoted_parts(entry.field(b"msgid"))))
        if entry.has(b"msgid_plural"):
            args += [b" ".join(quoted_parts(entry.field(b"msgid_plural"))), b"n"]
            name = plural_with_context if entry.has(b"msgctxt") else plural
        else:
            name = with_context if entry.has(b"msgctxt") else plain
        lines.append(name.encode() + b"(" + b", ".join(args) + b");\n")
    return b"".join(lines)


def xgettext_flags(entries, language, charset="UTF-8"):
    """{index in entries: the `#, ...` line xgettext writes for it}."""
    options, _, suffix = XGETTEXT[language]
    with tempfile.TemporaryDirectory(prefix="po_catalogs_") as tmp:
        source = os.path.join(tmp, "strings" + suffix)
        with open(source, "wb") as f:
            f.write(xgettext_source(entries, language))
        result = subprocess.run(["xgettext", *options, f"--from-code={charset}", "--omit-header",
                                 "--no-wrap", "--add-location=full", "-o", "-", source],
                                capture_output=True, cwd=tmp)
    if result.returncode != 0:
        fail(f"xgettext failed: {result.stderr.decode(errors='replace')[-2000:]}")
    flags, refs = {}, []
    for line in lines_of(result.stdout):
        if line.startswith(b"#:"):
            refs += [int(ref.rsplit(b":", 1)[1]) for ref in line[2:].split()]
        elif line.startswith(b"#,"):
            for ref in refs:
                flags[ref - 1] = line if line.endswith(b"\n") else line + b"\n"
        elif KEYWORD.match(line) and line.startswith(b"msgid "):
            refs = []
    return flags


def header_charset(units):
    header = next((u for u in units if isinstance(u, Entry) and u.is_header), None)
    match = header and re.search(rb"charset=([\w.-]+)", b"".join(header.lines))
    return match.group(1).decode() if match else "UTF-8"


def restore_flags(data, language):
    """(the catalog with xgettext's flag lines, {flag: count}); flag lines go first in an entry."""
    units = parse(data)
    entries = messages(units)
    flags = xgettext_flags(entries, language, header_charset(units))
    counts = {}
    for index, entry in enumerate(entries):
        if any(k == b"#" and not lines[0].startswith(b"#,") for k, lines in entry.fields):
            fail(f"line {entry.start}: the entry has comments; expected msgunfmt output")
        # msgunfmt itself writes `#, c-format` on the entries whose strings are system-dependent
        # in the .mo (`%<PRIu64>`): xgettext's flags are added to that line.
        known = entry.flags
        new = [flag for flag in flag_list(flags.get(index, b"#,")) if flag not in known]
        if new:
            line = b"#, " + b", ".join(known + new) + b"\n"
            entry.lines[:] = [line] + [x for x in entry.lines if not x.startswith(b"#,")]
            entry.fields[:] = [(b"#", [line])] + [f for f in entry.fields if f[0] != b"#"]
        for flag in entry.flags:
            counts[flag.decode()] = counts.get(flag.decode(), 0) + 1
    return join(units), dict(sorted(counts.items()))


def add_language(data, language="de"):
    """(data, True) with a `Language: de` header field added where the header lacks one."""
    units = parse(data)
    header = next((u for u in units if isinstance(u, Entry) and u.is_header), None)
    if header is None or any(line.startswith(b'"Language:') for line in header.lines):
        return data, False
    field = f'"Language: {language}\\n"\n'.encode()
    after = [i for i, line in enumerate(header.lines)
             if line.startswith((b'"Language-Team:', b'"Last-Translator:'))]
    header.lines.insert((after[-1] if after else len(header.lines) - 1) + 1, field)
    return join(units), True


def blank(data):
    """The catalog with every message's msgstr emptied (each plural form kept, empty)."""
    units = parse(data)
    out = []
    for unit in units:
        if isinstance(unit, Entry) and unit.is_message and not unit.is_header:
            unit = rebuild(unit, [(k, [k + b' ""\n']) if k.startswith(b"msgstr") else (k, lines)
                                  for k, lines in unit.fields])
        out.append(unit)
    return join(out)


# ---- the fake translator -----------------------------------------------------------------------

def with_fuzzy(fields):
    """The fields with `fuzzy` added to the entry's flag line (or a `#, fuzzy` line before the
    first keyword)."""
    for i, (k, lines) in enumerate(fields):
        if k == b"#" and lines[0].startswith(b"#,"):
            if b"fuzzy" in flag_list(lines[0]):
                return fields
            return fields[:i] + [(k, [b"#, fuzzy, " + lines[0][2:].lstrip()])] + fields[i + 1:]
    first = next(i for i, (k, _) in enumerate(fields) if k != b"#")
    return fields[:first] + [(b"#", [b"#, fuzzy\n"])] + fields[first:]


def identity(data):
    """(catalog, translated, plural): each empty msgstr gets its msgid's quoted lines (forms >= 1
    of a plural entry msgid_plural's), and the entry is marked fuzzy."""
    units, translated, plural = parse(data), 0, 0
    for i, unit in enumerate(units):
        if not (isinstance(unit, Entry) and unit.is_message and not unit.is_header
                and unit.untranslated):
            continue
        fields = []
        for k, lines in unit.fields:
            if k.startswith(b"msgstr"):
                source = unit.field(b"msgid_plural" if k not in (b"msgstr", b"msgstr[0]")
                                    else b"msgid")
                head = source[0]
                lines = [k + head[head.index(b" "):]] + source[1:]
            fields.append((k, lines))
        units[i] = rebuild(unit, with_fuzzy(fields))
        translated += 1
        plural += unit.has(b"msgid_plural")
    return join(units), translated, plural


def identity_main(args):
    started = time.perf_counter()
    with open(args.input, "rb") as f:
        data = f.read()
    entries = len(messages(parse(data)))
    out, translated, plural = identity(data)
    with open(args.output + ".tmp", "wb") as f:
        f.write(out)
    os.replace(args.output + ".tmp", args.output)
    print(f"translated {translated} of {entries} entries ({plural} plural) in "
          f"{time.perf_counter() - started:.1f}s; {translated} marked fuzzy; "
          f"0 left untranslated (empty translation); identity: msgid copied into msgstr",
          file=sys.stderr)


# ---- checking an output ------------------------------------------------------------------------

def skeleton(units, translated, header_fields=HEADER_FIELDS_SET):
    """[(line number, bytes)]: the file less what a translator may change (module docstring).
    `translated` holds the indexes (in messages order) of the entries the output translated;
    header_fields, the header fields the translator may set."""
    dropped = tuple(f'"{name}:'.encode() for name in header_fields)
    out, index = [], -1
    for unit in units:
        if isinstance(unit, bytes):
            out.append((None, unit))
            continue
        number = unit.start
        is_message = unit.is_message and not unit.is_header
        if is_message:
            index += 1
        done = is_message and index in translated
        for k, lines in unit.fields:
            if unit.is_header:
                lines = [line for line in lines if not line.startswith(dropped)]
            elif done and k.startswith(b"msgstr"):
                lines = [k + b" <translated>\n"]
            elif done and k == b"#" and lines[0].startswith(b"#,"):
                kept = [f for f in flag_list(lines[0]) if f != b"fuzzy"]
                if len(kept) != len(flag_list(lines[0])):
                    lines = [b"#, " + b", ".join(kept) + b"\n"] if kept else []
            out += [(number, line) for line in lines]
            number += len(lines)
    return out


def compare(input_data, output_data, header_fields=HEADER_FIELDS_SET):
    """'identical', or where the untouched parts differ."""
    before, after = parse(input_data), parse(output_data)
    ins, outs = messages(before), messages(after)
    if len(ins) != len(outs):
        return f"differs: {len(ins)} entries in, {len(outs)} out"
    translated = {i for i, entry in enumerate(outs) if not entry.untranslated}
    a = skeleton(before, translated, header_fields)
    b = skeleton(after, translated, header_fields)
    if [line for _, line in a] == [line for _, line in b]:
        return "identical"
    opcodes = [op for op in difflib.SequenceMatcher(None, [line for _, line in a],
                                                    [line for _, line in b]).get_opcodes()
               if op[0] != "equal"]
    lines = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in opcodes)
    _, i1, i2, j1, j2 = opcodes[0]
    x = a[i1] if i1 < i2 else (a[i1][0] if i1 < len(a) else None, b"<nothing>")
    y = b[j1] if j1 < j2 else (b[j1][0] if j1 < len(b) else None, b"<nothing>")
    return (f"differs: {lines} line{'' if lines == 1 else 's'} (first: input line {x[0]} "
            f"{x[1][:60]!r}, output line {y[0]} {y[1][:60]!r})")


def msgfmt_check(path, options):
    """'pass', or 'FAIL: N errors (first: ...)'."""
    result = subprocess.run(["msgfmt", *options, "--use-fuzzy", "-o", "/dev/null", path],
                            capture_output=True, text=True, errors="replace")
    if result.returncode == 0:
        return "pass"
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if not re.search(r"found \d+ fatal error|: warning: ", line)]
    first = errors[0].replace(os.path.dirname(path) + "/", "") if errors else "?"
    count = re.search(r"found (\d+) fatal error", result.stderr)
    count = int(count.group(1)) if count else len(errors)
    return f"FAIL: {count} error{'' if count == 1 else 's'} (first: {first[:160]})"


def checks(path):
    return {name: msgfmt_check(path, options) for name, options in CHECKS}


def untranslated_reasons(summary):
    """The parts of the translator's summary line that say why entries stayed untranslated."""
    parts = re.split(r";\s*", summary or "")
    return [p.strip() for p in parts if "untranslated" in p and not re.match(r"0 ", p.strip())]


# ---- build and fetch ---------------------------------------------------------------------------



def installed(package):
    result = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", package],
                            capture_output=True, text=True)
    return result.returncode == 0 and result.stdout.strip() not in ("", "not-installed",
                                                                    "config-files")


def excluded_domains():
    """Domains the project already uses: installed German catalogs and bench/data's."""
    domains = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(LOCAL_CATALOGS, "*.mo"))}
    if os.path.exists(FORMAT_STRINGS_PACKAGES):
        with open(FORMAT_STRINGS_PACKAGES, encoding="utf-8") as f:
            for line in f:
                if not line.startswith("#") and line.strip():
                    domains.update(c[:-3] for c in line.split("\t")[3].split(","))
    return domains


def download(package, debs, version=None, digest=None):
    """The .deb's path under debs, fetched with apt-get download (P=V where a version is given)
    unless a file with the digest is there."""
    os.makedirs(debs, exist_ok=True)
    pattern = os.path.join(debs, f"{package}_*.deb")
    for path in glob.glob(pattern):
        if digest is None or harness.file_sha256(path) == digest:
            if version is None or deb_field(path, "Version") == version:
                return path
        os.remove(path)
    spec = f"{package}={version}" if version else package
    result = subprocess.run(["apt-get", "download", spec], cwd=debs, capture_output=True,
                            text=True)
    if result.returncode != 0:
        fail(f"apt-get download {spec} failed: {result.stderr.strip()[-500:]}")
    found = glob.glob(pattern)
    if len(found) != 1:
        fail(f"expected one {package} .deb in {debs}, found {found}")
    if digest is not None and harness.file_sha256(found[0]) != digest:
        fail(f"{found[0]}: sha256 {harness.file_sha256(found[0])}, the list says {digest}")
    return found[0]


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True,
                          check=True).stdout.strip()


def prepare(folder, mo, language):
    """msgunfmt, flags, Language, blank: writes original.po, flagged.po, blank.po; returns the
    facts the list records."""
    result = subprocess.run(["msgunfmt", mo], capture_output=True)
    if result.returncode != 0:
        fail(f"msgunfmt {mo}: {result.stderr.decode(errors='replace')[-500:]}")
    original = result.stdout
    flagged, counts = restore_flags(original, language)
    flagged, language_added = add_language(flagged)
    blanked = blank(flagged)
    for name, data in (("original.po", original), ("flagged.po", flagged),
                       ("blank.po", blanked)):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    entries = messages(parse(flagged))
    return {
        "entries": len(entries),
        "plural_entries": sum(e.has(b"msgid_plural") for e in entries),
        "msgctxt_entries": sum(e.has(b"msgctxt") for e in entries),
        "flags": counts,
        "header_language_added": language_added,
        "blank_po_sha256": hashlib.sha256(blanked).hexdigest(),
        "original_checks": checks(os.path.join(folder, "flagged.po")),
    }


def tool_version(tool):
    return subprocess.run([tool, "--version"], capture_output=True,
                          text=True).stdout.splitlines()[0]


def build(args):
    domains = excluded_domains()
    debs = os.path.join(args.work_dir, "debs")
    catalogs = []
    for package, mo_name in PACKAGES:
        if installed(package):
            fail(f"{package} is installed here: its catalogs are training data")
        domain = mo_name[:-3]
        if domain in domains:
            fail(f"{package}: the domain {domain} is installed or in bench/data already")
        deb = download(package, debs)
        folder = os.path.join(args.work_dir, package)
        subprocess.run(["rm", "-rf", os.path.join(folder, "root")], check=True)
        os.makedirs(folder, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(folder, "root")], check=True)
        mo = os.path.join(folder, "root", MO_DIR, mo_name)
        if not os.path.exists(mo):
            fail(f"{package} has no {MO_DIR}/{mo_name}")
        language = source_language(deb)
        row = {"package": package, "version": deb_field(deb, "Version"),
               "deb": os.path.basename(deb), "deb_sha256": harness.file_sha256(deb),
               "mo": f"{MO_DIR}/{mo_name}", "mo_sha256": harness.file_sha256(mo),
               "domain": domain,
               "source_language": language}
        row.update(prepare(folder, mo, language))
        catalogs.append(row)
        print(f"{package}: {domain}, {language}, {row['entries']} entries, flags {row['flags']}, "
              f"original: {row['original_checks']}", flush=True)
    listing = {
        "about": "German catalogs of Debian 12 packages not installed where the list was made, "
                 "for bench/po_catalogs.py (its docstring says how they are fetched, flagged, "
                 "blanked and checked)",
        "made": datetime.date.today().isoformat(),
        "gettext": tool_version("xgettext"),
        "catalogs": catalogs,
        "totals": totals(catalogs),
    }
    with open(args.list, "w", encoding="utf-8") as f:
        json.dump(listing, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {args.list}: {json.dumps(listing['totals'])}")


def totals(catalogs):
    flags = {}
    for row in catalogs:
        for flag, count in row["flags"].items():
            flags[flag] = flags.get(flag, 0) + count
    languages = {}
    for row in catalogs:
        languages[row["source_language"]] = languages.get(row["source_language"], 0) + 1
    return {"catalogs": len(catalogs), "entries": sum(r["entries"] for r in catalogs),
            "plural_entries": sum(r["plural_entries"] for r in catalogs),
            "msgctxt_entries": sum(r["msgctxt_entries"] for r in catalogs),
            "flags": dict(sorted(flags.items())), "source_languages": languages,
            "original_fails": {name: sum(r["original_checks"][name] != "pass" for r in catalogs)
                               for name, _ in CHECKS}}


def read_list(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read the catalog list {path}: {e}")


def chosen(listing, only):
    rows = listing["catalogs"]
    if only:
        wanted = set(only.split(","))
        unknown = wanted - {r["package"] for r in rows}
        if unknown:
            fail(f"not on the list: {sorted(unknown)}")
        rows = [r for r in rows if r["package"] in wanted]
    return rows


def fetch(args):
    listing = read_list(args.list)
    debs = os.path.join(args.work_dir, "debs")
    if tool_version("xgettext") != listing["gettext"]:
        print(f"warning: {tool_version('xgettext')} here, the list was made with "
              f"{listing['gettext']}: flags may differ", file=sys.stderr)
    problems = []
    for row in chosen(listing, args.only):
        deb = download(row["package"], debs, row["version"], row["deb_sha256"])
        folder = os.path.join(args.work_dir, row["package"])
        subprocess.run(["rm", "-rf", os.path.join(folder, "root")], check=True)
        os.makedirs(folder, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(folder, "root")], check=True)
        mo = os.path.join(folder, "root", row["mo"])
        if harness.file_sha256(mo) != row["mo_sha256"]:
            fail(f"{mo}: sha256 {harness.file_sha256(mo)}, the list says {row['mo_sha256']}")
        facts = prepare(folder, mo, row["source_language"])
        differ = [k for k in ("entries", "flags", "blank_po_sha256") if facts[k] != row[k]]
        if differ:
            problems.append(f"{row['package']}: {', '.join(differ)} differ from the list "
                            f"({ {k: facts[k] for k in differ} })")
        print(f"{row['package']}: {row['entries']} entries, flags {facts['flags']} -> "
              f"{os.path.join(folder, 'blank.po')}", flush=True)
    if problems:
        fail("the prepared catalogs differ from the list:\n" + "\n".join(problems))


# ---- run -------------------------------------------------------------------------------------

def translator(args):
    """(command template as a list, label)."""
    if args.dry_identity:
        return ([sys.executable, os.path.abspath(__file__), "identity", "--input={input}",
                 "--output={output}"], "dry-identity")
    if args.translator_command:
        return shlex.split(args.translator_command), "translator-command"
    model = (f"--model_dir={args.model_dir}" if args.model_dir
             else f"--export_dir={args.export_dir}")
    return ([sys.executable, "-m", "t2t_lite.bin.po", model, "--input={input}",
             "--output={output}", *args.po_flag], "model")


def translate(template, source, output):
    """(seconds, return code, stderr text) of one translator run."""
    for stale in (output, output + ".t2t-po-work"):
        subprocess.run(["rm", "-rf", stale], check=True)
    command = [part.replace("{input}", source).replace("{output}", output) for part in template]
    print("  $ " + " ".join(shlex.quote(c) for c in command), flush=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, errors="replace", env=env,
                            cwd=ROOT)
    return time.perf_counter() - started, result.returncode, result.stderr


def summary_line(stderr):
    lines = [line for line in stderr.splitlines() if re.match(r"\s*translated \d+ of \d+", line)]
    return lines[-1].strip() if lines else None


def judge(row, folder, seconds, rc, stderr, header_fields=HEADER_FIELDS_SET):
    """One catalog's result."""
    result = {"package": row["package"], "domain": row["domain"],
              "source_language": row["source_language"], "entries": row["entries"],
              "seconds": round(seconds, 2),
              "entries_per_s": round(row["entries"] / seconds, 1) if seconds else None}
    output = os.path.join(folder, "out.po")
    with open(os.path.join(folder, "out.stderr"), "w", encoding="utf-8") as f:
        f.write(stderr)
    if rc != 0 or not os.path.exists(output):
        tail = [line for line in stderr.splitlines() if line.strip()][-1:] or ["(no stderr)"]
        result.update(translator_failed=f"rc {rc}: {tail[0][:200]}")
        return result
    with open(os.path.join(folder, "blank.po"), "rb") as f:
        source = f.read()
    with open(output, "rb") as f:
        written = f.read()
    entries = messages(parse(written))
    left = sum(e.untranslated for e in entries)
    summary = summary_line(stderr)
    said = re.match(r"\s*translated (\d+) of (\d+)", summary or "")
    result.update(filled=len(entries) - left, left_untranslated=left,
                  why=untranslated_reasons(summary), summary=summary,
                  summary_translated=int(said.group(1)) if said else None,
                  checks=checks(output), bytes=compare(source, written, header_fields))
    return result


def cpu_class():
    from t2t_lite.cpu import cpu_flags
    flags = sorted(f for f in cpu_flags() if f.startswith(("avx512", "amx")))
    if any(f.startswith("amx") for f in flags):
        return flags, "AVX-512/AMX", "avx512amx"
    if "avx512_bf16" in flags:
        return flags, "AVX-512/BF16", "avx512bf16"
    return flags, "AVX2", "avx2"


def cell_check(result, name, original):
    verdict = result.get("checks", {}).get(name)
    if verdict is None:
        return "-"
    text = "pass" if verdict == "pass" else verdict.split(" (first")[0]
    if original[name] != "pass":
        text += " (as shipped: " + original[name].split(" (first")[0].lower() + ")"
    return text


def table(results, rows):
    original = {r["package"]: r["original_checks"] for r in rows}
    out = ["| package | entries | seconds | entries/s | left untranslated (why) | msgfmt -c | "
           "accelerators `_` / `&` | byte for byte |", "|---|---:|---:|---:|---|---|---|---|"]
    for r in results:
        if "translator_failed" in r:
            out.append(f"| {r['package']} | {r['entries']} | {r['seconds']:.1f} | - | "
                       f"translator failed: {r['translator_failed'].replace('|', '/')} | - | - "
                       f"| - |")
            continue
        why = f" ({'; '.join(r['why'])})" if r["left_untranslated"] and r["why"] else (
            " (no reason given)" if r["left_untranslated"] else "")
        if r.get("summary_translated") not in (None, r["filled"]):
            why += f" (the summary says {r['summary_translated']} translated, {r['filled']} filled)"
        orig = original.get(r["package"], {name: "pass" for name, _ in CHECKS})
        out.append(f"| {r['package']} | {r['entries']} | {r['seconds']:.1f} | "
                   f"{r['entries_per_s']} | {r['left_untranslated']}{why} | "
                   f"{cell_check(r, 'msgfmt_c', orig)} | "
                   f"{cell_check(r, 'accelerators_underscore', orig)} / "
                   f"{cell_check(r, 'accelerators_ampersand', orig)} | "
                   f"{r['bytes'].replace('|', '/')} |")
    ok = [r for r in results if "translator_failed" not in r]
    entries = sum(r["entries"] for r in ok)
    seconds = sum(r["seconds"] for r in ok)
    failed = f" ({len(results) - len(ok)} failed)" if len(ok) < len(results) else ""
    out.append(f"| **all {len(ok)}**{failed} | {entries} | {seconds:.1f} | "
               f"{entries / seconds if seconds else 0:.1f} | "
               f"{sum(r['left_untranslated'] for r in ok)} | "
               f"{sum(r['checks']['msgfmt_c'] == 'pass' for r in ok)} pass | "
               f"{sum(r['checks']['accelerators_underscore'] == 'pass' for r in ok)} / "
               f"{sum(r['checks']['accelerators_ampersand'] == 'pass' for r in ok)} pass | "
               f"{sum(r['bytes'] == 'identical' for r in ok)} identical |")
    return "\n".join(out) + "\n"


def commit():
    def git(*a):
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout
    return git("rev-parse", "HEAD").strip(), [line[3:] for line in git(
        "status", "--porcelain", "--", "t2t_lite", "bench/po_catalogs.py").splitlines()]


def run(args):
    sys.path.insert(0, ROOT)

    listing = read_list(args.list)
    rows = chosen(listing, args.only)
    missing = [r["package"] for r in rows
               if not os.path.exists(os.path.join(args.work_dir, r["package"], "blank.po"))]
    if missing:
        fail(f"not fetched into {args.work_dir}: {missing}; run `{sys.argv[0]} fetch` first")
    template, label = translator(args)
    header_fields = HEADER_FIELDS_SET + tuple(args.header_field)
    if label == "model":  # t2t-lite-po: the fields it documents that it sets
        from t2t_lite.po import header
        header_fields += tuple(f for f in header.FIELDS_SET if f not in header_fields)
    flags, cpu, cpu_tag = cpu_class()
    load = harness.load_note()
    print(f"{len(rows)} catalogs, {sum(r['entries'] for r in rows)} entries; translator: "
          f"{' '.join(template)}; {cpu}; {load}", flush=True)
    results = []
    for row in rows:
        folder = os.path.join(args.work_dir, row["package"])
        print(f"{row['package']} ({row['entries']} entries)", flush=True)
        seconds, rc, stderr = translate(template, os.path.join(folder, "blank.po"),
                                        os.path.join(folder, "out.po"))
        result = judge(row, folder, seconds, rc, stderr, header_fields)
        results.append(result)
        print("  " + json.dumps({k: v for k, v in result.items() if k != "summary"}),
              flush=True)
    text = table(results, rows)
    print(text)
    date = datetime.date.today().isoformat()
    head, dirty = commit()
    ok = [r for r in results if "translator_failed" not in r]
    seconds = sum(r["seconds"] for r in ok)
    entries = sum(r["entries"] for r in ok)
    suffix = "" if label == "model" else f"-{label}"
    record_id = f"po-catalogs{suffix}-{cpu_tag}-{date}"
    record_dir = args.record_dir or (os.path.join(ROOT, "docs", "records") if label == "model"
                                     else os.path.join(args.work_dir, "records"))
    os.makedirs(record_dir, exist_ok=True)
    record = {
        "id": record_id,
        "what": f"t2t-lite-po on {len(rows)} blanked German catalogs of Debian packages not "
                f"installed here (bench/data/po_catalogs_de.json), translator {label}: entries "
                f"filled, msgfmt -c --use-fuzzy, --check-accelerators=_ and & on each output, the "
                f"untouched parts byte for byte; wall seconds per catalog (one tool run each, "
                f"model loading included)",
        "command": " ".join(shlex.quote(a) for a in [f"{os.path.relpath(sys.executable, ROOT)}",
                                                     "bench/po_catalogs.py", *sys.argv[1:]]),
        "date": date, "cpu_class": cpu, "cpu_flags": flags, "load_before": load,
        "commit": head, "commit_is": "measured", "uncommitted": dirty,
        "translator": template, "header_fields_set": list(header_fields),
        "values": {
            "catalogs": len(rows), "entries": entries, "seconds": round(seconds, 1),
            "entries_per_s": round(entries / seconds, 1) if seconds else None,
            "translator_failed": len(results) - len(ok),
            "filled": sum(r["filled"] for r in ok),
            "left_untranslated": sum(r["left_untranslated"] for r in ok),
            "msgfmt_c_pass": sum(r["checks"]["msgfmt_c"] == "pass" for r in ok),
            "accelerators_underscore_pass": sum(
                r["checks"]["accelerators_underscore"] == "pass" for r in ok),
            "accelerators_ampersand_pass": sum(
                r["checks"]["accelerators_ampersand"] == "pass" for r in ok),
            "bytes_identical": sum(r["bytes"] == "identical" for r in ok),
            "per_catalog": results,
        },
    }
    write_record(record_dir, record_id, record, text)


def write_record(record_dir, record_id, record, text):
    """RECORD_DIR/ID.json and the Markdown table beside it (ID.md)."""
    path = os.path.join(record_dir, record_id + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(record_dir, record_id + ".md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(f"record: {path} (table beside it, .md)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("build", "fetch", "run", "identity"))
    parser.add_argument("--list", default=LIST, help="the catalog list (JSON)")
    parser.add_argument("--work_dir", default=WORK_DIR, help="where catalogs and outputs live")
    parser.add_argument("--only", help="a comma list of packages (fetch, run)")
    parser.add_argument("--model_dir", help="run: the model_dir t2t-lite-po loads")
    parser.add_argument("--export_dir", help="run: or an export_dir")
    parser.add_argument("--po_flag", action="append", default=[],
                        help="run: an extra t2t-lite-po flag, e.g. --po_flag=--beam_size=4")
    parser.add_argument("--translator_command",
                        help="run: a command template with {input} and {output} instead of "
                             "t2t-lite-po")
    parser.add_argument("--dry_identity", action="store_true",
                        help="run: the fake translator (msgid copied into msgstr), no model")
    parser.add_argument("--header_field", action="append", default=[],
                        help="run: a header field the translator documents that it sets, left "
                             "out of the byte-for-byte comparison besides PO-Revision-Date "
                             "(repeatable)")
    parser.add_argument("--record_dir", help="run: where the record goes (default: docs/records "
                        "for a model, WORK_DIR/records otherwise)")
    parser.add_argument("--input", help="identity: the catalog to fill")
    parser.add_argument("--output", help="identity: the catalog to write")
    args = parser.parse_args(argv)
    if args.command == "run":
        given = [bool(args.model_dir or args.export_dir), bool(args.translator_command),
                 args.dry_identity]
        if sum(given) != 1 or (args.model_dir and args.export_dir):
            parser.error("run needs one of --model_dir, --export_dir, --translator_command or "
                         "--dry_identity")
    if args.command == "identity" and not (args.input and args.output):
        parser.error("identity needs --input and --output")
    {"build": build, "fetch": fetch, "run": run, "identity": identity_main}[args.command](args)


if __name__ == "__main__":
    main()
