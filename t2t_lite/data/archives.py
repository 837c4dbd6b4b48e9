"""Unpacking downloaded archives, safe against hostile ones.

`extract` unpacks tar (plain, .gz, .tgz, .bz2, .xz) and zip archives and single .gz files,
refusing members that would land outside the destination (absolute paths, `..`), links of any
kind, members clashing as file and folder, and decompression bombs (a cap on total bytes and on
the expansion ratio of each member and of the whole archive); nothing reaches the destination
unless the whole extraction succeeds, and a marker file written after success makes a second
call a no-op.
"""
import gzip
import json
import lzma
import os
import pathlib
import shutil
import stat
import tarfile
import zipfile
import zlib
from typing import Callable, Optional, Sequence

from t2t_lite.errors import UserError

_CHUNK_BYTES = 1 << 20
# The staging folder `.<archive>.partial` in the destination holds members until all succeeded.
_STAGING_SUFFIX = ".partial"

# Limits against decompression bombs. Corpora are text, which gzip/bzip2/xz shrink about 3-10x;
# the largest WMT14 archive (UN, 2.4 GB) unpacks to well under these. A bomb of zeros reaches
# 1000:1 and more. Both are per extract() call and overridable (wmt14: problem params
# max_extract_bytes / max_extract_ratio).
DEFAULT_MAX_EXTRACT_BYTES = 64 * 2**30
DEFAULT_MAX_EXTRACT_RATIO = 200
# A small member may legitimately compress far better (a file of blank lines): judge the ratio
# only once a member has produced this much.
_RATIO_GRACE_BYTES = 1 << 20
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError,
                   gzip.BadGzipFile)


class _Budget:
    """Counts what one extract() call writes and stops it at the byte or ratio limit."""

    def __init__(self, archive: pathlib.Path, max_bytes: int, max_ratio: float):
        self.archive, self.max_bytes, self.max_ratio = archive, max_bytes, max_ratio
        self.total = 0

    def stop(self, member: str, why: str, option: str) -> UserError:
        return UserError(f"stopped extracting {self.archive}: member {member!r} {why}; deleted "
                         f"what was written. A decompression bomb? If the archive is genuine, "
                         f"raise the limit {option} (t2t-lite-datagen "
                         f"--problem_param={option}=N)")

    def check_declared(self, member: str, size: int) -> None:
        if self.total + size > self.max_bytes:
            raise self.stop(member, f"would take the total past {self.max_bytes} bytes",
                             "max_extract_bytes")

    def check_ratio(self, member: str, written: int, compressed: int, what: str) -> None:
        if written > _RATIO_GRACE_BYTES and written > self.max_ratio * max(compressed, 1):
            raise self.stop(member, f"{what} more than {self.max_ratio:g}:1 ({written} bytes "
                            f"from {compressed})", "max_extract_ratio")

    def copy(self, member: str, src, out, compressed_done: Callable[[], int]) -> None:
        """Copies member `src` to `out`; compressed_done() counts the archive bytes consumed so
        far, earlier members included."""
        start = compressed_done()
        written = 0
        while chunk := src.read(_CHUNK_BYTES):
            written += len(chunk)
            self.total += len(chunk)
            if self.total > self.max_bytes:
                raise self.stop(member, f"takes the total past {self.max_bytes} bytes",
                                 "max_extract_bytes")
            consumed = compressed_done()
            self.check_ratio(member, written, consumed - start, "expands")
            # Many members each under the grace size would pass the per-member check: the
            # archive as a whole is held to the same ratio.
            self.check_ratio(member, self.total, consumed, "takes the archive's expansion to")
            out.write(chunk)


def _unsafe_name_reason(name: str) -> Optional[str]:
    if not name:
        return "empty member name"
    normalized = name.replace("\\", "/")
    if normalized.startswith("/") or (len(normalized) > 1 and normalized[1] == ":"):
        return "absolute path"
    if ".." in normalized.split("/"):
        return "'..' component"
    return None


def _inside(dest: pathlib.Path, relative: str) -> bool:
    target = (dest / relative).resolve()
    return target == dest or dest in target.parents


def _refuse(member: str, reason: str) -> UserError:
    return UserError(f"refusing to extract unsafe archive member {member!r}: {reason}")


