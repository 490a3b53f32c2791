"""What the provenance, history, revert and audit tests share: a file:// store and its scopes.

Each test saves through the docmem API (as an application or a model's tool
call would, with ``made_by`` and ``session_id``), then runs the real
``docmem`` console script on the same store. ``flaky_env`` adds a plug-in
store over file:// whose reads of chosen keys fail or are interrupted, for
the walks that must stop and resume.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from cli_transcript import base_environment

import docmem
from docmem.provider.memory import BoundMemory

__all__ = [
    "LEGACY",
    "NAMESPACE",
    "flaky_env",
    "memory",
    "scope_flags",
    "snapshot",
    "storage_key",
    "store_env",
    "store_url",
]

NAMESPACE = "acme:prod:user"
#: A docmem/1 document as a release before provenance wrote it: two entries, no records.
LEGACY = b'<!-- docmem/1 {"last":1,"rev":1,"ops":[]} -->\n0: Old fact.\n1: Older fact.\n'


def store_url(tmp_path: Path, *, options: str = "") -> str:
    return f"file://{tmp_path}/store?create=true{options}"


def store_env(tmp_path: Path, *, options: str = "") -> dict[str, str]:
    return base_environment(DOCMEM_STORE=store_url(tmp_path, options=options))


def scope_flags(user: str) -> tuple[str, ...]:
    return ("--namespace", NAMESPACE, "--scope", "user", "--scope", user)


def storage_key(user: str) -> str:
    return docmem.lock_scope(namespace=NAMESPACE, scope=("user", user)).storage_key


def memory(tmp_path: Path, user: str, *, options: str = "") -> BoundMemory:
    """The scope's memory as an application binds it, on the test's file:// store."""
    store = docmem.open_store(store_url(tmp_path, options=options))
    scope = docmem.lock_scope(namespace=NAMESPACE, scope=("user", user))
    return docmem.FileMemory(store).bind(scope, slot="user")


def snapshot(tmp_path: Path) -> dict[str, bytes]:
    """Every file of the store (documents, kept versions) by path: "nothing written" keeps it."""
    root = tmp_path / "store"
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def flaky_env(tmp_path: Path, **fail: str) -> dict[str, str]:
    """``DOCMEM_STORE=flaky://<tmp>/store``: file://, except reads of the keys ``fail`` names.

    ``FLAKY_UNAVAILABLE=KEY`` makes that key's read fail as a store that cannot
    be reached; ``FLAKY_INTERRUPT=KEY`` raises KeyboardInterrupt there, as a Ctrl-C would.
    """
    plugin = tmp_path / "plugin"
    plugin.mkdir(exist_ok=True)
    (plugin / "docmem_cli_flaky.py").write_text(
        textwrap.dedent(
            """
            import os

            from docmem.errors import StoreUnavailable
            from docmem.storage.builtin.local import LocalBackend

            class Flaky(LocalBackend):
                @classmethod
                def from_url(cls, url, **options):
                    return cls(url[len("flaky://"):])

                def read(self, key):
                    if key == os.environ.get("FLAKY_UNAVAILABLE"):
                        raise StoreUnavailable("the flaky read could not reach the store")
                    if key == os.environ.get("FLAKY_INTERRUPT"):
                        raise KeyboardInterrupt
                    return super().read(key)
            """
        )
    )
    info = plugin / "docmem_cli_flaky-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: docmem-cli-flaky\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[docmem.backends]\nflaky = docmem_cli_flaky:Flaky\n")
    return base_environment(
        PYTHONPATH=str(plugin), DOCMEM_STORE=f"flaky://{tmp_path}/store", **fail
    )
