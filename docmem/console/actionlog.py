"""Each console action recorded without content: who, what, which storage key, the outcome.

An operator's remove, revert, erase, export and probe each leave one line on
the ``docmem.console`` logger, so a support desk can answer "who erased this
scope, and did it land?" without the log ever holding a memory's text, a
query or a raw scope value: only the operator's name as the sign-in gave it,
the action, the storage key (already a digest), the outcome and the
revision or mutation id. The store's own telemetry spans (docmem.telemetry)
cover the same writes, content-free as well.
"""

from __future__ import annotations

import logging
import re

__all__ = ["record_action"]

logger = logging.getLogger("docmem.console")


def record_action(
    operator: str,
    action: str,
    outcome: str,
    *,
    key: str | None = None,
    revision: int | None = None,
    mutation_id: str | None = None,
) -> None:
    """Log one action at INFO as ``key=value`` fields (values are ids and counts, never text)."""
    fields = {
        "operator": _printable(operator),
        "action": action,
        "key": key,
        "outcome": outcome,
        "revision": revision,
        "mutation_id": mutation_id,
    }
    logger.info(
        "console action %s",
        " ".join(f"{name}={value}" for name, value in fields.items() if value is not None),
        extra={"docmem_console": {k: v for k, v in fields.items() if v is not None}},
    )


_UNPRINTABLE = re.compile(r"[^A-Za-z0-9@._:/|+-]")


def _printable(name: str) -> str:
    """The operator's name with anything that could forge a field or a line replaced by ``?``."""
    return _UNPRINTABLE.sub("?", name)[:200]
