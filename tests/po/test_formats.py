"""t2t_lite/po/formats.py: msgfmt's reading of c-format, python-format, python-brace-format,
qt-format, qt-plural-format and kde-format strings, and msgfmt -c's verdict on a translation.

The differential tests are the judge: hundreds of (msgid, msgstr, flag) cases (the hand-written
edge cases of issue 51, and seeded random mutations of real c-format msgids from this machine's
catalogs) go into one PO file, `msgfmt -c -o /dev/null` reads it once, and for every entry the
checker must agree with msgfmt: whether it fails, the message msgfmt prints for it (msgfmt
prints one per entry, the first), and the number of errors msgfmt counts over the whole file.
The plural tests do the same under the Plural-Forms of ru, ar, ja, pl and a `range:` flag, where
msgfmt relaxes the check of a form the formula selects rarely. KDE and Qt strings get their own
hand-written cases (KDE_HAND) and seeded mutations of KDE-style msgids. Skipped without msgfmt.
"""
import functools
import os
import random
import re
import shutil
import subprocess

import pytest

from t2t_lite.inference import code_spans, span_finding
from t2t_lite.po import formats, plural
from t2t_lite.po.format_base import FORMATS, Directive, FormatError, UnsupportedFormat

MSGFMT = shutil.which("msgfmt")
MSGUNFMT = shutil.which("msgunfmt")
needs_msgfmt = pytest.mark.skipif(MSGFMT is None, reason="gettext's msgfmt is not installed")
ENV = dict(os.environ, LC_ALL="C", LANGUAGE="", LANG="C")

RU = ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
      "(n%100<10 || n%100>=20) ? 1 : 2);")
PL = "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);"
AR = ("nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 : "
      "n%100>=11 ? 4 : 5);")
JA = "nplurals=1; plural=0;"
# A made-up formula at msgfmt's "often" boundary: form 2 is taken by 4 n, form 3 by 5.
EDGE = ("nplurals=5; plural=n==1 ? 0 : n==2 || n==3 ? 1 : n>=4 && n<=7 ? 2 : "
        "n>=8 && n<=12 ? 3 : 4;")
DE = "nplurals=2; plural=(n != 1);"

# ---------------------------------------------------------------- the cases

