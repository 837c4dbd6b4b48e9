"""Fetching raw corpora: resumable and verified.

A `RemoteFile` names a URL and what it must hash to. `download` streams it into
`<name>.partial`, resumes an interrupted transfer with an HTTP Range request, verifies size and
checksum, and only then renames it to `<name>`, so a file under its final name is always complete.
Unpacking the downloaded archives is `archives`' job; reading the extracted text is `text_io`'s.

Only the standard library is used (urllib), so downloads work wherever Python does.
"""
import dataclasses
import hashlib
import http.client
import os
import pathlib
import posixpath
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Optional

from absl import logging

from t2t_lite.errors import UserError
from t2t_lite.progress_line import ProgressLine

PARTIAL_SUFFIX = ".partial"
_CHUNK_BYTES = 1 << 20
_USER_AGENT = "t2t_lite-download/0.1 (+python urllib)"

ProgressFn = Callable[[str, int, Optional[int]], None]  # (name, bytes_done, bytes_total or None)


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """One downloadable file and the facts that prove a copy of it is the right one.

    sha256 is the preferred proof; md5 is accepted where that is all a public source records
    (sacrebleu lists md5 only); size alone is a weak check used when no hash is published.
    """

    url: str
    sha256: Optional[str] = None
    size: Optional[int] = None
    md5: Optional[str] = None
    filename: Optional[str] = None  # defaults to the last component of the URL path

    @property
    def name(self) -> str:
        if self.filename:
            return self.filename
        name = posixpath.basename(urllib.parse.urlparse(self.url).path)
        if not name:
            raise UserError(f"cannot derive a file name from URL {self.url!r}; give filename=")
        return name

    @property
    def verification(self) -> str:
        """How a copy is checked, in words (for logs and docs)."""
        if self.sha256:
            return "sha256"
        if self.md5:
            return "md5"
        if self.size is not None:
            return "size only"
        return "unverified"


class DownloadProgress:
    """A progress line per file on stderr (MiB done, rate, ETA), at most every `interval_s`."""

    def __init__(self, interval_s: float = 10.0):
        self._interval_s = interval_s
        self._lines = {}

    def __call__(self, name: str, done: int, total: Optional[int]) -> None:
        if name not in self._lines:
            self._lines[name] = ProgressLine(
                f"downloaded {name}:", "MiB", interval=self._interval_s,
                total=None if total is None else round(total / 2**20, 1))
        self._lines[name](round(done / 2**20, 1))


# ----------------------------------------------------------------------------- verification


def _new_hashers(remote: RemoteFile) -> dict:
    hashers = {}
    if remote.sha256:
        hashers["sha256"] = hashlib.sha256()
    if remote.md5:
        hashers["md5"] = hashlib.md5()
    return hashers


def _hash_file_into(path: pathlib.Path, hashers: dict) -> int:
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK_BYTES):
            size += len(chunk)
            for h in hashers.values():
                h.update(chunk)
    return size


def _mismatch(remote: RemoteFile, size: int, hashers: dict) -> Optional[str]:
    """Describes the first way the bytes differ from what `remote` expects, or None if they match."""
    if remote.size is not None and size != remote.size:
        return f"size {size} bytes, expected {remote.size}"
    for algo, h in hashers.items():
        expected = getattr(remote, algo).lower()
        if h.hexdigest() != expected:
            return f"{algo} {h.hexdigest()}, expected {expected}"
    return None


# Files already verified in this process, keyed by identity and the facts checked: hashing a
# multi-GB archive once per run is enough.
_verified = set()


def _verified_key(path: pathlib.Path, remote: RemoteFile) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, remote.size, remote.sha256, remote.md5)


def _remember_verified(path: pathlib.Path, remote: RemoteFile) -> None:
    _verified.add(_verified_key(path, remote))


