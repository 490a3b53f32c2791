"""What docmem-fsspec needs from each filesystem implementation, checked rather than assumed.

Four things: an exclusive create, a listing of one key's folder, a listing
of just the names after one name in it (what a read or a write confirms with,
see :mod:`docmem_fsspec.commitlog`), and a fetch. The create is the one that
matters for correctness:

fsspec's generic ``pipe_file(mode="create")`` checks for the object and then
writes it: two writers can both pass the check, and the second silently
replaces the first. Only implementations that make the store itself refuse
an existing name are accepted:

- ``s3fs``: ``PutObject`` with ``If-None-Match: *``;
- ``gcsfs`` (``GCSFileSystem`` and its subclass ``ExtendedGcsFileSystem``,
  which gcsfs registers for ``gs://``): an upload with ``ifGenerationMatch=0``;
- ``adlfs``: ``Put Blob`` with ``If-None-Match: *``;
- the local filesystem: a fully written and fsynced temporary file is
  hard-linked to its final name with ``os.link``, which fails if the name
  exists (:mod:`docmem.localfs.durable`, as the core's ``file://`` writes).

Any other filesystem, a subclass of one of these included (it may override the
create), is refused unless the caller asserts atomic create
(``assume_atomic_create=true``). What the class sends is not what the store
does: before the first create through a store, :mod:`docmem_fsspec.probe`
checks that the store refuses a second create of one name.

A create is sent exactly once: retries are switched off for it, because a
resent create whose first attempt landed would be refused and read as
somebody else's write.

Each dialect turns its implementation's answers into docmem's: an existing
name is :class:`VersionConflict`, a request that surely never reached the
store is :class:`StoreUnavailable`, and anything after which the object may
exist is :class:`WriteOutcomeUnknown`; S3's answers are classified by
docmem-s3's one table (:class:`docmem_s3.errors.s3_answers`). Listings and
fetches take the shortest path the implementation offers (s3fs's ``ls`` of
an empty folder would list the parent folder, every page of it, and its
``cat_file`` asks for the size before it downloads; S3 lists from a name on,
``StartAfter``, and Azure Blob Storage too, ``startFrom``, so a listing after
the newest version is one short request however long the folder). Where the
implementation cannot list from a name, the whole folder is listed and the
backend keeps the names after it.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import fcntl
import os
import stat
import uuid
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

from fsspec.asyn import sync

from docmem.errors import (
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem.localfs.durable import fsync_directory, write_new_file

__all__ = ["MIN_VERSION", "Dialect", "dialect_for"]

#: fsspec 2024.12.0 introduced ``mode="create"``; s3fs, gcsfs and adlfs followed in that release.
MIN_VERSION = (2024, 12, 0)
#: Keys per page of an S3 listing from a name (S3's own maximum).
_LIST_PAGE = 1000


class Dialect(abc.ABC):
    """One implementation's exclusive create, folder listing and fetch."""

    #: The implementation this dialect is for, as named in error messages.
    label: ClassVar[str] = ""

    def writer_options(self, storage_options: dict[str, Any]) -> dict[str, Any] | None:
        """Options for a second filesystem instance used only for creates, or ``None``.

        ``None`` means creates go through the reading instance.
        """
        return None

    def prepare(self, fs: Any, *, writer: bool) -> None:  # noqa: B027 - a default, not abstract
        """Adjust a freshly built filesystem instance (retries, mostly); nothing by default."""

    @abc.abstractmethod
    def create(self, fs: Any, path: str, data: bytes) -> None:
        """Create ``path`` holding ``data`` only if it is free; see the module docstring."""

    def list_folder(self, fs: Any, folder: str) -> list[dict[str, Any]] | None:
        """``ls(detail=True)`` records of the folder; ``None`` if it is missing.

        ``None`` leaves open whether the store's root exists (the caller checks);
        an empty list means the root exists and the folder is empty.
        """
        try:
            found = fs.ls(folder, detail=True)
        except FileNotFoundError:
            return None
        return [info for info in found if isinstance(info, dict)]

    def list_after(self, fs: Any, folder: str, name: str) -> list[dict[str, Any]] | None:
        """Records of at least the folder's objects whose names sort after ``name``.

        Anything more (by default the whole folder) is filtered out by the
        backend; ``None`` if the folder is missing, as for :meth:`list_folder`.
        """
        return self.list_folder(fs, folder)

    def fetch(self, fs: Any, path: str) -> bytes:
        """The object's bytes; ``FileNotFoundError`` when it is gone."""
        return bytes(fs.cat_file(path))

    def sweep(self, fs: Any, paths: list[str]) -> int:
        """Remove temporary files crashed creates left; only the local create makes any."""
        return 0


