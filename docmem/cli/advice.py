"""What to do about a docmem error, in the command line's terms: the second half of its line.

docmem's messages say what went wrong without any content; the command line
adds what an operator can do next with the flags at hand: retry a mutation
under the same ``--mutation-id``, look it up with ``docmem inspect``, fix the
``--store`` URL. A mutation's error also tells whether it took effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from docmem.errors import DocmemError, HistoryKept

__all__ = ["advice"]

_OUTCOMES = {
    "not_committed": "nothing was changed",
    "committed": "the change itself is stored",
}


def advice(error: DocmemError, facts: Mapping[str, Any]) -> str | None:
    """The advice for ``error``; ``facts`` are what the command knew (key, mutation id)."""
    mutation_id = facts.get("mutation_id")
    key = facts.get("key")
    parts: list[str] = []
    if mutation_id is not None and error.outcome is not None:
        parts.append(_outcome(error.outcome, mutation_id))
    hint = _by_code(error, key=key, mutation_id=mutation_id)
    if hint:
        parts.append(hint)
    return "; ".join(parts) or None


def _outcome(outcome: str, mutation_id: str) -> str:
    if outcome == "unknown":
        return (
            f"it may have landed: check with `docmem inspect {mutation_id}`, "
            f"or retry with --mutation-id {mutation_id}"
        )
    return _OUTCOMES.get(outcome, f"outcome {outcome}")


def _by_code(error: DocmemError, *, key: str | None, mutation_id: str | None) -> str | None:
    code = error.code
    if code == "document_corrupt":
        where = f"key {key}" if key else "the document"
        return (
            "docmem never overwrites a corrupt document: repair it by hand "
            f"(docs/design.md, section 3) or remove {where} from the store"
        )
    if code in ("store_unavailable", "protocol_violation"):
        if "create=true" in error.message:
            return "on the command line: add ?create=true to the --store URL, once"
        return "check the --store URL (or DOCMEM_STORE) and that the store is reachable"
    if code == "store_busy" and mutation_id is not None and error.outcome != "unknown":
        return f"retry with --mutation-id {mutation_id}"
    if isinstance(error, HistoryKept):
        if not error.erase_again_purges:
            return "remove the older versions the message names with the store's own tools"
        if mutation_id is not None:
            return f"once the store allows the purge, erase again with --mutation-id {mutation_id}"
    if code == "mutation_conflict":
        return "pass a new --mutation-id for a new request"
    if code == "mutation_ambiguous":
        return "look at the memory with `docmem show` before saving again"
    if code == "scope_fenced":
        return "retry once the migration has lifted the fence"
    if code == "unknown_key":
        return "put the key it names back into the store's keyring (docs/encryption.md)"
    if code == "plaintext_document":
        return (
            "move a plaintext store with docmem export and docmem import, or add "
            "allow_plaintext=true to the --store URL to encrypt it in place (docs/encryption.md)"
        )
    return None
