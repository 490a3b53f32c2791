"""A real tmpfs volume for tests of what a store does when its volume goes away.

An unmounted volume leaves its mount point behind as an empty folder on the
disk underneath, which a local store must never read as an empty memory nor
write into. Only a real mount shows that: :func:`tmpfs_volume` mounts one
(root and the ``mount`` command needed, as in CI), skips the test with its
reason where the machine does not permit it, and unmounts it afterwards,
whatever happens. Part of :mod:`docmem.testing` for plug-in authors.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["tmpfs_volume"]


@contextlib.contextmanager
def tmpfs_volume(parent: Path, *, size: str = "8m") -> Iterator[Path]:
    """A tmpfs mounted at ``parent / "volume"`` for the ``with`` block."""
    point = parent / "volume"
    point.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
            check=True,
            capture_output=True,
            timeout=30,
        )
    except FileNotFoundError:
        pytest.skip("no mount command on this machine")
    except subprocess.CalledProcessError as exc:
        reason = exc.stderr.decode(errors="replace").strip() or f"exit status {exc.returncode}"
        pytest.skip(f"mounting a tmpfs is not permitted here: {reason}")
    try:
        yield point
    finally:
        if os.path.ismount(point):
            subprocess.run(["umount", str(point)], check=True, timeout=30)