def verify_file(path, remote: RemoteFile) -> None:
    """Raises UserError unless the file at `path` has the size and checksums `remote` records."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise UserError(f"missing file {path} (expected the download of {remote.url})")
    if _verified_key(path, remote) in _verified:
        return
    hashers = _new_hashers(remote)
    size = _hash_file_into(path, hashers)
    problem = _mismatch(remote, size, hashers)
    if problem:
        raise UserError(f"checksum mismatch for {path}: {problem} ({remote.url}); "
                        "delete or replace the file")
    _remember_verified(path, remote)


# ----------------------------------------------------------------------------- download


class _ServerIgnoredRange(Exception):
    """The server answered a Range request with the whole file."""


class _WrongSize(Exception):
    """The server announced a size other than the recorded one: no need to fetch it all."""


def _open(url: str, offset: int, timeout: float):
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 (http/https by design)


def _total_size(response, offset: int) -> Optional[int]:
    content_range = response.headers.get("Content-Range")  # "bytes 100-199/200"
    if content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[1].strip()
        return int(total) if total.isdigit() else None
    length = response.headers.get("Content-Length")
    return offset + int(length) if length and length.isdigit() else None


def _transfer(remote: RemoteFile, partial: pathlib.Path, hashers: dict, progress: ProgressFn,
              timeout: float) -> None:
    """Appends the rest of the file to `partial`; `hashers` already cover the bytes in it."""
    offset = partial.stat().st_size if partial.exists() else 0
    try:
        response = _open(remote.url, offset, timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # nothing left to fetch: the partial file is complete
            return
        raise
    with response:
        status = getattr(response, "status", 200)
        if offset and status != 206:
            raise _ServerIgnoredRange()
        total = _total_size(response, offset)
        if total is not None and remote.size is not None and total != remote.size:
            raise _WrongSize(f"size {total} bytes announced by the server, expected {remote.size}")
        done = offset
        with open(partial, "ab") as out:
            while True:
                # Without a Content-Length the server decides when to stop: read one byte past
                # the recorded size at most, and refuse before writing it.
                want = _CHUNK_BYTES if remote.size is None else min(_CHUNK_BYTES,
                                                                    remote.size - done + 1)
                chunk = response.read(max(want, 1))
                if not chunk:
                    break
                if remote.size is not None and done + len(chunk) > remote.size:
                    raise _WrongSize(f"the server sent more than the recorded {remote.size} "
                                     "bytes")
                out.write(chunk)
                for h in hashers.values():
                    h.update(chunk)
                done += len(chunk)
                progress(remote.name, done, total)
        if total is not None and done < total:
            raise http.client.IncompleteRead(b"", total - done)


_RETRYABLE = (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError,
              socket.timeout)


def download(remote: RemoteFile, directory, progress: Optional[ProgressFn] = None,
             retries: int = 3, timeout: float = 60.0) -> pathlib.Path:
    """Downloads `remote` into `directory` (once) and returns the verified file's path.

    An already verified file is reused. An interrupted download resumes from `<name>.partial`.
    A checksum or size mismatch deletes the partial file and raises UserError.
    """
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / remote.name
    partial = directory / (remote.name + PARTIAL_SUFFIX)
    progress = progress or DownloadProgress()

    if final.exists():
        verify_file(final, remote)  # a corrupted final file is the user's to inspect, not ours
        logging.info("reusing verified %s", final)
        return final

    for attempt in range(1, retries + 1):
        hashers = _new_hashers(remote)
        if partial.exists():
            logging.info("resuming %s from byte %d", remote.url, partial.stat().st_size)
            _hash_file_into(partial, hashers)
        try:
            _transfer(remote, partial, hashers, progress, timeout)
        except _WrongSize as e:
            partial.unlink(missing_ok=True)
            raise UserError(f"checksum mismatch for {remote.url}: {e}; deleted the partial "
                            f"download {partial}. Is the URL right?") from None
        except _ServerIgnoredRange:
            logging.warning("%s does not support resuming; starting over", remote.url)
            partial.unlink()
            continue
        except urllib.error.HTTPError as e:
            if 400 <= e.code < 500:
                raise UserError(f"cannot download {remote.url}: HTTP {e.code} {e.reason}") from e
            error = e
        except _RETRYABLE as e:
            error = e
        else:
            size = partial.stat().st_size
            problem = _mismatch(remote, size, hashers)
            if problem:
                partial.unlink()
                raise UserError(f"checksum mismatch for {remote.url}: {problem}; deleted the "
                                f"partial download {partial}. Rerun to download it again.")
            if remote.verification == "unverified":
                logging.warning("%s has no recorded size or checksum; it was not verified",
                                remote.url)
            os.replace(partial, final)
            _remember_verified(final, remote)
            logging.info("downloaded %s (%d bytes, verified by %s)", final, size,
                         remote.verification)
            return final
        logging.warning("download of %s interrupted (attempt %d/%d): %s", remote.url, attempt,
                        retries, error)
        time.sleep(min(2.0 ** (attempt - 1), 30.0) if attempt < retries else 0)
    raise UserError(f"could not download {remote.url} after {retries} attempts; "
                    f"rerun to resume from {partial}")
