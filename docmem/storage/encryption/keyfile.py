"""The local keyring's JSON form, in a file or an environment variable (docs/encryption.md).

::

    {"format": "docmem-keyring/1", "primary": "2025-06",
     "keys": {"2024-11": "<32 bytes, base64>", "2025-06": "<32 bytes, base64>"}}

Base64 is standard or URL-safe, padded or not (``openssl rand -base64 32``
makes one). A keyring file must be mode 0600 (or stricter) and is refused
otherwise. Every refusal is StoreNotConfigured naming the source and what
is wrong, never a value from it: the text is key material.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shlex
import stat
from collections.abc import Callable, Mapping

import msgspec

from ...errors import StoreNotConfigured
from .aead import KEY_BYTES

__all__ = [
    "FORMAT",
    "parse_keyring",
    "read_keyring_file",
    "read_keyring_variable",
    "render_keyring",
    "update_keyring_file",
]

FORMAT = "docmem-keyring/1"
#: Permission bits of group and others: a keyring file with any of them is refused.
_SHARED = stat.S_IRWXG | stat.S_IRWXO


class _KeyringText(msgspec.Struct, forbid_unknown_fields=True):
    format: str
    primary: str
    keys: dict[str, str]


def parse_keyring(text: str | bytes, *, source: str) -> tuple[dict[str, bytes], str]:
    """The keys (id -> bytes) and the primary id ``text`` holds; ``source`` names it in errors."""
    problem = ""
    try:
        parsed = msgspec.json.decode(text, type=_KeyringText)
    except msgspec.ValidationError as exc:
        # msgspec names the field at fault ("at $.keys"), never the value.
        problem = f"it is not a docmem keyring ({str(exc).rsplit(' - at ', 1)[-1]})"
    except msgspec.DecodeError:
        problem = "it is not valid JSON"
    if problem:  # raised outside the handler: the decode error may quote the text
        raise StoreNotConfigured(f"the keyring in {source} cannot be read: {problem}")
    if parsed.format != FORMAT:
        raise StoreNotConfigured(f'the keyring in {source} must have "format": "{FORMAT}"')
    keys = {key_id: _key_bytes(encoded, key_id, source) for key_id, encoded in parsed.keys.items()}
    if parsed.primary not in keys:
        raise StoreNotConfigured(f"the keyring in {source} names a primary key it does not hold")
    return keys, parsed.primary


def _key_bytes(encoded: str, key_id: str, source: str) -> bytes:
    text = encoded.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    decoded = b""
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) != KEY_BYTES:
        raise StoreNotConfigured(
            f"key {key_id!r} in the keyring in {source} must be {KEY_BYTES} bytes in base64"
        )
    return decoded


def read_keyring_file(path: str) -> tuple[dict[str, bytes], str]:
    """The keyring in the file ``path``, refused unless only its owner may use it (0600).

    Key bytes are the one secret that opens every memory, so a keyring file
    that group or others may read (or write: whoever writes it picks the keys)
    is refused, as ssh refuses such a private key, rather than used with a
    warning nobody reads. The mode comes from the open descriptor, so the file
    checked is the file read, even if the path is replaced in between. The
    owner is not checked: with 0600, only the owner or root can open it at
    all, and root (``sudo docmem keyring list``) may read a service's file.
    """
    source = f"file {path}"
    reason = ""
    try:
        text = _read_private(path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    if reason:
        raise StoreNotConfigured(f"the keyring {source} cannot be read ({reason})")
    return parse_keyring(text, source=source)


def _read_private(path: str) -> bytes:
    """The bytes of ``path``; StoreNotConfigured if group or others have any access to it."""
    with open(path, "rb") as handle:
        mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
        if mode & _SHARED:
            raise StoreNotConfigured(
                f"the keyring file {path} is open to group or others (mode {mode:04o}), and "
                f"its keys open every memory: run chmod 600 {shlex.quote(path)}"
            )
        return handle.read()


def read_keyring_variable(variable: str) -> tuple[dict[str, bytes], str]:
    """The keyring in the environment variable ``variable``."""
    text = os.environ.get(variable)
    if not text:
        raise StoreNotConfigured(f"the keyring variable {variable} is not set")
    return parse_keyring(text, source=f"variable {variable}")


def render_keyring(keys: Mapping[str, bytes], primary: str) -> str:
    """The JSON text of a local keyring (URL-safe base64 keys), ending in a newline."""
    if primary not in keys:
        raise StoreNotConfigured("a keyring's primary must be one of its keys")
    encoded = {
        key_id: base64.urlsafe_b64encode(secret).decode("ascii") for key_id, secret in keys.items()
    }
    return json.dumps({"format": FORMAT, "primary": primary, "keys": encoded}, indent=2) + "\n"


#: A change of a keyring: (keys, primary or None when new) -> (keys, primary).
Change = Callable[[dict[str, bytes], "str | None"], tuple[dict[str, bytes], str]]


def update_keyring_file(path: str, change: Change) -> tuple[dict[str, bytes], str]:
    """Apply ``change`` to the keyring file ``path`` under its lock, and replace it durably.

    A missing file starts empty (``primary`` ``None``) and is created mode
    0600. The new text goes to a temporary file in the same directory
    (0600, fsynced), renamed over the old one, and the directory is fsynced;
    two operators changing the file at once take turns, so neither loses a key.
    """
    from ...localfs.durable import fsync_directory, write_new_file
    from ...localfs.flock import LockTimeout, exclusive

    directory = os.path.dirname(os.path.abspath(path))
    failure = ""
    try:
        with exclusive(path + ".lock", 10.0):
            if os.path.exists(path):
                keys, primary = read_keyring_file(path)
                current: str | None = primary
            else:
                keys, current = {}, None
            keys, primary = change(dict(keys), current)
            temp = os.path.join(directory, f".{os.path.basename(path)}.{os.urandom(6).hex()}.tmp")
            write_new_file(temp, render_keyring(keys, primary).encode("ascii"))
            try:
                os.replace(temp, path)
            except OSError:
                os.unlink(temp)
                raise
            fsync_directory(directory)
            return keys, primary
    except LockTimeout:
        failure = "its lock stayed held for 10 s"
    except OSError as exc:
        failure = exc.strerror or type(exc).__name__
    raise StoreNotConfigured(f"the keyring file {path} cannot be written ({failure})")