# (flag, msgid, msgstr): issue 51's failures first, then edge cases of each parser.
HAND = [
    ("c-format", "%s%zd%zu %s, %zu, %s %zu %s", "%s%zd%z %s, %zu, %s %zu %s"),
    ("c-format", "%s%zd%zu %s", "%s%zd%zu %s"),
    ("c-format", "Offset %<PRIu64>", "%<Offset RIu64 %<PRIu64>"),
    ("c-format", "Offset %<PRIu64>", "Versatz %<PRIu64>"),
    ("c-format", "Offset %<PRIu64>", "Versatz %llu"),
    ("c-format", "Offset %llu", "Versatz %<PRIu64>"),
    ("c-format", "%<PRIu64> vs %<PRIuMAX>", "%<PRIuMAX> vs %<PRIu64>"),
    ("c-format", "%<PRIdLEAST8> %<PRIxFAST32> %<PRIXPTR>",
     "%<PRIdLEAST8> %<PRIxFAST32> %<PRIXPTR>"),
    ("c-format", "%<PRIdLEAST8>", "%<PRIdFAST8>"),
    ("c-format", "%<PRId64>", "%<PRId65>"),
    ("c-format", "%<PRId64>", "%<PRId64"),
    ("c-format", "%<PRId64>", "%<PRIq64>"),
    ("c-format", "%<PRId64>", "%<PRI"),
    ("c-format", "%<PRId64>", "%5<PRId64>"),
    ("c-format", "%<PRId64>", "%l<PRId64>"),
    ("c-format", "(%.0f%%)", "(%.0 (%.0f%%)"),
    ("c-format", "(%.0f%%)", "(%.0f %%)"),
    ("c-format", "(%.0f%%)", "(%.0f%)"),
    ("c-format", "Files:%*s%s", "Datei %*s:%*%s"),
    ("c-format", "Files:%*s%s", "Dateien:%*s%s"),
    ("c-format", "Files:%*s%s", "Dateien:%s%*s"),
    ("c-format", "Copied 50% of %d files", "%d Dateien kopiert"),
    ("c-format", "Copied 50% of %d files", "50% von %d Dateien kopiert"),
    ("c-format", "Copied 50% of %d files", "50 % von %d Dateien kopiert"),
    ("c-format", "Copied 50%% of %d files", "50 % von %d Dateien kopiert"),
    ("c-format", "Copied 50%% of %d files", "50%% von %d Dateien kopiert"),
    ("c-format", "0x%04x", "0x%04x"),
    ("c-format", "0x%04x", "0x"),
    ("c-format", "0x%04x", "0x%04X"),
    ("c-format", "0x%04x", "0x%04d"),
    ("c-format", "%d of %s", "%2$s von %1$d"),
    ("c-format", "%d of %s", "%2$s von %d"),
    ("c-format", "%d of %s", "%2$s von %2$s"),
    ("c-format", "%d of %s", "%3$s von %1$d"),
    ("c-format", "%d of %s", "%0$s von %1$d"),
    ("c-format", "%d of %s", "%1$d von %1$d %2$s"),
    ("c-format", "%d of %s", "%1$s von %2$d"),
    ("c-format", "%2$s %1$d", "%d %s"),
    ("c-format", "%2$s %1$d", "%1$d %2$s"),
    ("c-format", "%1$*2$d", "%1$*2$d"),
    ("c-format", "%1$*2$d", "%*d"),
    ("c-format", "%1$*2$d", "%2$*1$d"),
    ("c-format", "%*d", "%*0$d"),
    ("c-format", "%.*s", "%.*0$s"),
    ("c-format", "%.*s", "%.*s"),
    ("c-format", "%.*s", "%.5s"),
    ("c-format", "%2$.*1$s", "%2$.*1$s"),
    ("c-format", "%-+ #0'10.5ld", "%'10ld"),
    ("c-format", "%ld", "%Id"),
    ("c-format", "%ld", "%Ild"),
    ("c-format", "%Id", "%Id"),
    ("c-format", "%d", "%lld"),
    ("c-format", "%lld", "%Ld"),
    ("c-format", "%lld", "%qd"),
    ("c-format", "%lf", "%f"),
    ("c-format", "%Lf", "%llf"),
    ("c-format", "%hd", "%hhd"),
    ("c-format", "%hhd", "%hhhd"),
    ("c-format", "%hd", "%d"),
    ("c-format", "%zu", "%Zu"),
    ("c-format", "%zu", "%ju"),
    ("c-format", "%td", "%zd"),
    ("c-format", "%lc", "%C"),
    ("c-format", "%ls", "%S"),
    ("c-format", "%lls", "%ls"),
    ("c-format", "%hc", "%c"),
    ("c-format", "%p", "%lp"),
    ("c-format", "%n", "%ln"),
    ("c-format", "%s: %m", "%s: %m %m"),
    ("c-format", "%s: %m", "%s"),
    ("c-format", "%a %A %e %E %g %G %F", "%f %f %f %f %f %f %f"),
    ("c-format", "%i %o %u %x %X", "%d %u %o %X %x"),
    ("c-format", "%s", "%@"),
    ("objc-format", "%@ and %d", "%@ und %d"),
    ("objc-format", "%@ and %d", "%s und %d"),
    ("c-format", "100%", "100%"),
    ("c-format", "100%", "100 Prozent"),
    ("c-format", "%5%", "%5%"),
    ("c-format", "%s", "%s%"),
    ("c-format", "%s", "%s %ä"),
    ("c-format", "%s", "%s %"),
    ("c-format", "Hello", "Hallo %s"),
    ("c-format", "Hello", "Hallo"),
    ("c-format", "%s\n", "%s"),
    ("c-format", "\n%s", "%s"),
    ("c-format", "\n%s\n", "%s"),
    ("c-format", "%s", "%s\n"),
    ("c-format", "%s", ""),
    ("no-c-format", "%s", "%d"),
    ("possible-c-format", "%s", "%d"),
    ("impossible-c-format", "%s", "%d"),
    ("c-format", "%1$s %s", "%1$s"),
    ("c-format", "%z", "%d"),
    ("c-format", "%", "%d"),
    ("python-format", "%(count)d items in %(folder)s",
     "lemente in %(derderderder) %(count)d %(folder)s"),
    ("python-format", "%(count)d items in %(folder)s", "%(count)d Elemente in %(folder)s"),
    ("python-format", "%(count)d items in %(folder)s", "%(folder)s: %(count)d Elemente"),
    ("python-format", "%(count)d items in %(folder)s", "%(count)d Elemente"),
    ("python-format", "%(count)d items in %(folder)s", "%(count)s Elemente in %(folder)s"),
    ("python-format", "%(count)d items in %(folder)s", "%(count)d in %(folder)s %(extra)s"),
    ("python-format", "Wrote %(count)d bytes", "Während von %(current) Bytes %(count)d"),
    ("python-format", "Wrote %(count)d bytes", "%(count)d Bytes geschrieben"),
    ("python-format", "Wrote %(count)d bytes", "%(count)i Bytes geschrieben"),
    ("python-format", "Wrote %(count)d bytes", "%d Bytes geschrieben"),
    ("python-format", "Wrote %d bytes", "%(count)d Bytes geschrieben"),
    ("python-format", "%s of %s", "%s von %s"),
    ("python-format", "%s of %s", "%s"),
    ("python-format", "%s of %s", "%s von %d"),
    ("python-format", "%s of %s", "%.0s von %s"),
    ("python-format", "%.0s%d", "%s%d"),
    ("python-format", "%(a)s %(a)d", "%(a)s"),
    ("python-format", "%(a)s", "%(a)s %(a).0s"),
    ("python-format", "%(a)s", "%(a)r"),
    ("python-format", "%(a)d", "%(a).0s %(a)d"),
    ("python-format", "%(a).0s %(a)d", "%(a)d"),
    ("python-format", "%(a).0s", "%(a)d"),
    ("python-format", "%.0s", "%d"),
    ("python-format", "%.00r %.01s", "%d %d"),
    ("python-format", "%(a(b)c)s", "%(a(b)c)s"),
    ("python-format", "%(a(b)c)s", "%(a(b c)s"),
    ("python-format", "%(x)s", "%(x)"),
    ("python-format", "%(x)s", "%(x)*s"),
    ("python-format", "%*d", "%*d"),
    ("python-format", "%*d", "%d"),
    ("python-format", "%-10s|%5.2f", "%-10s|%5.2f"),
    ("python-format", "%-10s|%5.2f", "%-10s|%5.2lf"),
    ("python-format", "%-10s|%5.2f", "%-10s|%5.2F"),
    ("python-format", "%(percent).1f%% done", "%(percent).1f %% fertig"),
    ("python-format", "%(percent).1f%% done", "%(percent).1f% fertig"),
    ("python-format", "%d%%", "%d %"),
    ("python-format", "%c", "%u"),
    ("python-format", "%(x)%", "%(x)%"),
    ("python-format", "%(é)s", "%(é)s"),
    ("python-format", "%(é)s %(z)s", "%(z)s %(é)s"),
    ("python-brace-format", "{count} items in {folder}", "{count} Elemente in {folder}"),
    ("python-brace-format", "{count} items in {folder}", "{count} Elemente"),
    ("python-brace-format", "{count} items in {folder}", "{count} in {folder} {extra}"),
    ("python-brace-format", "{count} items in {folder}", "{count} Elemente in {folder"),
    ("python-brace-format", "{count} items in {folder}", "{count} Elemente in folder}"),
    ("python-brace-format", "{0} of {1}", "{1} von {0}"),
    ("python-brace-format", "{0} of {1}", "{} von {}"),
    ("python-brace-format", "{a.b[0]!r:>10}", "{a}"),
    ("python-brace-format", "{a.b[0]:>10}", "{a.b[0]:>10}"),
    ("python-brace-format", "{a.b[0]:>10}", "{a.b[0]}"),
    ("python-brace-format", "{a.b[0]}", "{a.b[0}"),
    ("python-brace-format", "{a.b[0]}", "{a.[0]}"),
    ("python-brace-format", "{a.b[0]}", "{a.b[]}"),
    ("python-brace-format", "{name!r}", "{name!r}"),
    ("python-brace-format", "{name}", "{name!r}"),
    ("python-brace-format", "{value:>10}", "{value:>10}"),
    ("python-brace-format", "{value:>10}", "{value:<10}"),
    ("python-brace-format", "{value:*^+#010.3f}", "{value:*^+#010.3f}"),
    ("python-brace-format", "{value:.1%}", "{value:.1%}"),
    ("python-brace-format", "{value:abc}", "{value}"),
    ("python-brace-format", "{x:{width}}", "{x:{width}}"),
    ("python-brace-format", "{x:{width}}", "{x:{width:3}}"),
    ("python-brace-format", "{x:{width}}", "{x:{width}d}"),
    ("python-brace-format", "{{literal}} {x}", "{{wörtlich}} {x}"),
    ("python-brace-format", "{{literal}} {x}", "{wörtlich} {x}"),
    ("python-brace-format", "{x}", "{x} }"),
    ("python-brace-format", "{x}", "{x} {"),
    ("python-brace-format", "{x}", "{x} {ä}"),
    ("python-brace-format", "{x}", "{x}{x}"),
    ("python-brace-format", "{user.name} said {0[msg]}", "{0[msg]} sagte {user.name}"),
    ("python-brace-format", "{_a1}", "{_a1}"),
    ("python-brace-format", "{0a}", "{0a}"),
    ("c-format, python-format", "%s and %d", "%s und %d"),
    ("c-format, python-format", "%s and %d", "%s und %i"),
    ("c-format, python-brace-format", "%s {x}", "%d {y}"),
    ("python-format, no-python-format", "%s", "%d"),
]

