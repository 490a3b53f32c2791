"""No memory text and no raw scope value ever reaches a log record or an error message."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from wrappers import ScriptedBackend

import docmem
from docmem.backends.memory import MemoryBackend
from docmem.document import MemoryDocument, serialize

CANARY = "CANARY-7f3a9c-memory-text"
SCOPE_CANARY = "SCOPE-CANARY-u_8d1e"


def all_text(error: BaseException) -> str:
    parts = [str(error), repr(error), *map(str, error.args)]
    cause = error.__cause__ or error.__context__
    if cause is not None:
        parts.append(all_text(cause))
    return "\n".join(parts)


def error_paths(mem: docmem.BoundMemory, backend: ScriptedBackend) -> list[Callable[[], object]]:
    def full() -> None:
        docmem.FileMemory(backend, max_characters=210).bind(mem.scope, slot="user").save(
            CANARY + " and then some more words to overflow", mutation_id="full"
        )

    def conflict() -> None:
        mem.save(CANARY + " one", mutation_id="dup-id")
        mem.save(CANARY + " two", mutation_id="dup-id")

    def busy() -> None:
        backend.script = ["conflict"] * 40
        docmem.FileMemory(backend, retry=docmem.RetryPolicy(max_attempts=3, base=0, cap=0)).bind(
            mem.scope, slot="user"
        ).save(CANARY + " busy", mutation_id="busy")

    def ambiguous() -> None:
        other = docmem.FileMemory(backend.inner).bind(mem.scope, slot="user")

        def many() -> None:
            for i in range(33):
                other.save(f"{CANARY} other {i}", mutation_id=f"amb-{i}")

        backend.script = ["unsent"]
        backend.interloper = many
        mem.save(CANARY + " ambiguous", mutation_id="amb")

    def corrupt() -> None:
        stored = backend.read(mem.scope.storage_key)
        bad = serialize(MemoryDocument({0: CANARY}, last=0, revision=1)) + b"0:  " + CANARY.encode()
        backend.inner.write(
            mem.scope.storage_key, bad + b"\n", expected=stored.version if stored else None
        )
        mem.recall()

    return [
        lambda: mem.save(CANARY + " AKIAIOSFODNN7EXAMPLE", mutation_id="secret"),
        lambda: mem.save(CANARY + "\u0007", mutation_id="control"),
        lambda: mem.save(CANARY * 200, mutation_id="long"),
        lambda: mem.save(CANARY * 5000, mutation_id="huge"),
        full,
        conflict,
        busy,
        ambiguous,
        corrupt,
    ]


def test_canary_never_in_errors_or_logs(
    caplog: pytest.LogCaptureFixture, scope: docmem.LockedScope
) -> None:
    caplog.set_level(logging.DEBUG)
    backend = ScriptedBackend(MemoryBackend())
    mem = docmem.FileMemory(backend, retry=docmem.RetryPolicy(base=0, cap=0)).bind(
        scope, slot="user"
    )
    paths = error_paths(mem, backend)
    assert len(paths) == 9
    for path in paths:
        with pytest.raises(docmem.DocmemError) as caught:
            path()
        assert CANARY not in all_text(caught.value)
    assert caplog.records, "the error paths are expected to log something"
    for record in caplog.records:
        assert CANARY not in record.getMessage()


def test_tool_error_results_never_echo_content(mem: docmem.BoundMemory) -> None:
    tools = mem.tools()
    save = tools["user__save_memory"]
    for arguments in (
        {"text": CANARY + " AKIAIOSFODNN7EXAMPLE"},
        {"text": CANARY * 5000},
        {"text": CANARY, "extra": CANARY},
        {"text": CANARY + "\u202e"},
    ):
        result = save.call(arguments, call_id="c")
        assert result.is_error
        assert CANARY not in result.text
    save.call({"text": CANARY}, call_id="same", session_id="s")
    result = save.call({"text": CANARY + "!"}, call_id="same", session_id="s")
    assert result.is_error
    assert CANARY not in result.text


def test_raw_scope_values_never_in_keys_errors_or_reprs(store: docmem.Backend) -> None:
    scope = docmem.lock_scope(namespace="ns", scope=("user", SCOPE_CANARY))
    assert SCOPE_CANARY not in repr(scope)
    mem = docmem.FileMemory(store).bind(scope, slot="user")
    assert SCOPE_CANARY not in repr(mem)
    mem.save("note", mutation_id="m")
    stored_keys = list(store.keys())
    assert stored_keys
    assert not [key for key in stored_keys if SCOPE_CANARY in key]
    for bad in (SCOPE_CANARY * 100, (SCOPE_CANARY,) * 17, (SCOPE_CANARY, 5)):
        with pytest.raises(docmem.InvalidScope) as caught:
            docmem.lock_scope(namespace="ns", scope=bad)  # type: ignore[arg-type]
        assert SCOPE_CANARY not in all_text(caught.value)
    with pytest.raises(docmem.InvalidScope) as caught:
        docmem.lock_scope(namespace=SCOPE_CANARY * 100, scope="u")
    assert SCOPE_CANARY not in all_text(caught.value)