def _staged_path(staging: pathlib.Path, name: str, is_dir: bool) -> pathlib.Path:
    """Where member `name` is written in the staging folder, its parent folders made. A member
    that clashes with an earlier one (a file where a folder must go, or the reverse) is refused
    like any unsafe member; a later file of the same name replaces the earlier, as tar does."""
    target = staging / name
    try:
        if is_dir:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir():
                raise IsADirectoryError(name)
    except OSError:  # FileExistsError, NotADirectoryError, IsADirectoryError
        raise _refuse(name, "clashes with an earlier member (a file and a folder of the same "
                      "name)") from None
    return target


def _check_tar_member(member: tarfile.TarInfo, dest: pathlib.Path) -> None:
    # Links are refused outright: checking each against the disk as it is at that moment lets a
    # chain (m -> n/.., then n -> .) escape, and datasets need none.
    if member.issym():
        raise _refuse(member.name, f"symbolic link to {member.linkname!r} (archives with links "
                      "are not accepted)")
    if member.islnk():
        raise _refuse(member.name, f"hard link to {member.linkname!r} (archives with links are "
                      "not accepted)")
    reason = _unsafe_name_reason(member.name)
    if reason is None and not _inside(dest, member.name):
        reason = "resolves outside the destination"
    if reason is None and not (member.isfile() or member.isdir()):
        reason = "special file (device, fifo)"
    if reason:
        raise _refuse(member.name, reason)


def _extract_tar(archive: pathlib.Path, dest: pathlib.Path, staging: pathlib.Path,
                 wanted: Optional[set], budget: _Budget) -> list:
    extracted = []
    # Stream mode reads a .tgz once, front to back; every member is checked before it is
    # written, and raw.tell() tells how much of the compressed file each member consumed.
    with open(archive, "rb") as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
        for member in tar:
            _check_tar_member(member, dest)
            if wanted is not None and member.name not in wanted:
                continue
            target = _staged_path(staging, member.name, member.isdir())
            if not member.isdir():
                budget.check_declared(member.name, member.size)
                with tar.extractfile(member) as src, open(target, "wb") as out:
                    budget.copy(member.name, src, out, raw.tell)
            extracted.append(member.name)
    return extracted


def _extract_zip(archive: pathlib.Path, dest: pathlib.Path, staging: pathlib.Path,
                 wanted: Optional[set], budget: _Budget) -> list:
    extracted = []
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        for info in infos:  # zip has a central directory: check everything before writing
            reason = _unsafe_name_reason(info.filename)
            if reason is None and not _inside(dest, info.filename):
                reason = "resolves outside the destination"
            if reason is None and stat.S_ISLNK(info.external_attr >> 16):
                reason = "symbolic link (archives with links are not accepted)"
            if reason:
                raise _refuse(info.filename, reason)
        chosen = [i for i in infos if wanted is None or i.filename in wanted]
        for info in chosen:  # declared sizes bound what zipfile will produce: check them first
            if (info.file_size > _RATIO_GRACE_BYTES
                    and info.file_size > budget.max_ratio * max(info.compress_size, 1)):
                raise budget.stop(info.filename, f"expands more than {budget.max_ratio:g}:1 "
                                   f"({info.file_size} bytes from {info.compress_size})",
                                   "max_extract_ratio")
        declared = sum(i.file_size for i in chosen)
        if declared > budget.max_bytes:
            raise budget.stop(chosen[-1].filename, f"would take the total past "
                               f"{budget.max_bytes} bytes ({declared} declared)",
                               "max_extract_bytes")
        if chosen:
            budget.check_ratio(chosen[-1].filename, declared,
                               sum(i.compress_size for i in chosen),
                               "would take the archive's expansion to")
        consumed = 0  # compressed bytes of the members already written
        for info in chosen:
            target = _staged_path(staging, info.filename, info.is_dir())
            if not info.is_dir():
                with zf.open(info) as src, open(target, "wb") as out:
                    budget.copy(info.filename, src, out,
                                lambda end=consumed + info.compress_size: end)
            consumed += info.compress_size
            extracted.append(info.filename)
    return extracted


def _extract_gzip(archive: pathlib.Path, staging: pathlib.Path, budget: _Budget) -> list:
    name = archive.name[: -len(".gz")]
    with open(archive, "rb") as raw, gzip.GzipFile(fileobj=raw) as src, \
            open(staging / name, "wb") as out:
        budget.copy(name, src, out, raw.tell)
    return [name]


