"""t2t-lite-po at the edges an operator meets from cron, pipes and batch schedulers: a catalog on a
pipe, a FIFO or /dev/stdin, or changed during the run (read once, at the start); a journal torn
inside a record; the charset read from the header entry as msgfmt reads it (iconv for the
charsets Python lacks); a translation the charset cannot hold; no msgfmt on PATH; the output's
lock taken before TensorFlow loads; several --input flags; `domain` lines, `no-wrap` entries and
mixed line ends.

The refusals run the real CLI with a `tensorflow` package that fails on import in front of the
real one: what they check happens before TensorFlow loads, and the test proves it. The others run
the CLI on the session's tiny model (random weights: the translations are noise, what is checked
is what the tool does with them).
"""
import io
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from t2t_lite import exit_status, file_lock
from t2t_lite.po import catalog_file, engine as po_engine, iconv_codec
from t2t_lite.po import compose, run as po_run
from t2t_lite.po.run import PoOptions
from tests.po import po_doubles
from tests import full_disk

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")
MSGFMT = shutil.which("msgfmt")
needs_msgfmt = pytest.mark.skipif(MSGFMT is None, reason="gettext's msgfmt is not installed")
needs_iconv = pytest.mark.skipif(iconv_codec.lookup("EUC-TW") is None,
                                 reason="iconv with EUC-TW is not installed")


def header(charset="UTF-8", eol="\n"):
    lines = ['msgid ""', 'msgstr ""', '"Project-Id-Version: prog 1.0\\n"', '"Language: de\\n"',
             '"MIME-Version: 1.0\\n"', f'"Content-Type: text/plain; charset={charset}\\n"',
             '"Content-Transfer-Encoding: 8bit\\n"',
             '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"', ""]
    return eol.join(lines) + eol


def entries(count, start=0):
    return "".join(f'msgid "the dog ran away {i}"\nmsgstr ""\n\n' for i in range(start, count))


def command(model_dir, *args):
    return [sys.executable, "-m", "t2t_lite.bin.po", f"--model_dir={model_dir}", *args]


def run(model_dir, *args, **kwargs):
    return subprocess.run(command(model_dir, *args), capture_output=True, text=True, env=ENV,
                          cwd=REPO, timeout=600, **kwargs)


def summary(result):
    return result.stderr.strip().splitlines()[-1]


def msgfmt_check(path):
    return subprocess.run([MSGFMT, "--check", "--use-fuzzy", "-o", os.devnull, str(path)],
                          capture_output=True, text=True, errors="replace")


def translated(path):
    return {e.msgid: e.msgstr for e in catalog_file.read(str(path)).messages() if e.msgstr}


# ---- refusals before TensorFlow loads ------------------------------------------------------

@pytest.fixture()
def without_tensorflow(tmp_path):
    """The CLI's environment with a `tensorflow` that fails on import."""
    fake = tmp_path / "fake_tf" / "tensorflow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('TensorFlow was imported')\n")
    return dict(ENV, PYTHONPATH=os.pathsep.join([str(fake.parent), REPO]))


def quick(env, *args, model_dir=None):
    """The CLI's run under `env`, on a model_dir (by default one whose run.json names no
    problem, enough for what is refused before the model is read)."""
    if model_dir is None:
        model_dir = os.path.join(os.path.dirname(env["PYTHONPATH"].split(os.pathsep)[0]),
                                 "model")
        os.makedirs(model_dir, exist_ok=True)
        with open(os.path.join(model_dir, "run.json"), "w", encoding="utf-8") as f:
            f.write("{}\n")
    return subprocess.run(command(model_dir, *args), capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120)


def test_a_locked_output_is_refused_before_tensorflow_loads(model_dir, tmp_path,
                                                             without_tensorflow):
    """The model's problem (run.json) is looked up in the registry, which imports TensorFlow:
    the lock comes first."""
    source = tmp_path / "in.po"
    source.write_text(header() + entries(2), encoding="utf-8")
    output = tmp_path / "out.po"
    lock = file_lock.FileLock(str(output) + file_lock.LOCK_SUFFIX, "a test").acquire()
    try:
        result = quick(without_tensorflow, f"--input={source}", f"--output={output}",
                       model_dir=model_dir)
    finally:
        lock.release()
    assert result.returncode == exit_status.USER_ERROR, result.stderr[-2000:]
    assert re.fullmatch(rf"error: --output {re.escape(str(output))} is being written by another "
                        r"run \(pid \d+ .*\); wait for it or stop it \(its lock: .*\)",
                        result.stderr.strip()), result.stderr[-2000:]
    assert sorted(os.listdir(tmp_path)) == ["fake_tf", "in.po"]