# (flag, msgid, msgstr): kde-format, qt-format and qt-plural-format.
KDE_HAND = [
    ("kde-format", "%1 (%2)", "%1 (%2)"),
    ("kde-format", "%1 (%2)", "(%2) %1"),
    ("kde-format", "%1 (%2)", "%1"),
    ("kde-format", "%1 (%2)", "%2"),
    ("kde-format", "%1 (%2)", "keine"),
    ("kde-format", "%1 (%2)", "%1 (%2) %3"),
    ("kde-format", "%1 (%2)", "%1 (%3)"),
    ("kde-format", "%1 (%2)", "%1 (%1)"),
    ("kde-format", "%1 (%2)", "%1 (%2) %2"),
    ("kde-format", "%1 (%2)", "%1 (%4)"),
    ("kde-format", "%1 (%2)", "%3 (%4)"),
    ("kde-format", "%1 (%2)", "%L1 (%2)"),
    ("kde-format", "%1 (%2)", "%01 (%2)"),
    ("kde-format", "%1 (%2)", "%1 (%%2)"),
    ("kde-format", "%1 (%2)", "%1 (%2%)"),
    ("kde-format", "%1 (%2)", "%1 (%20)"),
    ("kde-format", "%1 of %2 in %3", "%3: %1 von %2"),
    ("kde-format", "%1 of %2 in %3", "%1 von %2"),
    ("kde-format", "%1 of %2 in %3", "%2 in %3"),
    ("kde-format", "%1 of %2 in %3", "%1 in %3"),
    ("kde-format", "%1 of %2 in %3", "%3"),
    ("kde-format", "%2 of %1", "%2 von %1"),
    ("kde-format", "%2", "%2"),
    ("kde-format", "%2", "%1"),
    ("kde-format", "%3", "%3"),
    ("kde-format", "%1 %4", "%1 %4"),
    ("kde-format", "%2 %4", "%2"),
    ("kde-format", "%1", "%1 %3"),
    ("kde-format", "%1", "%2"),
    ("kde-format", "%1 %2 %3 %4 %5 %6 %7 %8 %9 %10", "%10 %9 %8 %7 %6 %5 %4 %3 %2 %1"),
    ("kde-format", "%1 %2 %3 %4 %5 %6 %7 %8 %9 %10", "%1 %2 %3 %4 %5 %6 %7 %8 %9 %1 0"),
    ("kde-format", "%1 %2 %3 %4 %5 %6 %7 %8 %9 %10", "%1 %2 %3 %4 %5 %6 %7 %8 %9 %100"),
    ("kde-format", "%10", "%10"),
    ("kde-format", "%1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11", "%11 %1 %2 %3 %4 %5 %6 %7 %8 %9"),
    ("kde-format", "%1", "%4294967297"),
    ("kde-format", "%1 %4294967296", "%1"),
    ("kde-format", "%4294967296", "%1"),
    ("kde-format", "%L1", "%1"),
    ("kde-format", "%L1", "%L2"),
    ("kde-format", "100%", "100 %1"),
    ("kde-format", "%%1", "%1"),
    ("kde-format", "%%1", "%%"),
    ("kde-format", "50% of %1", "50 % von %1"),
    ("kde-format", "%0 %1", "%1 %0"),
    ("kde-format", "%1%", "%1 %"),
    ("kde-format", "<b>%1</b>", "<b>%1</b> &amp;"),
    ("kde-format", "%1\n", "%1"),
    ("qt-format", "%1 (%2)", "%1 (%2)"),
    ("qt-format", "%1 (%2)", "(%2) %1"),
    ("qt-format", "%1 (%2)", "%1"),
    ("qt-format", "%1 (%2)", "%2"),
    ("qt-format", "%1 (%2)", "%1 (%2) %3"),
    ("qt-format", "%1 (%2)", "%L1 (%2)"),
    ("qt-format", "%L1 (%2)", "%1 (%2)"),
    ("qt-format", "%L1 (%2)", "%L1 (%L2)"),
    ("qt-format", "%1 (%2)", "%01 (%02)"),
    ("qt-format", "%01 (%02)", "%1 (%2)"),
    ("qt-format", "%1 (%2)", "%1 (%20)"),
    ("qt-format", "%1 (%2)", "%1 (%2%)"),
    ("qt-format", "%1 (%2)", "%%1 (%2)"),
    ("qt-format", "%0 and %1", "%1 und %0"),
    ("qt-format", "%0 and %1", "%1"),
    ("qt-format", "%10 of %2", "%2 von %10"),
    ("qt-format", "%10 of %2", "%2 von %1 0"),
    ("qt-format", "%99", "%99"),
    ("qt-format", "%99", "%999"),
    ("qt-format", "%3", "%3"),
    ("qt-format", "%3", "%1"),
    ("qt-format", "%L", "%L"),
    ("qt-format", "100%", "100%1"),
    ("qt-format", "%1", "%L%1"),
    ("qt-plural-format", "%n file(s)", "%n Datei(en)"),
    ("qt-plural-format", "%n file(s)", "Dateien"),
    ("qt-plural-format", "%n file(s)", "%Ln Datei(en)"),
    ("qt-plural-format", "%n file(s)", "%n von %n"),
    ("qt-plural-format", "%n file(s)", "%%n Dateien"),
    ("qt-plural-format", "%n file(s)", "%N Dateien"),
    ("qt-plural-format", "%n file(s)", "%Ln"),
    ("qt-plural-format", "Files", "%n Dateien"),
    ("qt-plural-format", "Files", "Dateien"),
    ("qt-plural-format", "%Ln", "%L n"),
    ("qt-plural-format", "%LLn", "%n"),
    ("kde-format, qt-format", "%1 (%2)", "%L2 %1"),
    ("kde-format, qt-format", "%1 (%2)", "%3 %1"),
    ("qt-format, qt-plural-format", "%1: %n", "%1: %n"),
    ("qt-format, qt-plural-format", "%1: %n", "%2: %n"),
    ("c-format, kde-format", "%s %1", "%d %2"),
    ("python-format, kde-format", "%(x)s %1", "%(x)s %3"),
    ("kde-format, no-kde-format", "%1", "%2"),
    ("possible-qt-format", "%1", "%2"),
]

