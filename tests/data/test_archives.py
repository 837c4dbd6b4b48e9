"""Safe extraction of tar, zip and gzip archives built here (and one downloaded from 127.0.0.1)."""
import gzip
import hashlib
import importlib.util
import io
import pathlib
import random
import tarfile
import zipfile

import pytest

from t2t_lite.data import archives
from t2t_lite.data import download as dl
from t2t_lite.data import text_io
from t2t_lite.errors import UserError

_spec = importlib.util.spec_from_file_location(
    "http_fixture", pathlib.Path(__file__).with_name("http_fixture.py"))
http_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(http_fixture)


def _tgz(members: dict) -> bytes:
    """A .tgz in memory; members maps archive names to bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _tar_with(info: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        ok = tarfile.TarInfo("ok.txt")
        ok.size = 3
        tar.addfile(ok, io.BytesIO(b"ok\n"))
        info.size = len(data) if info.isfile() else 0
        tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buf.getvalue()


def test_extract_tgz_of_sgm_files_and_selected_members(tmp_path):
    sgm = b'<refset>\n<doc docid="x">\n<seg id="1">Hallo Welt</seg>\n</doc>\n</refset>\n'
    archive = tmp_path / "dev.tgz"
    archive.write_bytes(_tgz({"dev/newstest2013-ref.de.sgm": sgm, "dev/other.txt": b"x\n"}))
    dest = archives.extract(archive, tmp_path / "out", members=["dev/newstest2013-ref.de.sgm"])
    assert (dest / "dev/newstest2013-ref.de.sgm").read_bytes() == sgm
    assert not (dest / "dev/other.txt").exists()
    # Idempotent: the marker makes a repeat free even if the archive is gone.
    archive.unlink()
    assert archives.extract(archive, tmp_path / "out", members=["dev/newstest2013-ref.de.sgm"]) == dest


def test_extract_remembers_members_of_earlier_calls(tmp_path):
    # EN-DE and EN-FR take different members of one shared archive.
    archive = tmp_path / "commoncrawl.tgz"
    archive.write_bytes(_tgz({"cc.de-en.en": b"a\n", "cc.fr-en.en": b"b\n"}))
    out = tmp_path / "out"
    archives.extract(archive, out, members=["cc.de-en.en"])
    archives.extract(archive, out, members=["cc.fr-en.en"])
    archive.unlink()
    assert archives.extract(archive, out, members=["cc.de-en.en"]) == out.resolve()


def test_extract_reports_missing_member(tmp_path):
    archive = tmp_path / "a.tgz"
    archive.write_bytes(_tgz({"a.txt": b"a\n"}))
    with pytest.raises(UserError, match="lacks the expected member.*b.txt"):
        archives.extract(archive, tmp_path / "out", members=["a.txt", "b.txt"])


def test_tar_of_gzipped_plain_files_reads_as_lines(tmp_path):
    # giga-fren's layout: a plain .tar holding gzip-compressed line files.
    lines = [b"first line", b"caf\xc3\xa9", b"third"]
    archive = tmp_path / "training-giga-fren.tar"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = gzip.compress(b"\n".join(lines) + b"\n")
        info = tarfile.TarInfo("giga-fren.release2.fixed.en.gz")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    archive.write_bytes(buf.getvalue())
    dest = archives.extract(archive, tmp_path / "out")
    with text_io.open_binary(str(dest / "giga-fren.release2.fixed.en.gz")) as f:
        assert list(text_io.bounded_lines(f)) == lines


def test_extract_single_gzip_file(tmp_path):
    archive = tmp_path / "corpus.en.gz"
    archive.write_bytes(gzip.compress(b"a\r\nb\n"))
    dest = archives.extract(archive, tmp_path / "out")
    assert (dest / "corpus.en").read_bytes() == b"a\r\nb\n"


@pytest.mark.parametrize("name", ["../evil.txt", "dev/../../evil.txt", "/tmp/evil-abs.txt"])
def test_tar_path_traversal_is_rejected_and_nothing_escapes(tmp_path, name):
    archive = tmp_path / "evil.tgz"
    info = tarfile.TarInfo(name)
    archive.write_bytes(_tar_with(info, b"pwned\n"))
    out = tmp_path / "a" / "out"
    with pytest.raises(UserError, match="unsafe archive member"):
        archives.extract(archive, out)
    assert not (tmp_path / "a" / "evil.txt").exists()
    assert not (tmp_path / "evil.txt").exists()
    assert not pathlib.Path("/tmp/evil-abs.txt").exists()
    assert not list(out.glob(".*.extracted"))


def _leftovers(out: pathlib.Path) -> list:
    """What an extraction left in `out` (members, staging folder, marker)."""
    return sorted(p.name for p in out.iterdir()) if out.exists() else []


@pytest.mark.parametrize("kind,target", [(tarfile.SYMTYPE, "../../outside"),
                                         (tarfile.SYMTYPE, "/etc/passwd"),
                                         (tarfile.LNKTYPE, "../outside"),
                                         (tarfile.SYMTYPE, "ok.txt"),
                                         (tarfile.LNKTYPE, "ok.txt")])
def test_tar_links_are_refused_and_nothing_is_written(tmp_path, kind, target):
    # Even a link to a sibling is refused: datasets need none, and checking links one at a time
    # against the disk can be outwitted (next test).
    info = tarfile.TarInfo("link")
    info.type = kind
    info.linkname = target
    archive = tmp_path / "links.tar"
    archive.write_bytes(_tar_with(info))
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"unsafe archive member 'link': (symbolic|hard) link"):
        archives.extract(archive, out)
    assert _leftovers(out) == []  # ok.txt, extracted before the link, was removed too


def test_tar_symlink_chain_cannot_escape(tmp_path):
    # m -> n/.. is harmless while n does not exist; n -> . then makes m the parent folder.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, target in (("m", "n/.."), ("n", ".")):
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
        escape = tarfile.TarInfo("m/escaped.txt")
        escape.size = 5
        tar.addfile(escape, io.BytesIO(b"oops\n"))
    archive = tmp_path / "chain.tar"
    archive.write_bytes(buf.getvalue())
    out = tmp_path / "box" / "out"
    with pytest.raises(UserError, match="unsafe archive member 'm': symbolic link"):
        archives.extract(archive, out)
    assert _leftovers(out) == []
    assert not (tmp_path / "box" / "escaped.txt").exists()


def test_zip_symlink_is_refused(tmp_path):
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("fine.txt", "fine\n")
        link = zipfile.ZipInfo("alias.txt")
        link.external_attr = (0o120777 << 16)  # S_IFLNK
        zf.writestr(link, "fine.txt")
    out = tmp_path / "out"
    with pytest.raises(UserError, match="unsafe archive member 'alias.txt': symbolic link"):
        archives.extract(archive, out)
    assert _leftovers(out) == []


# ----------------------------------------------------------------------------- bombs

BOMB_BYTES = 64 * 2**20  # the case: 64 MiB of zeros packs into ~65 KB


class _Zeros(io.RawIOBase):
    """A stream of n zero bytes, so a bomb is built without 64 MiB in memory."""

    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


def _tgz_bomb(path, members=("bomb.txt",), size=BOMB_BYTES):
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BufferedReader(_Zeros(size)))
    return path


def _gz_bomb(path, size=BOMB_BYTES):
    # Not zeros: a gzipped run of zeros reads as an (empty) tar archive.
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(size // 2**20):
            f.write(b"x" * 2**20)
    return path


def _zip_bomb(path, size=BOMB_BYTES):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("bomb.txt", "w", force_zip64=True) as f:
            for _ in range(size // 2**20):
                f.write(bytes(2**20))
    return path


@pytest.mark.parametrize("make,name", [(_tgz_bomb, "bomb.tgz"), (_gz_bomb, "bomb.txt.gz"),
                                       (_zip_bomb, "bomb.zip")])
def test_decompression_bombs_stop_early_and_leave_nothing(tmp_path, make, name):
    archive = make(tmp_path / name)
    assert archive.stat().st_size < 2**20  # >64:1 overall; tiny on disk, 64 MiB unpacked
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"bomb\.txt' expands more than 200:1.*deleted what "
                                        r"was written.*max_extract_ratio"):
        archives.extract(archive, out)
    assert _leftovers(out) == []


def _zip_of_zeros(path, members, size):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name in members:
            zf.writestr(name, bytes(size))
    return path


@pytest.mark.parametrize("make,name", [(_tgz_bomb, "split.tgz"), (_zip_of_zeros, "split.zip")])
def test_bomb_split_into_small_members_stops_early_and_leaves_nothing(tmp_path, make, name):
    # Each 512 KiB member stays under the per-member grace size; the archive as a whole does not.
    members = [f"part{i:02d}.txt" for i in range(16)]
    archive = make(tmp_path / name, members, 2**19)
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"archive's expansion to more than 200:1.*deleted what "
                                        r"was written.*max_extract_ratio"):
        archives.extract(archive, out)
    assert _leftovers(out) == []
    dest = archives.extract(archive, out, max_extract_ratio=10**6)  # the caller's to raise
    assert sorted(p.name for p in dest.glob("part*")) == members


def _tar_of(entries) -> bytes:
    """A plain tar of (name, bytes) files and (name, None) folders, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("entries,member", [
    ([("ok.txt", b"ok"), ("x", b"file"), ("x/y", b"under a file")], "x/y"),
    ([("ok.txt", b"ok"), ("x", None), ("x", b"file over a folder")], "x"),
])
def test_members_clashing_as_file_and_folder_are_refused_and_leave_nothing(tmp_path, entries,
                                                                           member):
    archive = tmp_path / "clash.tar"
    archive.write_bytes(_tar_of(entries))
    out = tmp_path / "out"
    with pytest.raises(UserError, match=f"unsafe archive member '{member}': clashes"):
        archives.extract(archive, out)
    assert _leftovers(out) == []


