"""The store a command works on: ``--store URL``, else ``DOCMEM_STORE``, never a default."""

from __future__ import annotations

import argparse
import os

from docmem.backend import Backend
from docmem.errors import StoreNotConfigured
from docmem.storage.registry import open_store

__all__ = ["ENVIRONMENT_VARIABLE", "open_from"]

ENVIRONMENT_VARIABLE = "DOCMEM_STORE"


def open_from(arguments: argparse.Namespace) -> Backend:
    """Open the store the flags or the environment name (no I/O yet).

    Without either it is :class:`~docmem.errors.StoreNotConfigured`: an
    operator tool that guessed a store could show an empty memory for a full one.
    """
    url = arguments.store or os.environ.get(ENVIRONMENT_VARIABLE)
    if url is None or not url.strip():
        raise StoreNotConfigured(
            f"no store given: pass --store URL or set {ENVIRONMENT_VARIABLE} "
            "(for example file:///var/lib/agent/memory)"
        )
    return open_store(url)
