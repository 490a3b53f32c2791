"""Attacks on the provider boundary: hostile stored bytes, hostile read answers, hostile text.

Whatever a store holds or a backend answers, and whatever a caller saves,
the provider either succeeds or raises a docmem error: never a raw
TypeError, UnicodeError or msgspec error, and never one that carries memory
text down its ``__cause__``/``__context__`` chain. A document it refuses as
corrupt is left byte for byte as it was.

Bounded and seeded for ``make test``; ``DOCMEM_LONG_CAMPAIGN=1`` runs the
long, randomized campaign for nightly use.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import docmem
from docmem.provider import journal
from docmem.provider.document import MemoryDocument, normalize_entry, parse, serialize
from docmem.provider.journal import JournalRecord
from docmem.storage.builtin.inmemory import MemoryBackend

settings.register_profile(
    "docmem-attacks",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "docmem-attacks-long",
    max_examples=3000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
ATTACK = settings.get_profile(
    "docmem-attacks-long" if os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1" else "docmem-attacks"
)

SCOPE = docmem.lock_scope(namespace="tests:attacks", scope=("user", "auth0", "", "u_attack"))
KEY = SCOPE.storage_key
CANARY = "Canary-91c2-Heron"

# -- strategies ------------------------------------------------------------------

_word = st.text(
    st.characters(
        min_codepoint=0x21,
        max_codepoint=0x2FFF,
        exclude_categories=("Cc", "Cf", "Cs", "Cn", "Zs", "Zl", "Zp"),
    ),
    min_size=1,
    max_size=30,
)
_any_char = st.one_of(st.characters(exclude_categories=()), st.characters(categories=["Cs"]))
_surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)
any_text = st.one_of(
    st.text(_any_char, max_size=80),
    st.text(_any_char, min_size=2000, max_size=2200),
    st.tuples(_word, _surrogates).map("".join),
)


@st.composite
def documents(draw: st.DrawFn) -> MemoryDocument:
    """Valid documents: entries, a journal that fits them, sometimes a fence."""
    indexes = sorted(draw(st.sets(st.integers(0, 60), max_size=8)))
    entries = {index: draw(_word) for index in indexes}
    last = max(indexes, default=-1) + draw(st.integers(0, 3))
    revision = draw(st.integers(len(indexes), len(indexes) + 40))
    revs = sorted(draw(st.sets(st.integers(1, max(revision, 1)), max_size=5))) if revision else []
    records = []
    for number, rev in enumerate(revs):
        op = draw(st.sampled_from(["save", "remove", "erase"]) if last >= 0 else st.just("erase"))
        mutation_id = f"m{number}"
        records.append(
            JournalRecord(
                journal.id_digest(mutation_id),
                journal.request_digest(mutation_id, op, ""),
                rev,
                op,
                journal.OUTCOME_OF[op],
                None if op == "erase" else draw(st.integers(0, last)),
            )
        )
    fence = draw(st.none() | st.just("mig-1"))
    return MemoryDocument(
        entries, last=last, revision=revision, journal=tuple(records), fence=fence
    )


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A valid document's bytes with a few bytes flipped, inserted, cut or truncated."""
    data = bytearray(serialize(draw(documents())))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["flip", "insert", "cut", "truncate"]))
        if how == "flip" and where < len(data):
            data[where] ^= draw(st.integers(1, 255))
        elif how == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=4))
        elif how == "cut":
            del data[where : where + draw(st.integers(1, 8))]
        else:
            del data[where:]
    return bytes(data)


stored_bytes = st.one_of(
    st.binary(max_size=300),
    documents().map(serialize),
    damaged(),
    st.builds(
        lambda header, body: f"<!-- docmem/1 {header} -->\n{body}".encode("utf-8", "surrogatepass"),
        st.text(_any_char, max_size=80),
        st.text(_any_char, max_size=80),
    ),
    st.builds(
        lambda text: f'<!-- docmem/1 {{"last":0,"rev":1,"ops":[]}} -->\n0: {text}\n'.encode(
            "utf-8", "surrogatepass"
        ),
        any_text,
    ),
)