# KDE-style msgids (messages of the kind KDE applications' catalogs carry) for the mutations.
KDE_SOURCES = [
    "%1 (%2)", "%1 of %2", "Copying %1 to %2", "%1 - %2", "Delete %1?", "%1 files, %2 folders",
    "%1/%2", "<b>%1</b>: %2", "Could not open %1: %2", "%1 (%2 of %3)", "%1%", "Page %1 of %2",
    "Move <filename>%1</filename> to %2", "%1 &%2", "%2 by %1", "%1 %2 %3 %4 %5 %6 %7 %8 %9 %10",
    "%1 at %2 on %3", "Size: %1 (%2 bytes)", "Remaining: %L1", "%n item(s)",
]
KDE_POOL = "%%%%123456789100L n&()<>ab "
KDE_EDITS = ["%1", "%2", "%3", "%10", "%L1", "%%", "%0", "%n", "%Ln", "%", "1", "%01"]

# Real c-format msgids for when this machine has no catalogs to read (coreutils, tar, dpkg,
# make, libc, wget, gettext-tools).
REAL_FALLBACK = [
    "requested file length %lu, actual %lu",
    "archive '%s' has premature member '%.*s' before '%s', giving up",
    "unable to parse timestamp '%.255s'",
    "unable to delete old directory '%.250s': %s",
    "warning: summarizing conflicts with --max-depth=%lu",
    "trigger interest file '%.250s' syntax error; illegal package name '%.250s': %.250s",
    "invalid repeat count %s in [c*n] construct",
    "  %.250s provides %.250s but is %s.\n",
    "ar member size %jd too large",
    "# %s (device %ld, inode %ld): could not be opened.\n",
    "'%s' does not use %%m but '%s' uses %%m",
    "%s: order for `%.*s' already defined at %s:%Zu",
    "file '%.250s' is format version %d.%d; get a newer dpkg-split",
    "limit %lu exceeded by length %lu of file name component %s",
    "offset too large: cannot truncate to a length of seek=%<PRIdMAX> (%td-byte) blocks",
    "Device: %Hd,%Ld\tInode: %-10i  Links: %h\n",
    "cannot convert U+%04X to local character set: %s",
    "%s: %<PRIuMAX>: improperly formatted %s checksum line",
    "%s:%<PRIuMAX>: is not sorted: %.*s",
    "request from %ld not handled due to missing permission",
    "%s: table for width: %lu bytes",
    "Continuing in background, pid %lu.\n",
    "%s: Volume label is too long (limit is %lu bytes)",
    "%s: Read error at byte %s, while reading %lu bytes",
    "%*s%s%*s",
    "%1$s: %2$s: %3$d",
    "%3$s %2$s %1$s",
    "Progress: %3.0f%%",
]

C_POOL = "diouxXeEfFgGaAcCsSpnmhlLqjzZtI%$*.0123456789#-+ '<>@äR"
PY_POOL = "()%sdrifxXeEgGcu*. -+#0hlLabnz"
BRACE_POOL = "{}[].:!r0123456789abc_<>^=+-# %sdfxé"


@functools.lru_cache(maxsize=None)
def _real_msgids():
    """c-format-looking msgids of single entries from this machine's German catalogs (a fixed
    few packages), or REAL_FALLBACK."""
    found = set()
    if MSGUNFMT:
        for name in ("coreutils", "tar", "dpkg", "make", "libc", "wget", "gettext-tools"):
            path = f"/usr/share/locale/de/LC_MESSAGES/{name}.mo"
            if os.path.exists(path):
                out = subprocess.run([MSGUNFMT, path], capture_output=True, text=True,
                                     env=ENV, timeout=60).stdout
                found.update(_single_msgids(out))
    return tuple(sorted(found) or REAL_FALLBACK)


def _single_msgids(po_text):
    """msgids (one-line, with a '%', no plural) of a msgunfmt output."""
    out = []
    for block in po_text.split("\n\n"):
        if "msgid_plural" in block or "msgctxt" in block:
            continue
        m = re.search(r'^msgid "((?:[^"\\]|\\.)*)"$', block, re.M)
        if m and "%" in m.group(1) and len(m.group(1)) < 120:
            text = m.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
            try:
                out.append(text.encode("latin-1").decode("utf-8"))
            except UnicodeError:
                continue
    return out


def _mutate(text, rng, pool):
    """text with 1 to 3 random edits (character or directive-shaped), never empty."""
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(11)
        pos = rng.randrange(len(text) + 1)
        percents = [i for i, c in enumerate(text) if c in "%{"]
        if op == 0 and text:
            text = text[:pos] + text[pos + 1:]
        elif op == 1:
            text = text[:pos] + rng.choice(pool) + text[pos:]
        elif op == 2 and percents:
            p = rng.choice(percents) + rng.randint(1, 3)
            text = text[:p] + rng.choice(pool) + text[p + 1:]
        elif op == 3 and percents:
            p = rng.choice(percents)
            end = text.find(" ", p)
            text = text[:p] + (text[end:] if end >= 0 else "")
        elif op == 4:
            words = text.split(" ")
            i, j = rng.randrange(len(words)), rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
            text = " ".join(words)
        elif op == 5:
            text = text[:pos] + rng.choice(["50% of ", "100%", "% ", "%% ", "{", "}"]) + text[pos:]
        elif op == 6 and percents:
            p = rng.choice(percents)
            text = text[:p + 1] + f"{rng.randint(0, 3)}$" + text[p + 1:]
        elif op == 7:
            text = text[:pos]
        elif op == 8:
            text = rng.choice(["\n" + text, text + "\n", text.strip("\n")])
        elif op == 9 and percents:
            p = rng.choice(percents)
            text = text[:p + 1] + rng.choice(["I", "'", "l", "<PRIu64>", "(n)", "*", "z"]) \
                + text[p + 1:]
        elif op == 10:
            text = text.replace("%%", "%", 1) if rng.random() < 0.5 else text.replace("%", "%%", 1)
    return text or "x"


def _random_cases(seed=51):
    """Seeded mutations: of real c-format msgids, and of python and python-brace ones."""
    rng = random.Random(seed)
    real = _real_msgids()
    cases = []
    for msgid in rng.sample(real, min(160, len(real))):
        msgstr = _mutate(msgid, rng, C_POOL) if rng.random() < 0.85 else msgid
        if rng.random() < 0.1:
            msgid = _mutate(msgid, rng, C_POOL)
        cases.append(("c-format", msgid, msgstr))
    py = sorted({m for f, m, _ in HAND if f == "python-format"})
    brace = sorted({m for f, m, _ in HAND if f == "python-brace-format"})
    for flag, pool, sources, count in (("python-format", PY_POOL, py, 90),
                                       ("python-brace-format", BRACE_POOL, brace, 80)):
        for _ in range(count):
            msgid = rng.choice(sources)
            cases.append((flag, msgid, _mutate(msgid, rng, pool)))
    return cases