def test_an_empty_pipe_never_empties_an_existing_output(tmp_path, without_tensorflow):
    output = tmp_path / "existing.po"
    output.write_text(header() + 'msgid "old"\nmsgstr "alt"\n', encoding="utf-8")
    before = output.read_bytes()
    model = tmp_path / "model"
    model.mkdir()
    (model / "run.json").write_text("{}\n")
    result = subprocess.run(command(model, "--input=/dev/stdin", f"--output={output}"),
                            input="", capture_output=True, text=True, env=without_tensorflow,
                            cwd=REPO, timeout=120)
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.strip() == ("error: --input /dev/stdin holds no catalog entry (0 bytes "
                                     "read); nothing written")
    assert output.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["existing.po", "fake_tf", "model"]


def test_several_inputs_are_refused_in_one_line(tmp_path, without_tensorflow):
    names = []
    for name in ("a.po", "b.po", "c.po"):
        (tmp_path / name).write_text(header() + entries(1), encoding="utf-8")
        names.append(f"--input={tmp_path / name}")
    result = quick(without_tensorflow, *names, f"--output={tmp_path / 'out.po'}")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.strip() == (
        "error: --input is given 3 times; t2t-lite-po translates one catalog into one output "
        "per run: run it once for each catalog")
    assert not (tmp_path / "out.po").exists()


def test_a_full_disk_names_the_lock_and_leaves_none(tmp_path, without_tensorflow):
    source = tmp_path / "in.po"
    source.write_text(header() + entries(2), encoding="utf-8")
    with full_disk.full() as folder:
        output = os.path.join(folder, "out.po")
        result = quick(without_tensorflow, f"--input={source}", f"--output={output}")
        assert result.returncode == exit_status.WRITE_FAILED, result.stderr[-2000:]
        assert result.stderr.strip() == (
            f"error: cannot write the lock {output}.lock of --output {output}: No space left on "
            "device; nothing was written")
        assert sorted(os.listdir(folder)) == ["filler"]


# ---- the journal: a torn record ------------------------------------------------------------

def test_a_torn_journal_keeps_every_whole_record(tmp_path):
    path = str(tmp_path / "journal.jsonl")
    first = po_engine.Journal(path)
    first.add([(("best", "none", "Grüße 1"), ["a"]), (("best", "none", "Grüße 2"), ["b"])])
    whole = open(path, "rb").read()
    record = '{"key": ["best", "none", "Grüße 3"], "hyps": ["c"]}\n'.encode()
    torn = record[:record.index("ü".encode()) + 1]  # cut inside the UTF-8 of ü
    with open(path, "ab") as f:
        f.write(torn)
    said = []
    second = po_engine.Journal(path, progress=_Lines(said))
    assert set(second.done) == {("best", "none", "Grüße 1"), ("best", "none", "Grüße 2")}
    assert said == [f"t2t-lite-po: {path}: dropped 1 torn record (an interrupted write; line 3); "
                    "its lines are translated again, the 2 whole records kept\n"]
    assert open(path, "rb").read() == whole  # the torn tail cut: the next record starts clean
    second.add([(("best", "none", "4"), ["d"])])
    with open(path, "ab") as f:
        f.write(torn)
    third = po_engine.Journal(path, progress=_Lines([]))
    assert len(third.done) == 3  # the second interruption lost nothing already done
    # A torn record in the middle (a journal appended to after a torn one): the records after
    # it are kept.
    with open(path, "ab") as f:
        f.write(torn + b"\n" + record)
    fourth = po_engine.Journal(path, progress=_Lines(said))
    assert len(fourth.done) == 4 and "line 4" in said[-1]


class _Lines:
    def __init__(self, out):
        self.out = out

    def write(self, text):
        if text.strip():
            self.out.append(text + "\n" if not text.endswith("\n") else text)

    def flush(self):
        pass


