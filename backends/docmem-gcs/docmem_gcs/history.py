"""Noncurrent generations on a bucket with object versioning: never left behind in silence.

On a bucket with versioning enabled every upload keeps the object it
replaced as a noncurrent generation, readable by its number. An erase
rewrites the document header-only; the erased text would stay in the bucket
while the erase reported success. This plug-in does not delete noncurrent
generations yet: fake-gcs-server, the emulator it is tested on, lists them
(only when asked ``versions=true`` in lower case, which the SDK does not
send for ``versions=True``) but cannot delete one (a DELETE naming a
noncurrent generation soft-deletes the live object instead), so no deletion
could be tested. Instead :func:`require_no_older_generations` lists the
document's generations after an erase or a delete and raises
:class:`HistoryKept` when noncurrent ones are left, naming how many and how
to delete them. On a bucket without versioning the listing finds only the
live object: one request per erase.
"""

from __future__ import annotations

from typing import Any, Literal

from docmem import errors as docmem_errors

from .errors import gcs_answers

__all__ = ["HistoryKept", "Purge", "noncurrent_generations", "require_no_older_generations"]

#: What asked for the check: an erase (its last step) or an operator's delete.
Purge = Literal["erase", "delete"]

_WORDS: dict[Purge, tuple[str, str, str]] = {
    "erase": ("the erase is stored", "the erased text", "erase again"),
    "delete": ("the key is deleted", "the deleted document", "delete again"),
}


class HistoryKept(docmem_errors.HistoryKept):
    """The bucket still holds noncurrent generations of an erased or deleted document.

    Raised by ``GcsBackend.purge_history``, so an erase reports it with
    outcome ``committed``: the header-only document is stored, and older
    copies of the erased text are left. :attr:`generations` names them,
    :attr:`object_name` their object; neither is memory text.
    """

    erase_again_purges = False  # docmem-gcs deletes no older generation, however often asked

    def __init__(
        self,
        message: str,
        *,
        bucket: str = "",
        object_name: str = "",
        generations: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.object_name = object_name
        self.generations = generations


def noncurrent_generations(
    client: Any, bucket: str, object_name: str, *, timeout: Any
) -> tuple[str, ...]:
    """The generations of exactly ``object_name`` that are not live (``timeDeleted`` set)."""
    found: list[str] = []
    with gcs_answers("list-versions", bucket=bucket):
        # "true", not True: requests sends True as "True", which fake-gcs-server ignores.
        blobs = client.list_blobs(
            bucket, prefix=object_name, versions="true", retry=None, timeout=timeout
        )
        for blob in blobs:
            if blob.name == object_name and blob.time_deleted is not None:
                found.append(str(blob.generation))
    return tuple(found)


def require_no_older_generations(
    client: Any, bucket: str, object_name: str, purge: Purge, *, timeout: Any
) -> None:
    """HistoryKept if ``object_name`` has noncurrent generations (none on an unversioned bucket)."""
    left = noncurrent_generations(client, bucket, object_name, timeout=timeout)
    if not left:
        return
    done, held, again = _WORDS[purge]
    count = len(left)
    plural = "" if count == 1 else "s"
    raise HistoryKept(
        f"{done}, but the bucket keeps object versions and still holds {count} noncurrent "
        f"generation{plural} of gs://{bucket}/{object_name} that may hold {held}: docmem-gcs "
        "does not delete noncurrent generations. Delete each (gcloud storage rm "
        f"gs://{bucket}/{object_name}#GENERATION), or turn off object versioning on the bucket "
        f"and {again}",
        bucket=bucket,
        object_name=object_name,
        generations=left,
    )