def _kde_cases(seed=51, count=240):
    """Seeded mutations of KDE_SOURCES under kde-format, qt-format and qt-plural-format: a
    number changed, a directive put in or taken out, then _mutate's edits."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        flag = rng.choice(["kde-format", "kde-format", "qt-format", "qt-plural-format"])
        msgid = rng.choice(KDE_SOURCES)
        if flag == "qt-plural-format" and rng.random() < 0.7:
            msgid = msgid.replace("%1", "%n", 1)
        msgstr = msgid
        for _ in range(rng.randint(1, 2)):
            op = rng.randrange(4)
            digits = [i for i, c in enumerate(msgstr) if c.isdigit()]
            pos = rng.randrange(len(msgstr) + 1)
            if op == 0 and digits:
                i = rng.choice(digits)
                msgstr = msgstr[:i] + str(rng.randrange(10)) + msgstr[i + 1:]
            elif op == 1:
                msgstr = msgstr[:pos] + rng.choice(KDE_EDITS) + msgstr[pos:]
            elif op == 2:
                m = list(re.finditer(r"%L?[0-9n]+", msgstr))
                if m:
                    d = rng.choice(m)
                    msgstr = msgstr[:d.start()] + msgstr[d.end():]
            else:
                msgstr = _mutate(msgstr, rng, KDE_POOL)
        if rng.random() < 0.1:
            msgstr = msgid
        elif rng.random() < 0.1:
            msgid = _mutate(msgid, rng, KDE_POOL)
        cases.append((flag, msgid, msgstr or "x"))
    return cases


def _kde_fuzz(seed, count=150):
    """Short random strings of KDE_POOL's characters under the three flags."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        flag = rng.choice(["kde-format", "qt-format", "qt-plural-format"])
        msgid = "".join(rng.choice(KDE_POOL) for _ in range(rng.randint(1, 8)))
        msgstr = (_mutate(msgid, rng, KDE_POOL) if rng.random() < 0.5 else
                  "".join(rng.choice(KDE_POOL) for _ in range(rng.randint(1, 8))))
        cases.append((flag, msgid, msgstr))
    return cases


def _fuzz_cases(seed, count=400):
    """Short strings drawn from each flag's characters: corners no real msgid reaches."""
    rng = random.Random(seed)
    families = [("c-format", C_POOL + "%%%%"), ("objc-format", C_POOL + "%%@"),
                ("python-format", PY_POOL + "%%%"), ("python-brace-format", BRACE_POOL + "{{}")]
    cases = []
    for _ in range(count):
        flag, pool = rng.choice(families)
        msgid = "".join(rng.choice(pool) for _ in range(rng.randint(1, 10)))
        if rng.random() < 0.3:
            msgstr = msgid
        elif rng.random() < 0.5:
            msgstr = _mutate(msgid, rng, pool)
        else:
            msgstr = "".join(rng.choice(pool) for _ in range(rng.randint(1, 10)))
        cases.append((flag, msgid, msgstr))
    return cases


# ---------------------------------------------------------------- running msgfmt


def _quote(text):
    return '"' + (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                  .replace("\t", "\\t")) + '"'


def _header(plural_forms):
    fields = ["Project-Id-Version: t2t 1", "PO-Revision-Date: 2026-01-01 00:00+0000",
              "Last-Translator: t <t@example.org>", "Language-Team: t <t@example.org>",
              "Language: de", "MIME-Version: 1.0", "Content-Type: text/plain; charset=UTF-8",
              "Content-Transfer-Encoding: 8bit"]
    if plural_forms:
        fields.append(f"Plural-Forms: {plural_forms}")
    return 'msgid ""\nmsgstr ""\n' + "".join(f'"{f}\\n"\n' for f in fields) + "\n"


def _catalog(entries, plural_forms=None):
    """(PO text, {line of msgstr or msgstr[0]: entry index}) for entries of (flags, msgid,
    msgstr or list of forms, msgid_plural or None). msgfmt names an entry by that line."""
    lines = _header(plural_forms).splitlines()
    where = {}
    for k, (flags, msgid, msgstr, msgid_plural) in enumerate(entries):
        lines.append(f"#, {flags}")
        lines.append(f'msgctxt "case {k}"')
        lines.append(f"msgid {_quote(msgid)}")
        if msgid_plural is None:
            where[len(lines) + 1] = k
            lines.append(f"msgstr {_quote(msgstr)}")
        else:
            lines.append(f"msgid_plural {_quote(msgid_plural)}")
            where[len(lines) + 1] = k
            lines += [f"msgstr[{j}] {_quote(s)}" for j, s in enumerate(msgstr)]
        lines.append("")
    return "\n".join(lines) + "\n", where


def _msgfmt(tmp_path, text, *options):
    """msgfmt's verdict on a PO text: ({line: first message}, fatal errors counted)."""
    path = tmp_path / "cases.po"
    path.write_bytes(text.encode("utf-8"))
    result = subprocess.run([MSGFMT, *options, "-o", os.devnull, str(path)],
                            capture_output=True, env=ENV, timeout=60)
    messages, total = {}, 0
    for raw in result.stderr.decode("utf-8", "surrogateescape").splitlines():
        m = re.match(rf"{re.escape(str(path))}:(\d+): (.*)$", raw)
        if m:
            messages.setdefault(int(m.group(1)), m.group(2))
            continue
        m = re.match(r".*msgfmt: found (\d+) fatal errors?$", raw)
        assert m, f"unexpected msgfmt output: {raw!r}"
        total = int(m.group(1))
    assert (result.returncode != 0) == (total > 0), result.stderr
    return messages, total


def _as_msgfmt_prints(message):
    """msgfmt prints a character with C's %c, one byte: of a non-ASCII character the first
    byte of its UTF-8 form (which does not decode alone)."""
    def first_byte(m):
        return "'" + m.group(1).encode("utf-8")[:1].decode("utf-8", "surrogateescape") + "'"
    return re.sub(r"'([^\x00-\x7f])' cannot start", lambda m: first_byte(m) + " cannot start",
                  message)


