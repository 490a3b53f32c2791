"""Which scope a command means: namespace and scope from the flags, or a storage key.

Three spellings, one of them per command: ``--namespace NS`` with ``--scope
PART`` repeated (a tuple scope, parts in order) or ``--scalar-scope VALUE``
(a one-string scope) or ``--principal KIND:AUTHENTICATOR:ID`` (the tuple
:func:`docmem.by_principal` gives, ``--issuer`` adding the principal's
issuer); or ``--key memkey1_...``, the storage key that ``docmem stats`` and
every answer print. The raw values only ever become keys; nothing prints them.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from docmem.errors import InvalidArgument, InvalidScope
from docmem.host.slot import Principal, ScopeContext, by_principal
from docmem.provider.keys import LockedScope, ScopeValue, lock_scope

from .command import UsageError

__all__ = ["Address", "by_storage_key", "is_storage_key", "resolve"]

_STORAGE_KEY = re.compile(r"memkey1_[A-Za-z0-9_-]{43}")


@dataclass(frozen=True)
class Address:
    """A resolved scope: its locked keys, and whether only the storage key is known."""

    scope: LockedScope
    #: Named by ``--key``: the namespace and scope keys are not known (``None`` in answers).
    by_key: bool = False

    @property
    def key(self) -> str:
        """The storage key, the name every answer and error uses."""
        return self.scope.storage_key

    def fields(self) -> dict[str, str | None]:
        """The keys as every answer reports them (docs/cli.md)."""
        known = not self.by_key
        return {
            "key": self.scope.storage_key,
            "namespace_key": self.scope.namespace_key if known else None,
            "scope_key": self.scope.scope_key if known else None,
        }


def resolve(arguments: argparse.Namespace) -> Address:
    """The scope the flags name; :class:`UsageError` unless exactly one spelling is given."""
    parts: list[str] | None = arguments.scope
    scalar: str | None = arguments.scalar_scope
    principal: str | None = arguments.principal
    given = [
        name
        for name, value in (
            ("--scope", parts),
            ("--scalar-scope", scalar),
            ("--principal", principal),
        )
        if value is not None
    ]
    if arguments.issuer is not None and principal is None:
        raise UsageError("--issuer goes with --principal")
    if arguments.key is not None:
        if given or arguments.namespace is not None:
            raise UsageError("--key names the scope by itself: drop --namespace and the scope")
        return by_storage_key(arguments.key)
    if not given and arguments.namespace is None:
        raise UsageError(
            "name the scope: --namespace NS with --scope PART (repeatable), --scalar-scope "
            "VALUE or --principal KIND:AUTHENTICATOR:ID; or --key memkey1_..."
        )
    if len(given) > 1:
        raise UsageError(f"give only one of {', '.join(given)}")
    if not given:
        raise UsageError("--namespace needs --scope PART, --scalar-scope VALUE or --principal")
    if arguments.namespace is None:
        raise UsageError(f"{given[0]} needs --namespace NS")
    scope: ScopeValue
    if principal is not None:
        scope = _principal_scope(principal, arguments.issuer)
    elif scalar is not None:
        scope = scalar
    else:
        assert parts is not None
        scope = tuple(parts)
    return Address(lock_scope(namespace=arguments.namespace, scope=scope))


def _principal_scope(text: str, issuer: str | None) -> tuple[str, str, str, str]:
    """What :func:`docmem.by_principal` gives the parsed principal, or why it gives nothing."""
    parsed = Principal.parse(text)
    principal = Principal(parsed.kind, parsed.authenticator, parsed.id, issuer=issuer)
    scope = by_principal(ScopeContext(principal=principal))
    if scope is None:
        raise InvalidScope(
            "this principal has no memory: docmem.by_principal gives none to anonymous "
            "and runtime principals; name a user or a service"
        )
    return scope


def is_storage_key(text: str) -> bool:
    """Whether ``text`` is spelled as a storage key: ``memkey1_`` and 43 base64url characters."""
    return _STORAGE_KEY.fullmatch(text) is not None


def by_storage_key(key: str) -> Address:
    """The scope known by its storage key alone (``--key``, a line of ``revert --scopes``).

    Its namespace and scope keys are blank; nothing here reports them
    (:meth:`Address.fields` says ``None``), and FileMemory uses only the storage key.
    """
    if not is_storage_key(key):
        raise InvalidArgument("a storage key is memkey1_ followed by 43 base64url characters")
    return Address(LockedScope(namespace_key="", scope_key="", storage_key=key), by_key=True)
