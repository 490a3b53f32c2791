"""``docmem keyring``: a local keyring file's keys, by id; key bytes are never printed.

``add FILE ID`` puts a new random 256-bit key into the file (creating it,
mode 0600, when missing; its first key is the primary), ``--primary`` makes
it the primary; ``primary FILE ID`` makes an existing key the primary;
``remove FILE ID`` drops a key (never the primary: run ``docmem rekey``
first, so nothing is left under it); ``list FILE`` names the keys. Every
change rewrites the file under its lock (docmem.encryption.keyfile).
"""

from __future__ import annotations

import argparse

from docmem.errors import StoreNotConfigured, UnknownKey

from ..command import Command, UsageError
from ..flags import add_output
from ..report import Reporter

__all__ = ["COMMAND"]


class Keyring(Command):
    help = "add, list or remove the keys of a local keyring file"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_output(parser)
        parser.add_argument("action", choices=("add", "primary", "remove", "list"))
        parser.add_argument(
            "file", metavar="FILE", help="the keyring file (created by add, mode 0600)"
        )
        parser.add_argument("key_id", metavar="ID", nargs="?", help="the key id (not for list)")
        parser.add_argument("--primary", action="store_true", help="add: make the new key primary")

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Change or list the keyring file's keys."""
        from docmem.storage.encryption.aead import new_key
        from docmem.storage.encryption.envelope import KEY_ID
        from docmem.storage.encryption.keyfile import read_keyring_file, update_keyring_file

        action: str = arguments.action
        path: str = arguments.file
        key_id: str | None = arguments.key_id
        report.note(file=path, action=action)
        if action == "list":
            if key_id is not None:
                raise UsageError("keyring list takes no key id")
            keys, primary = read_keyring_file(path)
            return _listed(report, list(keys), primary)
        if key_id is None:
            raise UsageError(f"keyring {action} needs a key id")
        if arguments.primary and action != "add":
            raise UsageError("--primary goes with keyring add")
        if not KEY_ID.fullmatch(key_id):
            raise UsageError("a key id is 1-255 characters of [A-Za-z0-9._:/-]")
        report.note(key_id=key_id)

        def change(keys: dict[str, bytes], primary: str | None) -> tuple[dict[str, bytes], str]:
            if action == "add":
                if key_id in keys:
                    raise StoreNotConfigured(f"the keyring already holds key id {key_id!r}")
                keys[key_id] = new_key()
                return keys, key_id if arguments.primary or primary is None else primary
            if primary is None or key_id not in keys:
                raise UnknownKey(f"the keyring holds no key id {key_id!r}")
            if action == "primary":
                return keys, key_id
            if key_id == primary:
                raise StoreNotConfigured(
                    "the primary key cannot be removed: make another key primary, run docmem "
                    "rekey, then remove this one"
                )
            del keys[key_id]
            return keys, primary

        keys, primary = update_keyring_file(path, change)
        done = {"add": "added", "primary": "made primary", "remove": "removed"}[action]
        report.say(f"key {key_id!r} {done}")
        return _listed(report, list(keys), primary)


COMMAND = Keyring()


def _listed(report: Reporter, key_ids: list[str], primary: str) -> int:
    lines = [f"{key_id}{'  (primary)' if key_id == primary else ''}" for key_id in key_ids]
    return report.done("\n".join(lines), primary=primary, key_ids=key_ids)