def _compare(tmp_path, entries, plural_forms=None, range_of=None):
    """Run msgfmt -c on entries and assert entry_errors agrees on each; returns how many
    entries failed."""
    text, where = _catalog(entries, plural_forms)
    messages, total = _msgfmt(tmp_path, text, "-c")
    forms = plural.parse(plural_forms) if plural_forms else None
    counted, failed, disagree = 0, 0, []
    for line, k in where.items():
        flags, msgid, msgstr, msgid_plural = entries[k]
        errors = formats.entry_errors(msgid, msgstr, flags, msgid_plural=msgid_plural,
                                      plural_forms=forms,
                                      range_=(range_of or {}).get(k))
        counted += len(errors)
        failed += bool(errors)
        ours = _as_msgfmt_prints(errors[0]) if errors else None
        flag = (formats.format_flags(flags) or (None,))[0]
        if len(formats.format_flags(flags)) <= 1:  # check_entry, form by form, agrees
            forms_k = [msgstr] if msgid_plural is None else msgstr
            verdicts = [formats.check_entry(msgid, s, flag, msgid_plural=msgid_plural,
                                            plural_index=None if msgid_plural is None else j,
                                            nforms=len(forms_k), plural_forms=forms,
                                            range_=(range_of or {}).get(k))
                        for j, s in enumerate(forms_k)]
            if any(verdicts) != bool(errors):
                disagree.append((entries[k], errors, verdicts))
        if ours != messages.get(line):
            disagree.append((entries[k], messages.get(line), ours))
    assert not disagree, "\n".join(map(repr, disagree[:10]))
    assert set(messages) <= set(where)
    assert counted == total
    return failed


# ---------------------------------------------------------------- differential tests


@needs_msgfmt
def test_every_case_gets_msgfmts_verdict_and_message(tmp_path):
    cases = HAND + _random_cases()
    assert len(cases) >= 200
    entries = [(flag, msgid, msgstr, None) for flag, msgid, msgstr in cases]
    failed = _compare(tmp_path, entries)
    # Not by accident: both verdicts come up often.
    assert len(cases) * 0.25 < failed < len(cases) * 0.85, (failed, len(cases))


@needs_msgfmt
def test_a_second_seed_and_random_strings_agree_too(tmp_path):
    cases = _random_cases(seed=7) + _fuzz_cases(seed=51) + _kde_cases(seed=7) + _kde_fuzz(7)
    entries = [(flag, msgid, msgstr, None) for flag, msgid, msgstr in cases]
    assert _compare(tmp_path, entries) > 150


@needs_msgfmt
def test_kde_and_qt_cases_get_msgfmts_verdict_and_message(tmp_path):
    cases = KDE_HAND + _kde_cases()
    entries = [(flag, msgid, msgstr, None) for flag, msgid, msgstr in cases]
    failed = _compare(tmp_path, entries)
    assert len(cases) * 0.25 < failed < len(cases) * 0.85, (failed, len(cases))
    for flag in ("kde-format", "qt-format", "qt-plural-format"):
        assert sum(1 for f, _, _ in cases if f == flag) >= 30


PLURAL_SOURCES = [
    ("c-format", "%d file", "%d files", ["%d Datei", "eine Datei", "Datei", "Dateien %d",
                                         "%d Dateien %s", "%u Dateien", ""]),
    ("c-format", "%d file in %s", "%d files in %s", ["%d Datei in %s", "eine Datei in %s",
                                                     "%d Datei", "in %s", "%2$s: %1$d"]),
    ("c-format", "One file", "%lu files", ["Eine Datei", "%lu Dateien", "%lu Datei", "%d"]),
    ("python-format", "%(n)d file in %(dir)s", "%(n)d files in %(dir)s",
     ["%(n)d Datei in %(dir)s", "eine Datei in %(dir)s", "%(n)d Dateien", "in %(x)s",
      "%(n)s in %(dir)s"]),
    ("python-format", "%d file", "%d files", ["%d Datei", "eine Datei", "%s Dateien"]),
    ("python-brace-format", "{n} file in {dir}", "{n} files in {dir}",
     ["{n} Datei in {dir}", "eine Datei in {dir}", "{n} Dateien", "{x} in {dir}"]),
    ("kde-format", "%1 day", "%1 days", ["%1 Tag", "ein Tag", "%1 Tage", "Tage %2", "%1 %1 Tage",
                                         "%L1 Tage", "%10 Tage"]),
    ("kde-format", "%1 file in %2", "%1 files in %2",
     ["%1 Datei in %2", "eine Datei in %2", "%1 Dateien", "Dateien", "%2: %1", "%3 in %2",
      "%1 in %3"]),
    ("kde-format", "One file in %2", "%1 files in %2",
     ["Eine Datei in %2", "%1 Dateien in %2", "Dateien", "%2"]),
    ("qt-format", "%1 file", "%1 files", ["%1 Datei", "eine Datei", "%L1 Dateien", "%2 Dateien"]),
    ("qt-plural-format", "%n file", "%n files", ["%n Datei", "eine Datei", "%Ln Dateien",
                                                 "%n %n"]),
    ("qt-plural-format", "One file", "Files", ["Eine Datei", "%n Dateien"]),
]


def _plural_entries(nplurals, seed):
    rng = random.Random(seed)
    entries = []
    for flags, msgid, msgid_plural, choices in PLURAL_SOURCES:
        for _ in range(14):
            forms = [rng.choice(choices) for _ in range(nplurals)]
            if not forms[0]:
                forms[0] = choices[0]
            entries.append((flags, msgid, forms, msgid_plural))
    return entries


@needs_msgfmt
@pytest.mark.parametrize("plural_forms", [RU, PL, AR, JA, DE, EDGE],
                         ids=["ru", "pl", "ar", "ja", "de", "edge"])
def test_plural_forms_are_checked_strictly_or_relaxed_as_msgfmt_does(tmp_path, plural_forms):
    nplurals = plural.parse(plural_forms).nplurals
    entries = _plural_entries(nplurals, seed=nplurals)
    failed = _compare(tmp_path, entries, plural_forms)
    assert 0 < failed < len(entries)


@needs_msgfmt
def test_a_range_flag_relaxes_a_form_the_range_reaches_once(tmp_path):
    """`#, range: 1..1` (or 21..21): the formula may take form k often, but the range lets it
    take it once, and msgfmt checks it relaxed."""
    entries, ranges = [], {}
    for k, (low, high) in enumerate([(1, 1), (21, 21), (2, 4), (0, 1000), (5, 5)]):
        for forms in (["Datei", "%d Dateien", "%d Dateien"], ["%d Datei", "Dateien", "Dateien"],
                      ["Datei", "Dateien", "Dateien"]):
            ranges[len(entries)] = (low, high)
            entries.append((f"c-format, range: {low}..{high}", "%d file", forms, "%d files"))
    failed = _compare(tmp_path, entries, RU, ranges)
    assert 0 < failed < len(entries)


ACCELERATORS = [
    ("&Open", "Ö&ffnen"), ("&Open", "Öffnen"), ("&Open", "&Ö&ffnen"), ("&Open", "Ö&&ffnen"),
    ("&Open", "Ö&&ff&nen"), ("&Open", "&&&"), ("&Open", "&&&&"), ("Open && close", "Ö&ffnen"),
    ("Open & &close", "Öffnen"), ("Save &as...", "Speichern &unter..."), ("&Save", ""),
    ("No mark", "Kein &Zeichen"), ("&Open", "Öffnen&"), ("_Quit", "_Beenden"),
    ("E&xit", "Beenden"), ("&Help", "&Hilfe &"), ("&File", "&&Datei"), ("&Edit", "&Bear&beiten"),
]