def test_a_full_disk_names_the_journal(tmp_path):
    with full_disk.tmpfs() as folder:
        path = os.path.join(folder, "journal.jsonl")
        journal = po_engine.Journal(path)
        full_disk.fill(folder)
        with pytest.raises(Exception) as raised:
            journal.add([(("best", "none", "x" * 100), ["y" * 8000])])
        assert str(raised.value) == (
            f"cannot write the journal {path}: No space left on device; the translations it "
            "holds are kept; re-run the same command to continue")


@pytest.mark.slow
def test_a_killed_run_with_a_torn_journal_resumes_twice(model_dir, tmp_path):
    source = tmp_path / "in.po"
    source.write_text(header() + entries(12), encoding="utf-8")
    output = tmp_path / "de.po"
    journal = tmp_path / "de.po.t2t-po-work" / "journal.jsonl"
    args = (f"--input={source}", f"--output={output}", "--chunk_lines=1")
    torn = '{"key": ["best", "brace+markup+printf", "Grüße"], "hyps": ["x"]}\n'.encode()
    torn = torn[:torn.index("ü".encode()) + 1]
    records = []
    for _ in range(2):  # killed once, and killed again after resuming the torn journal
        before = journal.read_bytes().count(b"\n") if journal.exists() else 0
        _kill_after_records(command(model_dir, *args), journal, before + 2)
        records.append(journal.read_bytes().count(b"\n"))
        with open(journal, "ab") as f:
            f.write(torn)
    assert records[1] > records[0] >= 2
    result = run(model_dir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{journal}: dropped 1 torn record" in result.stderr, result.stderr[-3000:]
    resumed = re.search(r"\((\d+) by the interrupted run resumed\)", summary(result))
    assert resumed and int(resumed.group(1)) >= records[1], result.stderr[-3000:]
    assert len(translated(output)) == 12 and not journal.parent.exists()


def _kill_after_records(argv, journal, count):
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV,
                               cwd=REPO)
    deadline = time.monotonic() + 300
    while not (journal.is_file() and journal.read_bytes().count(b"\n") >= count
               and journal.read_bytes().endswith(b"\n")):
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no progress record after 300 s"
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    process.stderr.close()


# ---- the input read once -------------------------------------------------------------------

@pytest.mark.slow
@needs_msgfmt
def test_a_catalog_on_stdin_replaces_an_existing_output_whole(model_dir, tmp_path):
    text = header() + entries(3)
    output = tmp_path / "existing.po"
    output.write_text(header() + 'msgid "old"\nmsgstr "alt"\n', encoding="utf-8")
    result = run(model_dir, "--input=/dev/stdin", f"--output={output}", input=text)
    assert result.returncode == 0, result.stderr[-3000:]
    assert summary(result).startswith("translated 3 of 3 entries"), summary(result)
    assert len(translated(output)) == 3 and msgfmt_check(output).returncode == 0


@pytest.mark.slow
@needs_msgfmt
def test_a_catalog_on_a_fifo(model_dir, tmp_path):
    fifo = tmp_path / "in.po"
    os.mkfifo(fifo)
    text = entries(3).encode()  # no header: none is claimed set

    def write():
        with open(fifo, "wb") as f:
            f.write(text)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    output = tmp_path / "de.po"
    result = run(model_dir, f"--input={fifo}", f"--output={output}")
    writer.join(timeout=10)
    assert result.returncode == 0, result.stderr[-3000:]
    assert summary(result).startswith("translated 3 of 3 entries"), summary(result)
    assert "header:" not in summary(result)
    assert len(translated(output)) == 3
    # msgfmt -c refuses any catalog without a header; plain msgfmt reads this one.
    assert subprocess.run([MSGFMT, "--use-fuzzy", "-o", os.devnull, str(output)],
                          capture_output=True).returncode == 0


