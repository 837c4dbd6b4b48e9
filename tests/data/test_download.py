"""Download and extraction against a real HTTP server on 127.0.0.1 serving archives built here."""
import gzip
import hashlib
import importlib.util
import io
import pathlib
import random
import tarfile
import zipfile

import pytest

from t2t_lite.data import download as dl
from t2t_lite.data import text_io
from t2t_lite.errors import UserError

_spec = importlib.util.spec_from_file_location(
    "http_fixture", pathlib.Path(__file__).with_name("http_fixture.py"))
http_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(http_fixture)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


PAYLOAD = bytes(range(256)) * 4096  # 1 MiB: several read chunks' worth is not needed, variety is


def test_download_verifies_and_reuses(tmp_path):
    remote_path = "/data/corpus.bin"
    with http_fixture.LocalServer({remote_path: PAYLOAD}) as srv:
        remote = dl.RemoteFile(srv.url(remote_path), sha256=_sha256(PAYLOAD), size=len(PAYLOAD))
        seen = []
        path = dl.download(remote, tmp_path, progress=lambda n, d, t: seen.append((n, d, t)))
        assert path == tmp_path / "corpus.bin"
        assert path.read_bytes() == PAYLOAD
        assert not (tmp_path / "corpus.bin.partial").exists()
        assert seen[-1] == ("corpus.bin", len(PAYLOAD), len(PAYLOAD))
        # Second call: verified on disk, no new request.
        assert dl.download(remote, tmp_path) == path
        assert len(srv.requests) == 1


def test_download_resumes_truncated_partial_with_range(tmp_path):
    remote_path = "/corpus.tgz"
    with http_fixture.LocalServer({remote_path: PAYLOAD}) as srv:
        remote = dl.RemoteFile(srv.url(remote_path), sha256=_sha256(PAYLOAD))
        (tmp_path / "corpus.tgz.partial").write_bytes(PAYLOAD[:300_000])
        path = dl.download(remote, tmp_path)
        assert path.read_bytes() == PAYLOAD
        assert srv.requests == [(remote_path, "bytes=300000-")]


def test_download_resumes_after_dropped_connection(tmp_path):
    remote_path = "/corpus.tgz"
    with http_fixture.LocalServer({remote_path: PAYLOAD}) as srv:
        srv.cut_next_response(remote_path, after_bytes=123_456)
        remote = dl.RemoteFile(srv.url(remote_path), sha256=_sha256(PAYLOAD), size=len(PAYLOAD))
        path = dl.download(remote, tmp_path, retries=2)
        assert path.read_bytes() == PAYLOAD
        assert srv.requests == [(remote_path, None), (remote_path, "bytes=123456-")]


def test_download_starts_over_when_server_ignores_range(tmp_path):
    remote_path = "/corpus.tgz"
    with http_fixture.LocalServer({remote_path: PAYLOAD}, honour_range=False) as srv:
        remote = dl.RemoteFile(srv.url(remote_path), sha256=_sha256(PAYLOAD))
        (tmp_path / "corpus.tgz.partial").write_bytes(PAYLOAD[:1000])
        assert dl.download(remote, tmp_path).read_bytes() == PAYLOAD