@needs_msgfmt
@pytest.mark.parametrize("char", ["&", "_"])
def test_accelerators_are_counted_as_msgfmt_counts_them(tmp_path, char):
    cases = [(i.replace("&", char), s.replace("&", char)) for i, s in ACCELERATORS]
    text, where = _catalog([("no-c-format", i, s, None) for i, s in cases])
    messages, total = _msgfmt(tmp_path, text, f"--check-accelerators={char}")
    ours = {line: formats.check_accelerators(*cases[k], char) for line, k in where.items()}
    assert {line: m for line, m in ours.items() if m} == messages
    assert total == len(messages) >= 7


@needs_msgfmt
def test_a_plural_entry_is_not_checked_for_accelerators(tmp_path):
    entry = ("no-c-format", "&Open one", ["Öffnen", "Öffnen"], "&Open many")
    text, _ = _catalog([entry], DE)
    assert _msgfmt(tmp_path, text, "--check-accelerators=&") == ({}, 0)
    assert formats.check_accelerators("&Open one", "Öffnen", msgid_plural="&Open many") is None


# ---------------------------------------------------------------- the reading itself


def test_prose_percent_is_a_directive_as_msgfmt_reads_it():
    found = formats.directives("Copied 50% of %d files", "c-format")
    assert [(d.text, d.conversion) for d in found] == [("% o", "o"), ("%d", "d")]
    assert found[0] == Directive(9, 12, "% o", "o", None, None, ((None, "[unsigned]i"),))


def test_c_directives_carry_positions_and_argument_types():
    found = formats.directives("%2$*1$.*3$Lf%%%1$d%3$d", "c-format")
    assert [d.text for d in found] == ["%2$*1$.*3$Lf", "%%", "%1$d", "%3$d"]
    assert found[0].number == 2 and found[0].args == (
        (1, "i"), (3, "i"), (2, "[long long]f"))
    assert found[1].args == ()
    assert formats.directives("%<PRIu64>", "c-format")[0].args == (
        (None, "[unsigned][int64_t]i"),)
    assert formats.directives("%zd %jx", "c-format")[1].args == (
        (None, "[unsigned][intmax_t]i"),)


def test_the_I_flag_is_read_in_a_translation_only():
    with pytest.raises(FormatError) as e:
        formats.directives("%Id", "c-format")
    assert str(e.value) == ("In the directive number 1, the character 'I' is not a valid "
                            "conversion specifier.")
    assert [d.text for d in formats.directives("%Id", "c-format", translated=True)] == ["%Id"]


def test_the_issues_stray_z_is_refused_with_msgfmts_reason():
    with pytest.raises(FormatError) as e:
        formats.directives("%s%zd%z %s", "c-format")
    assert e.value.reason == ("In the directive number 3, the character ' ' is not a valid "
                              "conversion specifier.")
    assert e.value.position == 7 and [d.text for d in e.value.directives] == ["%s", "%zd"]
    assert formats.invalid_reason("%s%zd%zu %s", "c-format") is None


def test_python_names_and_the_missing_conversion():
    found = formats.directives("%(count)d items in %(folder)s", "python-format")
    assert [(d.name, d.conversion) for d in found] == [("count", "d"), ("folder", "s")]
    # msgfmt (and Python) read "%(derderderder) %(" as a directive with flag ' ' and '%'.
    found = formats.directives("in %(derderderder) %(count)d", "python-format")
    assert [(d.text, d.name) for d in found] == [("%(derderderder) %", "derderderder")]
    assert formats.invalid_reason("von %(current) Bytes", "python-format") == (
        "In the directive number 1, the character 'B' is not a valid conversion specifier.")
    assert formats.invalid_reason("%(a)s %d", "python-format") == (
        "The string refers to arguments both through argument names and through unnamed "
        "argument specifications.")


def test_brace_fields_are_named_by_their_whole_text_as_in_gettext_0_21():
    found = formats.directives("{{x}} {a.b[0]:>10} {0} {x:{w}}", "python-brace-format")
    assert [d.name for d in found] == ["a.b[0]:>10", "0", "x:{w}"]
    assert formats.invalid_reason("{a!r}", "python-brace-format") == (
        "In the directive number 0, there is an unterminated format directive.")
    assert formats.invalid_reason("a } b", "python-brace-format") is None
    # printf's %c of the string's end: a NUL that cuts msgfmt's message short.
    assert formats.invalid_reason("a {", "python-brace-format") == "In the directive number 0, '"


def test_check_entry_follows_msgid_plural_and_the_formula():
    assert formats.check_entry("%d file", "Datei", "c-format", msgid_plural="%d files",
                               plural_index=0, plural_forms=RU) == (
        "number of format specifications in 'msgid_plural' and 'msgstr[0]' does not match")
    assert formats.check_entry("%d file", "Datei", "c-format", msgid_plural="%d files",
                               plural_index=0, plural_forms=PL) is None
    assert formats.check_entry("%d file", "Datei", "c-format", msgid_plural="%d files",
                               plural_index=0) is None  # msgfmt's default: n != 1
    assert formats.check_entry("%d file", "Datei", "c-format", msgid_plural="%d files",
                               plural_index=0, plural_forms=PL, nforms=1) is not None
    assert formats.check_entry("%s", "%d", "c-format") == (
        "format specifications in 'msgid' and 'msgstr' for argument 1 are not the same")
    assert formats.check_entry("%s\n", "%s", None) == (
        "'msgid' and 'msgstr' entries do not both end with '\\n'")
    assert formats.check_entry("%s", "", "c-format") is None  # untranslated: not checked
    assert formats.check_entry("%s %", "%d", "c-format") is None  # invalid msgid: no check


def test_format_flags_as_msgfmt_reads_them():
    assert formats.format_flags(["fuzzy", "c-format"]) == ("c-format",)
    assert formats.format_flags("no-c-format") == ()
    assert formats.format_flags("possible-python-format, fuzzy") == ("python-format",)
    assert formats.format_flags("python-brace-format, c-format") == (
        "c-format", "python-brace-format")
    assert formats.format_flags("c-format no-c-format") == ()
    assert formats.format_flags("sh-format") == ("sh-format",)
    with pytest.raises(UnsupportedFormat):
        formats.check_entry("$x", "$y", "sh-format")
    with pytest.raises(ValueError):
        formats.directives("x", "cobol-format")