@pytest.mark.slow
@needs_msgfmt
def test_a_catalog_changed_during_the_run_is_translated_as_it_was_read(model_dir, tmp_path):
    """The catalog is edited while the model works (an entry made plural, a msgid changed): the
    output is the catalog as read at the start, with every entry's translation."""
    source = tmp_path / "in.po"
    original = header() + entries(8)
    source.write_text(original, encoding="utf-8")
    output = tmp_path / "de.po"
    journal = tmp_path / "de.po.t2t-po-work" / "journal.jsonl"
    process = subprocess.Popen(command(model_dir, f"--input={source}", f"--output={output}",
                                       "--chunk_lines=1"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV,
                               cwd=REPO, text=True)
    deadline = time.monotonic() + 300
    while not journal.is_file():
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no progress record after 300 s"
        time.sleep(0.01)
    source.write_text(original.replace(
        'msgid "the dog ran away 7"\nmsgstr ""',
        'msgid "the dog ran away 7"\nmsgid_plural "dogs"\nmsgstr[0] ""\nmsgstr[1] ""').replace(
        "away 6", "away six"), encoding="utf-8")
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    written = catalog_file.read(str(output))
    assert [e.msgid for e in written.messages()] == [f"the dog ran away {i}" for i in range(8)]
    assert all(e.msgstr and e.msgid_plural is None for e in written.messages())
    assert msgfmt_check(output).returncode == 0


# ---- the charset, as msgfmt reads it -------------------------------------------------------

def _catalog(header_strings, probe, encoding, before="", after=""):
    head = 'msgid ""\nmsgstr ""\n' + "".join(f'"{s}"\n' for s in header_strings)
    return (before + head + f'\nmsgid "probe"\nmsgstr "{probe}"\n' + after).encode(
        encoding, "surrogateescape")


# name -> (the catalog's bytes, the charset msgfmt reads, the probe's msgstr as read)
CHARSETS = {
    "a comment before the header names another charset": (
        _catalog(["Content-Type: text/plain; charset=UTF-8\\n"], "Café —", "utf-8",
                 before="# Was Content-Type: text/plain; charset=ISO-8859-1 until 2003\n"),
        "UTF-8", "Café —"),
    "Content-Type split over two strings": (
        _catalog(["Content-Type: text/plain; ", "charset=ISO-8859-1\\n"], "Café", "latin-1"),
        "ISO-8859-1", "Café"),
    "charset= without Content-Type": (
        _catalog(["X-Encoding: charset=ISO-8859-1\\n"], "Grüße", "latin-1"), "ISO-8859-1",
        "Grüße"),
    "a charset msgfmt warns of, read byte-wise": (
        _catalog(["Content-Type: text/plain; charset=NOPE-9\\n"], "b\udce9", "latin-1"),
        "NOPE-9", "b\xe9"),
    "a backslash-newline at the end": (
        _catalog(["Content-Type: text/plain; charset=UTF-8\\n"], "Café", "utf-8",
                 after="\\\n"), "UTF-8", "Café"),
    "invalid bytes inside the header entry": (
        _catalog(["Content-Type: text/plain; charset=UTF-8\\n", "Last-Translator: J\udce9r\\n"],
                 "Café", "utf-8"), "UTF-8", "Café"),
    "Charset= in capitals names no charset": (
        _catalog(["Content-Type: text/plain; Charset=ISO-8859-1\\n"], "Cafe", "ascii"), None,
        "Cafe"),
    "EUC-TW, through iconv": (
        _catalog(["Content-Type: text/plain; charset=EUC-TW\\n"], "文字", "utf-8"), "EUC-TW",
        "文字"),
    "GEORGIAN-PS, through iconv": (
        _catalog(["Content-Type: text/plain; charset=GEORGIAN-PS\\n"], "ენა", "utf-8"),
        "GEORGIAN-PS", "ენა"),
}


def _varied(count):
    """Entries of words the tiny model's vocabulary has and has not seen (it answers some with
    its unknown token, "⁇")."""
    rng = random.Random(1)
    words = ("the house is small . a cat sat on the mat , and the dog ran away ! we read books "
             "every day ? she said : no . zebra quokka xylophone").split()
    return "".join(f'msgid "{" ".join(rng.choice(words) for _ in range(rng.randint(2, 8)))} '
                   f'{i}"\nmsgstr ""\n\n' for i in range(count))


def _in_charset(data, charset):
    """The UTF-8 bytes of _catalog recoded into `charset` (iconv: Python lacks some)."""
    if charset in ("EUC-TW", "GEORGIAN-PS"):
        return subprocess.run(["iconv", "-f", "UTF-8", "-t", charset], input=data,
                              capture_output=True, check=True).stdout
    return data


@needs_msgfmt
@needs_iconv
@pytest.mark.parametrize("name", sorted(CHARSETS))
def test_the_charset_is_read_from_the_header_entry_as_msgfmt_reads_it(tmp_path, name):
    data, charset, probe = CHARSETS[name]
    data = _in_charset(data, charset)
    path = tmp_path / "in.po"
    path.write_bytes(data)
    result = subprocess.run([MSGFMT, "-o", os.devnull, str(path)], capture_output=True,
                            text=True, errors="replace")
    assert result.returncode == 0, result.stderr
    catalog = catalog_file.read(str(path))
    assert catalog.charset == charset
    assert [e.msgstr for e in catalog.messages()] == [probe]
    assert catalog.to_bytes() == data
    if charset and charset != "NOPE-9":  # msgfmt's own reading, in UTF-8, agrees
        converted = subprocess.run(["msgconv", "-t", "UTF-8", str(path)], capture_output=True,
                                   check=True).stdout
        assert [e.msgstr for e in catalog_file.parse(converted).messages()] == [probe]


def test_the_header_and_the_reader_agree_on_charset_in_capitals(tmp_path):
    """No charset for msgfmt: read as UTF-8, and the header says so once a translation is
    written (the output is what msgfmt then reads)."""
    data, _, _ = CHARSETS["Charset= in capitals names no charset"]
    source = tmp_path / "in.po"
    source.write_bytes(data.replace(b'msgstr "Cafe"', b'msgstr ""'))
    stats = po_doubles.translate_catalog(
        PoOptions(input=str(source), output=str(tmp_path / "out.po"), target_language="de"),
        translate=lambda lines, kinds: ["Kaffee – schön" for _ in lines],
        kinds_of=lambda flags: frozenset())
    assert stats.translated == 1, stats.summary()
    written = catalog_file.read(str(tmp_path / "out.po"))
    assert written.charset == "UTF-8" and written.messages()[0].msgstr == "Kaffee – schön"


# ---- what the charset cannot hold; what nothing here can judge -----------------------------

def test_translations_the_charset_cannot_hold_are_left_in_linear_time(tmp_path):
    source = tmp_path / "in.po"
    source.write_text(header("ASCII") + entries(1500), encoding="ascii")
    start = time.monotonic()
    stats = po_doubles.translate_catalog(
        PoOptions(input=str(source), output=str(tmp_path / "out.po")),
        translate=lambda lines, kinds: [f"{line} ⁇" if line.endswith(("0", "5")) else line
                                        for line in lines],
        kinds_of=lambda flags: frozenset())
    seconds = time.monotonic() - start
    assert stats.translated == 1200
    assert stats.left_untranslated == {compose.LEFT_CHARSET: 300}
    assert len(translated(tmp_path / "out.po")) == 1200
    assert seconds < 60, seconds


@pytest.mark.slow
def test_without_msgfmt_unreadable_formats_and_unencodable_translations_are_left(model_dir,
                                                                               tmp_path):
    """No msgfmt on PATH, an ASCII catalog: entries in formats only msgfmt reads stay
    untranslated and counted; the model's "⁇" (its unknown token) cannot be written in ASCII:
    those entries are left and counted, the rest written."""
    flags = ["sh-format", "boost-format", "gcc-internal-format", "kde-kuit-format",
             "scheme-format", "lisp-format", "ruby-format", "ycp-format", "smalltalk-format",
             "gfc-internal-format"]
    body = "".join(f'#, {flag}\nmsgid "the dog ran {i}"\nmsgstr ""\n\n'
                   for i, flag in enumerate(flags))
    body += "#, c-format\nmsgid \"the cat %d\"\nmsgstr \"\"\n\n" + _varied(60)
    source = tmp_path / "in.po"
    source.write_text(header("ASCII") + body, encoding="ascii")
    path = tmp_path / "bin"  # a PATH without msgfmt (the CLI is started by its full path)
    path.mkdir()
    output = tmp_path / "de.po"
    result = subprocess.run(command(model_dir, f"--input={source}", f"--output={output}"),
                            capture_output=True, text=True, cwd=REPO, timeout=600,
                            env=dict(ENV, PATH=str(path)))
    assert result.returncode == 0, result.stderr[-3000:]
    line = summary(result)
    assert f"10 entries left untranslated: {po_run.LEFT_UNJUDGED}" in line, line
    assert "msgfmt: not installed" in line
    written = catalog_file.read(str(output))
    assert not any(e.msgstr for e in written.messages() if any(f in e.flags for f in flags))
    left = re.search(rf"(\d+) entr(?:y|ies) left untranslated: {compose.LEFT_CHARSET}", line)
    counted = 0 if left is None else int(left.group(1))
    written_count = len([e for e in written.messages() if e.msgstr])
    empty = re.search(r"(\d+) entr(?:y|ies) left untranslated: the model", line)
    assert written_count + counted + 10 + (int(empty.group(1)) if empty else 0) == 71, line
    assert written_count > 0 and counted > 0, line  # the tiny model writes some "⁇"
    if MSGFMT:
        assert msgfmt_check(output).returncode == 0


@needs_msgfmt
@needs_iconv
def test_an_euc_tw_catalog_with_a_domain_no_wrap_and_mixed_line_ends(tmp_path):
    """EUC-TW (iconv's: Python has no codec), a header with CRLF line ends and entries with LF,
    a `domain` line, a `no-wrap` entry: every entry translated, each new line with its entry's
    line end, the no-wrap msgstr on one line, the rest byte for byte, msgfmt -c content. (A
    translator with fixed words: the tiny model's words fail a reviewer's checks.)"""
    long = "the house is small. the dog ran away. we read books every day. she said no."
    text = (header("EUC-TW", eol="\r\n") + '#. 文字\nmsgid "the cat sat 1"\nmsgstr ""\n\n'
            + 'domain "other"\n\n' + f'#, no-wrap\nmsgid "{long}"\nmsgstr ""\n\n'
            + 'msgid "the dog ran away 2"\nmsgstr ""\n')
    data = subprocess.run(["iconv", "-f", "UTF-8", "-t", "EUC-TW"], input=text.encode(),
                          capture_output=True, check=True).stdout
    source = tmp_path / "in.po"
    source.write_bytes(data)
    output = tmp_path / "de.po"
    words = "Das Haus ist klein und der Hund lief weg, wir lesen jeden Tag Buecher"
    stats = po_doubles.translate_catalog(
        PoOptions(input=str(source), output=str(output), no_fuzzy=True),
        translate=lambda lines, kinds: [" ".join([words] + re.findall(r"\d+", line))
                                        for line in lines],
        kinds_of=lambda flags: frozenset(), progress=io.StringIO())
    assert stats.translated == 3 and not stats.left_untranslated, stats
    assert stats.msgfmt.startswith("1 errors the input already had")  # the domain line
    out = output.read_bytes()
    assert out.startswith(data[:data.index(b'"Plural-Forms')])
    head, body = out.split(b"\r\n\r\n", 1)
    assert all(line.endswith(b"\r") for line in head.split(b"\n")[:-1])
    assert b"PO-Revision-Date" in head and b"\r" not in body
    written = catalog_file.read(str(output))
    assert written.charset == "EUC-TW" and "文字" in written.messages()[0].extracted_comments[0]
    no_wrap = next(e for e in written.messages() if e.msgid == long)
    assert f'msgstr "{no_wrap.msgstr}"\n'.encode() in out
    check = subprocess.run([MSGFMT, "--check", "--use-fuzzy", "-o", os.devnull, str(output)],
                           capture_output=True, text=True, errors="replace")
    assert check.stderr.count("fatal error") == 1 and "'domain other' directive" in check.stderr


@needs_msgfmt
def test_no_wrap_entries_are_written_as_msgcat_writes_them(tmp_path):
    source = tmp_path / "in.po"
    source.write_text(header() + '#, no-wrap\nmsgid "one"\nmsgstr ""\n\nmsgid "two"\nmsgstr ""\n',
                      encoding="utf-8")
    output = tmp_path / "out.po"
    long = "ein sehr langer Satz, " * 6
    po_doubles.translate_catalog(PoOptions(input=str(source), output=str(output), no_fuzzy=True),
                                 translate=lambda lines, kinds: [long.strip() for _ in lines],
                                 kinds_of=lambda flags: frozenset())
    out = output.read_bytes()
    assert f'#, no-wrap\nmsgid "one"\nmsgstr "{long.strip()}"\n'.encode() in out
    assert f'msgid "two"\nmsgstr ""\n"'.encode() in out  # wrapped at 79 columns
    assert subprocess.run(["msgcat", str(output)], capture_output=True,
                          check=True).stdout == out