# -- helpers ---------------------------------------------------------------------


def _chain(error: BaseException) -> list[BaseException]:
    links: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in links:
        links.append(current)
        current = current.__cause__ or current.__context__
    return links


def _typed(call: Callable[[], object], *, canary: str | None = None) -> docmem.DocmemError | None:
    """Run ``call``: it succeeds, or raises a docmem error whose chain is docmem errors only."""
    try:
        call()
    except docmem.DocmemError as error:
        links = _chain(error)
        assert all(isinstance(link, docmem.DocmemError) for link in links), links
        if canary is not None:
            for link in links:
                assert canary not in repr(link)
                assert all(canary not in repr(arg) for arg in link.args)
        return error
    return None


def _memory(store: docmem.Backend) -> docmem.BoundMemory:
    fast = docmem.RetryPolicy(max_attempts=3, base=0.0, cap=0.0)
    return docmem.FileMemory(store, retry=fast).bind(SCOPE, slot="user")


# -- stored bytes ----------------------------------------------------------------


@pytest.mark.slow
@ATTACK
@given(data=stored_bytes, index=st.integers(0, 64), text=_word)
def test_any_stored_bytes_give_only_typed_errors(data: bytes, index: int, text: str) -> None:
    store = MemoryBackend()
    store.write(KEY, data, expected=None)
    try:
        parse(data)
        corrupt = False
    except docmem.DocumentCorrupt:
        corrupt = True
    mem = _memory(store)
    calls: list[Callable[[], object]] = [
        mem.recall,
        lambda: mem.inspect("m0"),
        lambda: mem.save(text, mutation_id="attack-save"),
        lambda: mem.remove(index, mutation_id="attack-remove"),
        lambda: mem.save(text + " again", mutation_id="attack-save-2"),
        lambda: mem.erase(mutation_id="attack-erase"),
    ]
    for call in calls:
        error = _typed(call)
        if corrupt:
            assert isinstance(error, docmem.DocumentCorrupt)
    stored = store.read(KEY)
    assert stored is not None
    if corrupt:
        assert stored.data == data  # refused, never overwritten
    else:
        parse(stored.data)  # whatever was written is a valid document


@ATTACK
@given(
    data=st.one_of(
        st.binary(max_size=64),
        st.binary(max_size=64).map(bytearray),
        st.binary(max_size=64).map(memoryview),
        st.text(max_size=64),
        st.none(),
        st.integers(),
        st.lists(st.integers(0, 255), max_size=8),
    ),
    version=st.one_of(st.text(max_size=8), st.none(), st.integers(), st.binary(max_size=4)),
)
def test_any_read_answer_gives_only_typed_errors(data: object, version: object) -> None:
    class Answering(MemoryBackend):
        def read(self, key: str) -> docmem.Stored | None:
            return docmem.Stored(data, version)  # type: ignore[arg-type]

    broken = not (isinstance(version, str) and version) or not isinstance(
        data, (bytes, bytearray, memoryview)
    )
    mem = _memory(Answering())
    for call in (
        mem.recall,
        lambda: mem.save("note", mutation_id="s"),
        lambda: mem.remove(0, mutation_id="r"),
    ):
        error = _typed(call)
        if broken:
            assert isinstance(error, docmem.StoreUnavailable)


# -- save texts ------------------------------------------------------------------


@pytest.mark.slow
@ATTACK
@given(text=any_text, mutation_id=st.text(_any_char, max_size=40) | _surrogates)
def test_any_save_text_gives_only_typed_errors(text: str, mutation_id: str) -> None:
    store = MemoryBackend()
    mem = _memory(store)
    _typed(lambda: mem.save(text, mutation_id=mutation_id or "id"))
    error = _typed(lambda: mem.save(CANARY + text, mutation_id="canary"), canary=CANARY)
    if error is None:
        saved = normalize_entry(CANARY + text)
        [message] = mem.recall()
        assert message.content.endswith(f": {saved}")
    stored = store.read(KEY)
    if stored is not None:
        parse(stored.data)