def _blocked(dest: pathlib.Path, name: str, is_dir: bool) -> bool:
    """Whether something already in dest (a file where a folder goes, or the reverse) stops
    member `name` from moving in."""
    target = dest / name
    folders = list(target.parents)[:len(pathlib.PurePosixPath(name).parts) - 1]
    if any(folder.exists() and not folder.is_dir() for folder in folders):
        return True
    return target.exists() and target.is_dir() != is_dir


def _move_into_place(staging: pathlib.Path, dest: pathlib.Path, names: list) -> None:
    names = list(dict.fromkeys(names))  # a tar may hold one name twice: the last copy won
    # Every move is checked before the first, so a refusal leaves dest as it was.
    for name in names:
        if _blocked(dest, name, (staging / name).is_dir()):
            raise UserError(f"cannot extract member {name!r} into {dest}: a file or folder of "
                            "that name is in the way; move it and rerun")
    for name in names:
        source, target = staging / name, dest / name
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)


def _marker_path(archive_name: str, dest: pathlib.Path) -> pathlib.Path:
    return dest / f".{archive_name}.extracted"


def _extracted_record(archive_name: str, dest: pathlib.Path) -> dict:
    marker = _marker_path(archive_name, dest)
    return json.loads(marker.read_text()) if marker.exists() else {"all": False, "members": []}


def is_extracted(archive_name: str, dest, members: Optional[Sequence[str]] = None) -> bool:
    """Whether an earlier `extract` of the archive called `archive_name` into `dest` completed and
    covered `members` (all members if None), so the archive itself is no longer needed."""
    dest = pathlib.Path(dest)
    done = _extracted_record(archive_name, dest)
    wanted = set(members) if members is not None else None
    covered = done["all"] or (wanted is not None and wanted <= set(done["members"]))
    return covered and all((dest / m).exists() for m in (wanted or done["members"]))


def extract(archive, dest, members: Optional[Sequence[str]] = None,
            max_extract_bytes: Optional[int] = None,
            max_extract_ratio: Optional[float] = None) -> pathlib.Path:
    """Safely unpacks `archive` (tar, tar.gz/tgz, tar.bz2/xz, zip or a single .gz) into `dest`.

    `members`: only these archive paths are written (all members are still checked). Raises
    UserError on an unsafe member (absolute, `..`, link, device), if a requested member is
    missing, or when the written bytes pass `max_extract_bytes` in total or a member expands
    more than `max_extract_ratio`:1 (defaults DEFAULT_MAX_EXTRACT_*). Members are unpacked into
    a staging folder and moved into `dest` only when all succeeded, so a refused archive leaves
    nothing behind. Returns `dest`. A marker recording the extracted members makes repeating the
    same call free.
    """
    archive, dest = pathlib.Path(archive), pathlib.Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    dest = dest.resolve()
    wanted = set(members) if members is not None else None
    done = _extracted_record(archive.name, dest)
    if is_extracted(archive.name, dest, members):
        return dest
    budget = _Budget(archive,
                     DEFAULT_MAX_EXTRACT_BYTES if max_extract_bytes is None else max_extract_bytes,
                     DEFAULT_MAX_EXTRACT_RATIO if max_extract_ratio is None else max_extract_ratio)

    # Ours alone (named after the archive): left over from a killed run, it is stale.
    staging = dest / f".{archive.name}{_STAGING_SUFFIX}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        name = archive.name.lower()
        if zipfile.is_zipfile(archive):
            extracted = _extract_zip(archive, dest, staging, wanted, budget)
        elif (name.endswith(".gz") and not name.endswith(".tar.gz")
              and not tarfile.is_tarfile(archive)):
            extracted = _extract_gzip(archive, staging, budget)
        elif tarfile.is_tarfile(archive):
            extracted = _extract_tar(archive, dest, staging, wanted, budget)
        else:
            raise UserError(f"{archive} is not a tar, zip or gzip archive")
        if wanted is not None:
            missing = sorted(wanted - set(extracted))
            if missing:
                raise UserError(f"{archive} lacks the expected member(s) {', '.join(missing)}")
        _move_into_place(staging, dest, extracted)
    except _ARCHIVE_ERRORS as e:
        raise UserError(f"cannot extract {archive}: damaged or not an archive ({e})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    # Several problems may each extract their own members of one shared archive: remember all.
    members_done = sorted(set(extracted) | set(done["members"]))
    record = {"all": done["all"] or wanted is None, "members": members_done}
    _marker_path(archive.name, dest).write_text(json.dumps(record))
    return dest