def _conflict() -> VersionConflict:
    return VersionConflict("the version name was taken: another writer created it first")


def _unknown(label: str, exc: BaseException) -> WriteOutcomeUnknown:
    return WriteOutcomeUnknown(
        f"the {label} create may or may not have landed ({type(exc).__name__})"
    )


def _unavailable(label: str, exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"the {label} create could not reach the store ({type(exc).__name__})")


class LocalDialect(Dialect):
    """Local disk: write and fsync a temporary file, then ``os.link`` it into place.

    The temporary file is written like every durable local file
    (``write_new_file``: ``O_EXCL``, ``O_NOFOLLOW``, ``O_CLOEXEC``, mode
    ``0o600``) and stays locked (``flock``) from then until its name is gone,
    so :meth:`sweep` can tell a live writer's file from one a crash left
    behind: the kernel drops the lock of a killed process. (Before the lock
    the file is younger than any a sweep takes; one that took it anyway only
    makes the link fail, and nothing is created.)
    """

    label = "local"

    def create(self, fs: Any, path: str, data: bytes) -> None:
        folder = os.path.dirname(path)
        temporary = os.path.join(folder, f".tmp-{uuid.uuid4().hex}")
        try:
            _make_folder(folder)
            write_new_file(temporary, data)  # removed again if it fails
        except OSError as exc:
            raise _unavailable(self.label, exc) from None
        try:
            _link_locked(temporary, path)
        except FileExistsError:
            raise _conflict() from None
        except OSError as exc:
            raise _unavailable(self.label, exc) from None
        try:
            fsync_directory(folder)
        except OSError as exc:
            # Linked but maybe not durable: a crash now could still lose it.
            raise _unknown(self.label, exc) from None

    def list_after(self, fs: Any, folder: str, name: str) -> list[dict[str, Any]] | None:
        # The names from one directory read; only those after ``name`` are looked at.
        try:
            with os.scandir(folder) as found:
                later = [entry.name for entry in found if entry.name > name]
        except FileNotFoundError:
            return None
        infos: list[dict[str, Any]] = []
        for later_name in later:
            path = os.path.join(folder, later_name)
            try:
                status = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed since: something above it stays, and is listed
            kind = "file" if stat.S_ISREG(status.st_mode) else "other"
            infos.append(
                {"name": path, "type": kind, "size": status.st_size, "mtime": status.st_mtime}
            )
        return infos

    def sweep(self, fs: Any, paths: list[str]) -> int:
        """Remove the temporary files no live writer holds; how many went.

        Each is locked before it is removed: a writer still running holds its
        lock, and its file is skipped. (Removing it would be safe too: the
        writer's link would fail and report nothing committed.)
        """
        removed = 0
        for path in paths:
            try:
                descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue  # gone already, or not ours to touch
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(path)
                removed += 1
            except OSError:
                continue  # locked by a live writer, or removed meanwhile
            finally:
                os.close(descriptor)
        return removed