def test_bad_checksum_deletes_partial_and_says_so(tmp_path):
    remote_path = "/corpus.tgz"
    with http_fixture.LocalServer({remote_path: PAYLOAD}) as srv:
        remote = dl.RemoteFile(srv.url(remote_path), sha256="0" * 64)
        with pytest.raises(UserError, match="checksum mismatch.*deleted the partial"):
            dl.download(remote, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_md5_and_size_are_checked_too(tmp_path):
    remote_path = "/test-full.tgz"
    with http_fixture.LocalServer({remote_path: PAYLOAD}) as srv:
        good = dl.RemoteFile(srv.url(remote_path), md5=hashlib.md5(PAYLOAD).hexdigest())
        assert dl.download(good, tmp_path / "a").read_bytes() == PAYLOAD
        wrong_size = dl.RemoteFile(srv.url(remote_path), size=len(PAYLOAD) + 1)
        with pytest.raises(UserError, match="size"):
            dl.download(wrong_size, tmp_path / "b")
        assert not (tmp_path / "b" / "test-full.tgz.partial").exists()


def test_missing_url_is_a_user_error(tmp_path):
    with http_fixture.LocalServer({}) as srv:
        with pytest.raises(UserError, match="HTTP 404"):
            dl.download(dl.RemoteFile(srv.url("/nope.tgz")), tmp_path)


def test_corrupted_final_file_is_reported_not_reused(tmp_path):
    (tmp_path / "corpus.tgz").write_bytes(b"not it")
    remote = dl.RemoteFile("http://127.0.0.1:9/corpus.tgz", sha256=_sha256(PAYLOAD))
    with pytest.raises(UserError, match="checksum mismatch"):
        dl.download(remote, tmp_path)


def test_extract_tgz_of_sgm_files_and_selected_members(tmp_path):
    sgm = b'<refset>\n<doc docid="x">\n<seg id="1">Hallo Welt</seg>\n</doc>\n</refset>\n'
    archive = tmp_path / "dev.tgz"
    archive.write_bytes(_tgz({"dev/newstest2013-ref.de.sgm": sgm, "dev/other.txt": b"x\n"}))
    dest = dl.extract(archive, tmp_path / "out", members=["dev/newstest2013-ref.de.sgm"])
    assert (dest / "dev/newstest2013-ref.de.sgm").read_bytes() == sgm
    assert not (dest / "dev/other.txt").exists()
    # Idempotent: the marker makes a repeat free even if the archive is gone.
    archive.unlink()
    assert dl.extract(archive, tmp_path / "out", members=["dev/newstest2013-ref.de.sgm"]) == dest


def test_extract_remembers_members_of_earlier_calls(tmp_path):
    # EN-DE and EN-FR take different members of one shared archive.
    archive = tmp_path / "commoncrawl.tgz"
    archive.write_bytes(_tgz({"cc.de-en.en": b"a\n", "cc.fr-en.en": b"b\n"}))
    out = tmp_path / "out"
    dl.extract(archive, out, members=["cc.de-en.en"])
    dl.extract(archive, out, members=["cc.fr-en.en"])
    archive.unlink()
    assert dl.extract(archive, out, members=["cc.de-en.en"]) == out.resolve()


def test_extract_reports_missing_member(tmp_path):
    archive = tmp_path / "a.tgz"
    archive.write_bytes(_tgz({"a.txt": b"a\n"}))
    with pytest.raises(UserError, match="lacks the expected member.*b.txt"):
        dl.extract(archive, tmp_path / "out", members=["a.txt", "b.txt"])


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
    dest = dl.extract(archive, tmp_path / "out")
    with text_io.open_binary(str(dest / "giga-fren.release2.fixed.en.gz")) as f:
        assert list(text_io.bounded_lines(f)) == lines


def test_extract_single_gzip_file(tmp_path):
    archive = tmp_path / "corpus.en.gz"
    archive.write_bytes(gzip.compress(b"a\r\nb\n"))
    dest = dl.extract(archive, tmp_path / "out")
    assert (dest / "corpus.en").read_bytes() == b"a\r\nb\n"


@pytest.mark.parametrize("name", ["../evil.txt", "dev/../../evil.txt", "/tmp/evil-abs.txt"])
def test_tar_path_traversal_is_rejected_and_nothing_escapes(tmp_path, name):
    archive = tmp_path / "evil.tgz"
    info = tarfile.TarInfo(name)
    archive.write_bytes(_tar_with(info, b"pwned\n"))
    out = tmp_path / "a" / "out"
    with pytest.raises(UserError, match="unsafe archive member"):
        dl.extract(archive, out)
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
        dl.extract(archive, out)
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
        dl.extract(archive, out)
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
        dl.extract(archive, out)
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
        dl.extract(archive, out)
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
        dl.extract(archive, out)
    assert _leftovers(out) == []
    dest = dl.extract(archive, out, max_extract_ratio=10**6)  # the caller's to raise
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
        dl.extract(archive, out)
    assert _leftovers(out) == []


def test_a_member_named_twice_keeps_the_last_copy(tmp_path):
    archive = tmp_path / "twice.tar"
    archive.write_bytes(_tar_of([("x.txt", b"first\n"), ("x.txt", b"second\n")]))
    assert (dl.extract(archive, tmp_path / "out") / "x.txt").read_bytes() == b"second\n"


def test_a_folder_in_the_way_stops_extraction_before_anything_moves(tmp_path):
    archive = tmp_path / "two.tar"
    archive.write_bytes(_tar_of([("a.txt", b"a"), ("b.txt", b"b")]))
    out = tmp_path / "out"
    (out / "b.txt").mkdir(parents=True)
    with pytest.raises(UserError, match="member 'b.txt' into .* is in the way"):
        dl.extract(archive, out)
    assert _leftovers(out) == ["b.txt"]


def test_total_size_cap_stops_and_removes_earlier_members(tmp_path):
    noise = random.Random(0).randbytes(700_000)  # incompressible: the ratio check stays quiet
    archive = tmp_path / "big.tgz"
    archive.write_bytes(_tgz({"a.txt": noise, "b.txt": noise, "c.txt": noise}))
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"'b.txt' would take the total past 1000000 bytes.*"
                                        r"max_extract_bytes"):
        dl.extract(archive, out, max_extract_bytes=1_000_000)
    assert _leftovers(out) == []  # a.txt had been written whole: it goes too
    # The cap is the caller's to raise.
    dest = dl.extract(archive, out, max_extract_bytes=3 * 700_000)
    assert (dest / "c.txt").read_bytes() == noise


