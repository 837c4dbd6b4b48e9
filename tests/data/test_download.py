"""Download and extraction against a real HTTP server on 127.0.0.1 serving archives built here."""
import gzip
import hashlib
import importlib.util
import io
import pathlib
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


@pytest.mark.parametrize("kind,target", [(tarfile.SYMTYPE, "../../outside"),
                                         (tarfile.SYMTYPE, "/etc/passwd"),
                                         (tarfile.LNKTYPE, "../outside")])
def test_tar_links_pointing_outside_are_rejected(tmp_path, kind, target):
    info = tarfile.TarInfo("link")
    info.type = kind
    info.linkname = target
    archive = tmp_path / "links.tar"
    archive.write_bytes(_tar_with(info))
    with pytest.raises(UserError, match="points outside"):
        dl.extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "link").exists()


def test_tar_link_inside_destination_is_fine(tmp_path):
    info = tarfile.TarInfo("alias.txt")
    info.type = tarfile.SYMTYPE
    info.linkname = "ok.txt"
    archive = tmp_path / "links.tar"
    archive.write_bytes(_tar_with(info))
    dest = dl.extract(archive, tmp_path / "out")
    assert (dest / "alias.txt").read_bytes() == b"ok\n"


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