def test_a_member_named_twice_keeps_the_last_copy(tmp_path):
    archive = tmp_path / "twice.tar"
    archive.write_bytes(_tar_of([("x.txt", b"first\n"), ("x.txt", b"second\n")]))
    assert (archives.extract(archive, tmp_path / "out") / "x.txt").read_bytes() == b"second\n"


def test_a_folder_in_the_way_stops_extraction_before_anything_moves(tmp_path):
    archive = tmp_path / "two.tar"
    archive.write_bytes(_tar_of([("a.txt", b"a"), ("b.txt", b"b")]))
    out = tmp_path / "out"
    (out / "b.txt").mkdir(parents=True)
    with pytest.raises(UserError, match="member 'b.txt' into .* is in the way"):
        archives.extract(archive, out)
    assert _leftovers(out) == ["b.txt"]


def test_total_size_cap_stops_and_removes_earlier_members(tmp_path):
    noise = random.Random(0).randbytes(700_000)  # incompressible: the ratio check stays quiet
    archive = tmp_path / "big.tgz"
    archive.write_bytes(_tgz({"a.txt": noise, "b.txt": noise, "c.txt": noise}))
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"'b.txt' would take the total past 1000000 bytes.*"
                                        r"max_extract_bytes"):
        archives.extract(archive, out, max_extract_bytes=1_000_000)
    assert _leftovers(out) == []  # a.txt had been written whole: it goes too
    # The cap is the caller's to raise.
    dest = archives.extract(archive, out, max_extract_bytes=3 * 700_000)
    assert (dest / "c.txt").read_bytes() == noise


