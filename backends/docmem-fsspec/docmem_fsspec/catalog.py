"""The keys a store holds: every key folder under the root with a current version.

For export and administration (docs/design.md, section 4): one recursive
listing of the whole store. A folder whose newest object is a tombstone
holds a deleted key, which is not listed. An empty answer is checked against
the root, since a missing bucket may answer with nothing.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

from .commitlog import Listing
from .folders import KeyFolders, unavailable

__all__ = ["stored_keys"]


def stored_keys(folders: KeyFolders) -> Iterator[str]:
    """The keys with a current version, sorted; lists the store when first iterated."""
    if not folders._require_store(writing=False):
        return
    reader, _ = folders.filesystems()
    try:
        found = reader.find(folders.root, detail=True)
    except FileNotFoundError:
        found = {}
    except Exception as exc:
        raise unavailable("list", exc) from None
    if not found:
        folders._require_root()  # an empty answer from a missing bucket is no answer
    by_key: dict[str, list[Any]] = collections.defaultdict(list)
    prefix = folders.root.rstrip("/") + "/"
    for path, info in dict(found).items():
        relative = str(path)[len(prefix) :] if str(path).startswith(prefix) else ""
        key, slash, _ = relative.partition("/")
        if slash:
            by_key[key].append(info)
    for key, infos in sorted(by_key.items()):
        if Listing.from_infos(infos, folder=f"{prefix}{key}").current is not None:
            yield key