def test_total_size_cap_counts_real_bytes_not_declared_ones(tmp_path):
    archive = _gz_bomb(tmp_path / "zeros.txt.gz", size=4 * 2**20)  # .gz declares nothing
    out = tmp_path / "out"
    with pytest.raises(UserError, match="takes the total past 3000000 bytes"):
        dl.extract(archive, out, max_extract_bytes=3_000_000, max_extract_ratio=10**6)
    assert _leftovers(out) == []


def test_ratio_cap_is_the_callers_to_raise(tmp_path):
    archive = _tgz_bomb(tmp_path / "zeros.tgz", size=4 * 2**20)
    with pytest.raises(UserError, match="expands more than 200:1"):
        dl.extract(archive, tmp_path / "out")
    dest = dl.extract(archive, tmp_path / "out", max_extract_ratio=10**6)
    assert (dest / "bomb.txt").stat().st_size == 4 * 2**20


def test_small_but_very_compressible_member_is_fine(tmp_path):
    # 512 KB of blank lines compresses ~1000:1; below the ratio's grace size that is no bomb.
    archive = tmp_path / "blank.tgz"
    archive.write_bytes(_tgz({"blank.txt": b"\n" * 512_000}))
    assert (dl.extract(archive, tmp_path / "out") / "blank.txt").stat().st_size == 512_000


def test_damaged_archive_is_one_user_error(tmp_path):
    archive = tmp_path / "cut.tgz"
    archive.write_bytes(_tgz({"a.txt": random.Random(1).randbytes(100_000)})[:5000])
    out = tmp_path / "out"
    with pytest.raises(UserError, match="cannot extract .*cut.tgz"):
        dl.extract(archive, out)
    assert _leftovers(out) == []


def test_zip_traversal_rejected_before_anything_is_written(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("fine.txt", "fine\n")
        zf.writestr("../evil.txt", "pwned\n")
    out = tmp_path / "out"
    with pytest.raises(UserError, match="unsafe archive member '../evil.txt'"):
        dl.extract(archive, out)
    assert not (tmp_path / "evil.txt").exists()
    assert not (out / "fine.txt").exists()


def test_zip_extracts(tmp_path):
    archive = tmp_path / "ok.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("d/a.txt", "a\n")
    assert (dl.extract(archive, tmp_path / "out") / "d" / "a.txt").read_text() == "a\n"


def test_download_then_extract_end_to_end(tmp_path):
    archive = _tgz({"training/europarl-v7.de-en.en": b"Hello\n",
                    "training/europarl-v7.de-en.de": b"Hallo\n"})
    with http_fixture.LocalServer({"/wmt13/training-parallel-europarl-v7.tgz": archive}) as srv:
        remote = dl.RemoteFile(srv.url("/wmt13/training-parallel-europarl-v7.tgz"),
                               sha256=_sha256(archive), size=len(archive))
        path = dl.download(remote, tmp_path / "dl")
    dest = dl.extract(path, tmp_path / "x")
    pairs = text_io.read_parallel_files(str(dest / "training/europarl-v7.de-en.en"),
                                        str(dest / "training/europarl-v7.de-en.de"))
    assert list(pairs) == [(b"Hello", b"Hallo")]


def test_download_without_content_length_stops_at_the_recorded_size(tmp_path):
    # The server streams 20 MiB with no Content-Length; the record says 300,000 bytes.
    body = b"x" * (20 * 2**20)
    with http_fixture.LocalServer({"/big.tgz": body}, omit_length=True) as srv:
        remote = dl.RemoteFile(srv.url("/big.tgz"), size=300_000, sha256=_sha256(body[:300_000]))
        seen = []
        with pytest.raises(UserError, match="more than the recorded 300000 bytes.*deleted"):
            dl.download(remote, tmp_path, progress=lambda n, d, t: seen.append(d))
    assert max(seen, default=0) <= 300_000  # never wrote past the record
    assert list(tmp_path.iterdir()) == []


def test_download_without_content_length_of_the_right_size_works(tmp_path):
    with http_fixture.LocalServer({"/a.tgz": PAYLOAD}, omit_length=True) as srv:
        remote = dl.RemoteFile(srv.url("/a.tgz"), size=len(PAYLOAD), sha256=_sha256(PAYLOAD))
        assert dl.download(remote, tmp_path).read_bytes() == PAYLOAD