def test_protection_reads_the_flags_as_msgfmt_does():
    """--protect=auto in a PO entry: the kinds of the formats msgfmt -c checks it as, markup and
    the code-like kinds; an entry checked as no format keeps every kind but those turned off."""
    every, code = frozenset(span_finding.KINDS), frozenset(code_spans.CODE_KINDS)
    assert formats.protected_kinds(("c-format",)) == {"printf", "markup"} | code
    assert formats.protected_kinds(("possible-c-format",)) == {"printf", "markup"} | code
    assert formats.protected_kinds(("fuzzy", "python-format")) == {"printf", "markup"} | code
    assert formats.protected_kinds(("python-brace-format",)) == {"brace", "markup"} | code
    assert formats.protected_kinds(("c-format", "python-brace-format")) == \
        {"printf", "brace", "markup"} | code
    assert formats.protected_kinds(("qt-format",)) == {"markup"} | code
    assert formats.protected_kinds(("no-c-format",)) == every - {"printf"}
    assert formats.protected_kinds(("impossible-c-format",)) == every - {"printf"}
    assert formats.protected_kinds(("c-format", "no-c-format")) == every - {"printf"}
    assert formats.protected_kinds(("no-c-format", "python-format")) == \
        {"printf", "markup"} | code
    assert formats.protected_kinds(("fuzzy",)) == formats.protected_kinds(()) == every
    # One table: a kind it names is a protected-span kind, and what is judged here is read here.
    assert {how.protected for how in FORMATS.values()} - {None} <= every
    assert all(formats.directives("x", f"{name}-format") == []
               for name, how in FORMATS.items() if how.read)


def test_no_eval_and_no_tensorflow_in_the_modules():
    source = "".join(open(m.__file__, encoding="utf-8").read() for m in (formats, plural))
    assert not re.search(r"\b(eval|exec|compile)\(", source)
    assert "tensorflow" not in source and "import keras" not in source


@needs_msgfmt
@pytest.mark.parametrize("nplurals", [100, 101])
def test_above_100_forms_msgfmt_relaxes_every_form(tmp_path, nplurals):
    value = f"nplurals={nplurals}; plural=n%{nplurals};"
    forms = ["%d x"] * nplurals
    forms[5] = "x"
    failed = _compare(tmp_path, [("c-format", "%d a", forms, "%d b")], value)
    assert failed == (nplurals <= 100)


def test_kde_directives_and_the_one_argument_a_string_may_ignore():
    found = formats.directives("%1 (%2) %%3 %L1 %0 %3x", "kde-format")
    assert [(d.start, d.end, d.text, d.number) for d in found] == [
        (0, 2, "%1", 1), (4, 6, "%2", 2), (9, 11, "%3", 3), (19, 21, "%3", 3)]  # %L1: text
    assert found[0] == Directive(0, 2, "%1", "", 1, None, ((1, None),))
    assert [d.text for d in formats.directives("%10 %9 %8 %7 %6 %5 %4 %3 %2 %1 0",
                                               "kde-format")][:2] == ["%10", "%9"]
    assert formats.invalid_reason("%2 of %4", "kde-format") == (
        "The string refers to argument number 4 but ignores the arguments 1 and 3.")
    assert formats.invalid_reason("%3", "kde-format") == (
        "The string refers to argument number 3 but ignores the arguments 1 and 2.")
    assert formats.invalid_reason("%2", "kde-format") is None  # one may be ignored
    # C's unsigned int: %4294967297 is argument 1.
    assert formats.directives("%4294967297", "kde-format")[0].number == 1
    assert formats.check_entry("%1 (%2)", "%1 (%3)", "kde-format") == (
        "a format specification for argument 2 doesn't exist in 'msgstr'")


def test_kde_plural_forms_strict_in_ru_relaxed_for_de_singular():
    kw = dict(msgid_plural="%1 days", plural_index=0)
    assert formats.check_entry("%1 day", "ein Tag", "kde-format", plural_forms=DE, **kw) is None
    assert formats.check_entry("%1 day", "один день", "kde-format", plural_forms=RU, **kw) == (
        "a format specification for argument 1 doesn't exist in 'msgstr[0]'")
    assert formats.check_entry("%1 day", "%1 день", "kde-format", plural_forms=RU, **kw) is None
    assert formats.check_entry("%1 file in %2", "eine Datei", "kde-format", plural_forms=DE,
                               msgid_plural="%1 files in %2", plural_index=0) == (
        "a format specification for arguments 1 and 2 doesn't exist in 'msgstr[0]', only one "
        "argument may be ignored")
    assert formats.check_entry("%1 day", "%2 Tage", "kde-format", plural_forms=DE, **kw) == (
        "a format specification for argument 2, as in 'msgstr[0]', doesn't exist in "
        "'msgid_plural'")


def test_qt_directives_numbers_and_simple_strings():
    found = formats.directives("%L1 %10 %%2 %05 %123 %L %", "qt-format")
    assert [(d.text, d.number) for d in found] == [
        ("%L1", 1), ("%10", 10), ("%2", 2), ("%05", 5), ("%12", 12)]
    assert formats.check_entry("%1 (%2)", "%L1 (%2)", "qt-format") == (
        "'msgid' is a simple format string, but 'msgstr' is not: it contains an 'L' flag or a "
        "double-digit argument number")
    assert formats.check_entry("%L1 (%2)", "%1 (%2)", "qt-format") is None
    assert formats.check_entry("%0 and %1", "%1", "qt-format") == (
        "a format specification for argument 0 doesn't exist in 'msgstr'")
    # Qt's check is strict even for a rarely used plural form.
    assert formats.check_entry("%1 file", "eine Datei", "qt-format", msgid_plural="%1 files",
                               plural_index=0, plural_forms=DE) is not None


def test_qt_plural_count_directive():
    found = formats.directives("%n file(s), %Ln, %%n, %N", "qt-plural-format")
    assert [(d.start, d.text, d.conversion) for d in found] == [
        (0, "%n", "n"), (12, "%Ln", "n"), (18, "%n", "n")]
    assert formats.check_entry("Files", "%n Dateien", "qt-plural-format") == (
        "number of format specifications in 'msgid' and 'msgstr' does not match")
    assert formats.check_entry("%n files", "Dateien", "qt-plural-format") is not None
    assert formats.check_entry("%n file", "eine Datei", "qt-plural-format", msgid_plural="%n files",
                               plural_index=0, plural_forms=DE) is None
    assert formats.check_entry("%n file", "%n %n", "qt-plural-format") is None


def test_kde_kuit_format_is_left_unsupported():
    assert formats.format_flags("kde-kuit-format, kde-format") == ("kde-format", "kde-kuit-format")
    with pytest.raises(UnsupportedFormat):
        formats.check_entry("<b>%1</b>", "<b>%1", "kde-kuit-format")
