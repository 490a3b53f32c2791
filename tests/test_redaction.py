"""No memory text and no raw scope value ever reaches a log record or an error message."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wrappers import ScriptedBackend

import docmem
import docmem.provider.keys
from docmem.host.recall import Recalled, RecallLedger
from docmem.host.slot import RecallContext
from docmem.provider.document import MemoryDocument, serialize
from docmem.storage.builtin.inmemory import MemoryBackend
from docmem.testing.redaction import CANARY, SCOPE_CANARY, all_text


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

    def stale_revert() -> None:
        good = mem.save(CANARY + " before", mutation_id="rv-1").revision
        mem.save(CANARY + " poison", mutation_id="rv-2")
        plan = mem.plan_revert(good)
        mem.save(CANARY + " unseen", mutation_id="rv-3")
        mem.revert(good, mutation_id="rv-4", expected_revision=plan.revision)

    return [
        lambda: mem.save(CANARY + " AKIAIOSFODNN7EXAMPLE", mutation_id="secret"),
        lambda: mem.save(CANARY, mutation_id="bad-session", session_id=CANARY + "\ud800"),
        stale_revert,
        lambda: mem.save(CANARY + "\u0007", mutation_id="control"),
        lambda: mem.save(CANARY * 200, mutation_id="long"),
        lambda: mem.save(CANARY * 5000, mutation_id="huge"),
        full,
        conflict,
        busy,
        ambiguous,
        corrupt,
    ]


def chained_paths(mem: docmem.BoundMemory, backend: ScriptedBackend) -> list[Callable[[], object]]:
    """Refusals raised while handling another exception that holds the canary itself."""

    def replace_stored(data: bytes) -> None:
        stored = backend.inner.read(mem.scope.storage_key)
        backend.inner.write(
            mem.scope.storage_key, data, expected=stored.version if stored else None
        )

    def not_utf8() -> None:  # a UnicodeDecodeError would hold the whole document
        good = serialize(MemoryDocument({0: CANARY}, last=0, revision=1))
        replace_stored(good.replace(CANARY.encode(), b"\xff" + CANARY.encode()))
        mem.recall()

    def header_field() -> None:  # a msgspec error would quote the stored value
        good = serialize(MemoryDocument({0: "x"}, last=0, revision=1))
        replace_stored(good.replace(b'"rev":1', json.dumps({"r": CANARY})[1:-1].encode()))
        mem.recall()

    def provenance_field() -> None:  # a refused record must not quote its ids
        good = serialize(MemoryDocument({0: "x"}, last=0, revision=1))
        record = json.dumps([[0, 0, CANARY, CANARY * 300, CANARY, None]])
        head = good.replace(b"<!-- docmem/1 ", b"<!-- docmem/2 ")
        replace_stored(head.replace(b'"ops":[]', b'"ops":[],"prov":' + record.encode()))
        mem.recall()

    def ledger_bytes() -> None:
        RecallLedger.from_bytes(json.dumps({"version": 1, "records": CANARY}).encode())

    def recall_batch() -> None:
        lock = docmem.SlotLock("user", mem.scope)
        RecallLedger().apply("op", 0, [(lock, [Recalled(CANARY + "\ud800", "id")])])

    def recall_item_shape() -> None:
        class Provider:
            def recall(self, context: RecallContext) -> list[Any]:
                return [{"text": CANARY}]

        slot = docmem.MemorySlot("user", Provider(), scope="u", namespace="tests:redaction")
        docmem.MemoryRuntime([slot]).turn_started(docmem.TurnContext(operation_id="t"))

    return [
        lambda: mem.save(CANARY + "\ud800", mutation_id="surrogate"),
        not_utf8,
        header_field,
        provenance_field,
        ledger_bytes,
        recall_batch,
        recall_item_shape,
    ]


@pytest.fixture(params=["memory", "file"])
def inner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[docmem.Backend]:
    """Each store the canary goes through (a file:// root made for the test)."""
    backend = (
        MemoryBackend()
        if request.param == "memory"
        else docmem.open_store(f"file://{tmp_path}?create=true")
    )
    yield backend
    backend.close()


def test_canary_never_in_errors_or_logs(
    caplog: pytest.LogCaptureFixture, scope: docmem.LockedScope, inner: docmem.Backend
) -> None:
    caplog.set_level(logging.DEBUG)
    backend = ScriptedBackend(inner)  # type: ignore[arg-type]
    mem = docmem.FileMemory(backend, retry=docmem.RetryPolicy(base=0, cap=0)).bind(
        scope, slot="user"
    )
    paths = error_paths(mem, backend)
    assert len(paths) == 11
    chained = chained_paths(mem, backend)
    assert len(chained) == 7
    for path in [*paths, *chained]:
        with pytest.raises(docmem.DocmemError) as caught:
            path()
        assert CANARY not in all_text(caught.value)
        assert not isinstance(caught.value, docmem.HistoryNotKept)
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
    # A lone surrogate fails the UTF-8 encoding, whose error holds the whole raw value.
    for namespace, bad in (
        ("ns", SCOPE_CANARY + "\ud800"),
        ("ns", ("user", SCOPE_CANARY + "\udfff")),
        (SCOPE_CANARY + "\ud800", "u"),
    ):
        with pytest.raises(docmem.InvalidScope) as caught:
            docmem.lock_scope(namespace=namespace, scope=bad)
        assert SCOPE_CANARY not in all_text(caught.value)
    with pytest.raises(docmem.InvalidScope) as caught:
        docmem.provider.keys.item_key(SCOPE_CANARY + "\ud800")
    assert SCOPE_CANARY not in all_text(caught.value)


def test_the_chain_walk_sees_a_context_hidden_by_from_none() -> None:
    def refuse() -> None:
        try:
            raise KeyError(CANARY)
        except KeyError:
            raise docmem.InvalidArgument("refused") from None

    with pytest.raises(docmem.InvalidArgument) as caught:
        refuse()
    assert caught.value.__suppress_context__
    assert CANARY in all_text(caught.value)