def _link_locked(temporary: str, path: str) -> None:
    """Lock ``temporary``, link it to ``path`` if that is free, and remove it while locked.

    A link whose temporary file a sweep removed fails, and nothing is created.
    """
    try:
        descriptor = os.open(temporary, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        _remove_quietly(temporary)
        raise
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.link(temporary, path)
    finally:
        _remove_quietly(temporary)  # while still locked: a sweep never races a live writer
        os.close(descriptor)


def _make_folder(folder: str) -> None:
    """The key's folder, made durably; the store root above it must exist already."""
    if os.path.isdir(folder):
        return
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        raise FileNotFoundError(errno.ENOENT, "the store root does not exist")
    try:
        os.mkdir(folder, 0o755)
    except FileExistsError:
        return
    fsync_directory(parent)


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


class S3fsDialect(Dialect):
    """s3fs: ``PutObject`` with ``If-None-Match: *`` on an instance with retries off."""

    label = "s3fs"

    def __init__(self) -> None:
        try:
            from docmem_s3.errors import s3_answers
        except ImportError:  # agent-docmem-fsspec[s3] installs it
            raise StoreNotConfigured(
                "fsspec+s3:// needs agent-docmem-s3, whose table classifies S3's answers: "
                "pip install 'agent-docmem-fsspec[s3]'"
            ) from None
        self._answers: type[s3_answers] = s3_answers

    def writer_options(self, storage_options: dict[str, Any]) -> dict[str, Any]:
        config = dict(storage_options.get("config_kwargs") or {})
        config["retries"] = {"mode": "standard", "total_max_attempts": 1}
        return {**storage_options, "config_kwargs": config}

    def list_folder(self, fs: Any, folder: str) -> list[dict[str, Any]]:
        # One ListObjectsV2 under "<folder>/": [] for an empty folder, FileNotFoundError
        # for a missing bucket. (``ls`` would fall back to listing the parent folder.)
        found = sync(fs.loop, fs._lsdir, folder, refresh=True)
        return [info for info in found if isinstance(info, dict)]

    def list_after(self, fs: Any, folder: str, name: str) -> list[dict[str, Any]]:
        # ListObjectsV2 from StartAfter: one request unless more than a page is newer.
        bucket, key, _ = fs.split_path(folder)
        return list(sync(fs.loop, _objects_after, fs, bucket, f"{key}/", f"{key}/{name}"))

    def fetch(self, fs: Any, path: str) -> bytes:
        # One GET: the listing already told the size, so no HEAD for a ranged download.
        return bytes(fs.cat_file(path, max_concurrency=1))

    def prepare(self, fs: Any, *, writer: bool) -> None:
        if writer:
            fs.retries = 1  # s3fs's own loop would resend a create that may have landed

    def create(self, fs: Any, path: str, data: bytes) -> None:
        # s3fs translates an error answer (FileExistsError for a failed If-None-Match) and
        # keeps botocore's as its cause: docmem-s3's one table classifies it.
        try:
            with self._answers("create", bucket=path.split("/", 1)[0]):
                fs.pipe_file(path, data, mode="create")
        except VersionConflict:
            raise _conflict() from None


async def _objects_after(fs: Any, bucket: str, prefix: str, start: str) -> list[dict[str, Any]]:
    """The objects under ``prefix`` whose keys sort after ``start``, as s3fs's ``ls`` records."""
    found: list[dict[str, Any]] = []
    request: dict[str, Any] = {
        "Bucket": bucket,
        "Prefix": prefix,
        "StartAfter": start,
        "MaxKeys": _LIST_PAGE,
    }
    while True:
        # Through s3fs's own call: its retries for reads, and its error translation.
        page = await fs._call_s3("list_objects_v2", **request)
        found.extend(
            {
                "name": f"{bucket}/{item['Key']}",
                "type": "file",
                "size": item.get("Size", 0),
                "LastModified": item.get("LastModified"),
            }
            for item in page.get("Contents", ())
        )
        if not page.get("IsTruncated"):
            return found
        token = page.get("NextContinuationToken")
        if not token:  # a short page passed off as the whole answer would hide versions
            raise OSError("a truncated listing came without a continuation token")
        request["ContinuationToken"] = token


class AdlfsDialect(Dialect):
    """adlfs: ``Put Blob`` with ``If-None-Match: *`` and the SDK's retries off for it."""

    label = "adlfs"

    def __init__(self) -> None:
        # Whether the service has refused a listing from a name (``startFrom``, API
        # 2025-11-05): then this instance lists the folder, as older services need.
        self._whole_folder = False

    def list_after(self, fs: Any, folder: str, name: str) -> list[dict[str, Any]] | None:
        # List Blobs with startFrom (inclusive: the backend drops the name itself).
        if self._whole_folder:
            return self.list_folder(fs, folder)
        from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

        container, path, _ = fs.split_path(folder)
        try:
            return list(sync(fs.loop, _blobs_from, fs, container, f"{path}/", f"{path}/{name}"))
        except ResourceNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such container") from None
        except HttpResponseError as exc:
            if exc.status_code != 400:
                raise
        self._whole_folder = True  # an older service, which does not know the parameter
        return self.list_folder(fs, folder)

    def prepare(self, fs: Any, *, writer: bool) -> None:
        # The Azure SDK's default for reads is 3 retries after 15 s, 18 s and 24 s: a
        # store that is down would hold an agent's turn for a minute. Two quick retries,
        # then StoreUnavailable. (adlfs offers no option for it; the policy object is
        # the one its pipeline uses.) Creates turn retries off per call instead.
        policy = getattr(getattr(fs.service_client, "_config", None), "retry_policy", None)
        if policy is not None:
            policy.total_retries = policy.connect_retries = policy.read_retries = 2
            policy.status_retries = 2
            policy.initial_backoff, policy.increment_base, policy.random_jitter_range = 0.5, 2, 0.5

    def create(self, fs: Any, path: str, data: bytes) -> None:
        from azure.core.exceptions import (
            ClientAuthenticationError,
            HttpResponseError,
            ResourceExistsError,
            ResourceModifiedError,
            ServiceRequestError,
        )

        try:
            fs.pipe_file(path, data, mode="create", retry_total=0)
        except (FileExistsError, ResourceExistsError, ResourceModifiedError):
            raise _conflict() from None
        except ServiceRequestError as exc:
            raise _unavailable(self.label, exc) from None
        except ClientAuthenticationError as exc:
            raise StoreUnavailable(f"the adlfs create was refused ({type(exc).__name__})") from None
        except HttpResponseError as exc:
            status = int(exc.status_code or 0)
            if status >= 500 or status == 0:
                raise _unknown(self.label, exc) from None
            raise StoreUnavailable(f"the adlfs create failed (HTTP {status})") from None
        except Exception as exc:
            raise _unknown(self.label, exc) from None


async def _blobs_from(fs: Any, container: str, prefix: str, start: str) -> list[dict[str, Any]]:
    """The blobs under ``prefix`` from ``start`` on, as adlfs's ``ls`` records."""
    async with fs.service_client.get_container_client(container) as client:
        return [
            {
                "name": f"{container}/{blob.name}",
                "type": "file",
                "size": blob.size,
                "last_modified": blob.last_modified,
            }
            async for blob in client.list_blobs(name_starts_with=prefix, start_from=start)
        ]


class AssumedDialect(Dialect):
    """Any filesystem whose ``pipe_file(mode="create")`` the caller vouches for."""

    label = "asserted-atomic"

    def create(self, fs: Any, path: str, data: bytes) -> None:
        try:
            fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            raise _conflict() from None
        except Exception as exc:
            raise _unknown(self.label, exc) from None


class GcsfsDialect(AssumedDialect):
    """gcsfs: its create is an upload with ``ifGenerationMatch=0`` (tested on fake-gcs-server).

    Both classes gcsfs may register for ``gs://`` qualify: ``GCSFileSystem``,
    and its subclass ``ExtendedGcsFileSystem`` (the default, unless
    ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``), which sends the same upload
    to every bucket but a zonal one. There it writes over the object without
    any precondition, so a second create succeeds: the first-write check
    (:mod:`docmem_fsspec.probe`) refuses such a bucket.

    gcsfs fixes its retries when the class is defined, so they cannot be turned
    off for a create: one resent after a lost answer is reported as a conflict.
    """

    label = "gcsfs"


#: (module, class name) -> (distribution whose version is checked, dialect). Exact classes
#: only: a subclass may override the create (gcsfs's own does, for zonal buckets), so each
#: one is listed here once its create has been read and tested, never on its parent's word.
_ACCEPTED: dict[tuple[str, str], tuple[str, type[Dialect]]] = {
    ("fsspec.implementations.local", "LocalFileSystem"): ("fsspec", LocalDialect),
    ("s3fs.core", "S3FileSystem"): ("s3fs", S3fsDialect),
    ("adlfs.spec", "AzureBlobFileSystem"): ("adlfs", AdlfsDialect),
    ("gcsfs.core", "GCSFileSystem"): ("gcsfs", GcsfsDialect),
    ("gcsfs.extended_gcsfs", "ExtendedGcsFileSystem"): ("gcsfs", GcsfsDialect),
}


def dialect_for(fs_class: type, *, assume_atomic_create: bool) -> Dialect:
    """The dialect for a filesystem class; refuses a class not known to create atomically."""
    accepted = _ACCEPTED.get((fs_class.__module__, fs_class.__qualname__))
    if accepted is not None:
        distribution, dialect = accepted
        found = _version(distribution)
        if found >= MIN_VERSION:
            return dialect()
        if not assume_atomic_create:
            wanted = ".".join(map(str, MIN_VERSION))
            raise StoreNotConfigured(
                f"{distribution} {'.'.join(map(str, found))} has no exclusive create: "
                f"install {distribution}>={wanted}"
            )
    if assume_atomic_create:
        return AssumedDialect()
    raise StoreNotConfigured(
        f"{fs_class.__module__}.{fs_class.__qualname__} is not known to create objects "
        "atomically (fsspec's generic create checks, then writes); docmem-fsspec accepts "
        f"these classes, not their subclasses: {', '.join(_accepted_names())}. If "
        "this store really refuses a second create of the same name as one atomic step, "
        "pass assume_atomic_create=true"
    )


def _accepted_names() -> list[str]:
    return sorted(f"{module}.{name}" for module, name in _ACCEPTED)


def _version(distribution: str) -> tuple[int, ...]:
    try:
        text = version(distribution)
    except PackageNotFoundError:
        return ()
    parts: list[int] = []
    for part in text.split(".")[:3]:
        digits = "".join(character for character in part if character.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)
