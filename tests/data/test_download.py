"""Downloads from a real HTTP server on 127.0.0.1: verified, resumed, retried."""
import hashlib
import importlib.util
import pathlib

import pytest

from t2t_lite.data import download as dl
from t2t_lite.errors import UserError

_spec = importlib.util.spec_from_file_location(
    "http_fixture", pathlib.Path(__file__).with_name("http_fixture.py"))
http_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(http_fixture)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
