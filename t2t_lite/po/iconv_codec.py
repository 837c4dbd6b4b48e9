"""Charsets msgfmt reads that Python has no codec for (EUC-TW, GEORGIAN-PS, ...), through the
system's iconv program (what msgfmt's own conversions use), as Python codecs.

    name = iconv_codec.lookup("EUC-TW")   # "iconv_euc-tw", or None where iconv lacks it too
    "文字".encode(name); data.decode(name, "surrogateescape")

Each conversion is one iconv run: a catalog in such a charset is decoded whole once
(po/po_lexer.py) and its new lines encoded one by one. Errors "strict", "replace" and
"surrogateescape" are supported, as the catalog code uses them.
"""
import codecs
import functools
import re
import shutil
import subprocess

_PREFIX = "iconv_"
_CHARSETS = {}  # codec name, as Python's search passes it (hyphens as "_") -> iconv's name
_POSITION = re.compile(rb"position (\d+)")


def _run(data, source, target):
    """(converted bytes, None) or (None, byte position of the first input iconv cannot convert
    (len(data) for an incomplete sequence at the end))."""
    result = subprocess.run(["iconv", "-f", source, "-t", target], input=data,
                            capture_output=True, check=False)
    if result.returncode == 0:
        return result.stdout, None
    found = _POSITION.search(result.stderr)
    return None, int(found.group(1)) if found else len(data)


@functools.lru_cache(maxsize=None)
def lookup(charset):
    """The codec name for a charset iconv converts and Python lacks, None where iconv cannot."""
    if not shutil.which("iconv") or not re.fullmatch(r"[\w.:\-]+", charset):
        return None
    converted, _ = _run(b"a", charset, "UTF-8")
    if converted != b"a":
        return None
    name = _PREFIX + re.sub(r"[\W]", "_", charset.lower())
    _CHARSETS[name] = charset
    return name


def _escaped(byte, errors):
    return chr(0xDC00 + byte) if errors == "surrogateescape" else "\ufffd"


def _decoder(charset):
    def decode(data, errors="strict"):
        data, out, start = bytes(data), [], 0
        while start < len(data):
            converted, bad = _run(data[start:], charset, "UTF-8")
            if bad is None:
                out.append(converted.decode("utf-8"))
                break
            if errors == "strict":
                raise UnicodeDecodeError(charset, data, start + bad, start + bad + 1,
                                         "iconv cannot convert it")
            bad = min(bad, len(data) - start - 1)
            prefix, _ = _run(data[start:start + bad], charset, "UTF-8") if bad else (b"", None)
            if prefix is None:  # an incomplete sequence before the end: one byte at a time
                prefix, bad = b"", 0
            out += [prefix.decode("utf-8"), _escaped(data[start + bad], errors)]
            start += bad + 1
        return "".join(out), len(data)
    return decode


def _encoder(charset):
    def encode(text, errors="strict"):
        out = []
        for run in re.finditer("[\udc80-\udcff]+|[^\udc80-\udcff]+", text):
            piece = run.group()
            if "\udc80" <= piece[0] <= "\udcff":
                if errors != "surrogateescape":
                    raise UnicodeEncodeError(charset, text, run.start(), run.end(),
                                             "surrogates not allowed")
                out.append(bytes(ord(c) - 0xDC00 for c in piece))
                continue
            data = piece.encode("utf-8")
            converted, bad = _run(data, "UTF-8", charset)
            if bad is None:
                out.append(converted)
                continue
            if errors != "replace":
                index = run.start() + len(data[:bad].decode("utf-8", "ignore"))
                raise UnicodeEncodeError(charset, text, index, index + 1,
                                         "iconv cannot convert it")
            for c in piece:  # rare: only where a caller asked for "?" in place of a character
                converted, _ = _run(c.encode("utf-8"), "UTF-8", charset)
                out.append(b"?" if converted is None else converted)
        return b"".join(out), len(text)
    return encode


def _search(name):
    charset = _CHARSETS.get(name)
    if charset is None:
        return None
    return codecs.CodecInfo(_encoder(charset), _decoder(charset), name=name)


codecs.register(_search)