def test_total_size_cap_counts_real_bytes_not_declared_ones(tmp_path):
    archive = _gz_bomb(tmp_path / "zeros.txt.gz", size=4 * 2**20)  # .gz declares nothing
    out = tmp_path / "out"
    with pytest.raises(UserError, match="takes the total past 3000000 bytes"):
        archives.extract(archive, out, max_extract_bytes=3_000_000, max_extract_ratio=10**6)
    assert _leftovers(out) == []


def test_ratio_cap_is_the_callers_to_raise(tmp_path):
    archive = _tgz_bomb(tmp_path / "zeros.tgz", size=4 * 2**20)
    with pytest.raises(UserError, match="expands more than 200:1"):
        archives.extract(archive, tmp_path / "out")
    dest = archives.extract(archive, tmp_path / "out", max_extract_ratio=10**6)
    assert (dest / "bomb.txt").stat().st_size == 4 * 2**20


def test_small_but_very_compressible_member_is_fine(tmp_path):
    # 512 KB of blank lines compresses ~1000:1; below the ratio's grace size that is no bomb.
    archive = tmp_path / "blank.tgz"
    archive.write_bytes(_tgz({"blank.txt": b"\n" * 512_000}))
    assert (archives.extract(archive, tmp_path / "out") / "blank.txt").stat().st_size == 512_000


def test_damaged_archive_is_one_user_error(tmp_path):
    archive = tmp_path / "cut.tgz"
    archive.write_bytes(_tgz({"a.txt": random.Random(1).randbytes(100_000)})[:5000])
    out = tmp_path / "out"
    with pytest.raises(UserError, match="cannot extract .*cut.tgz"):
        archives.extract(archive, out)
    assert _leftovers(out) == []


def test_zip_traversal_rejected_before_anything_is_written(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("fine.txt", "fine\n")
        zf.writestr("../evil.txt", "pwned\n")
    out = tmp_path / "out"
    with pytest.raises(UserError, match="unsafe archive member '../evil.txt'"):
        archives.extract(archive, out)
    assert not (tmp_path / "evil.txt").exists()
    assert not (out / "fine.txt").exists()


def test_zip_extracts(tmp_path):
    archive = tmp_path / "ok.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("d/a.txt", "a\n")
    assert (archives.extract(archive, tmp_path / "out") / "d" / "a.txt").read_text() == "a\n"


def test_download_then_extract_end_to_end(tmp_path):
    archive = _tgz({"training/europarl-v7.de-en.en": b"Hello\n",
                    "training/europarl-v7.de-en.de": b"Hallo\n"})
    with http_fixture.LocalServer({"/wmt13/training-parallel-europarl-v7.tgz": archive}) as srv:
        remote = dl.RemoteFile(srv.url("/wmt13/training-parallel-europarl-v7.tgz"),
                               sha256=hashlib.sha256(archive).hexdigest(), size=len(archive))
        path = dl.download(remote, tmp_path / "dl")
    dest = archives.extract(path, tmp_path / "x")
    pairs = text_io.read_parallel_files(str(dest / "training/europarl-v7.de-en.en"),
                                        str(dest / "training/europarl-v7.de-en.de"))
    assert list(pairs) == [(b"Hello", b"Hallo")]
