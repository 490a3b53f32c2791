"""A remove or an erase based on a revision the caller saw: refused once the memory moved on.

What an operator's console needs (docs/design.md, section 5): the page showed
revision R, and the action must not take a save that landed after it.
"""

from __future__ import annotations

import threading

import pytest

import docmem
from docmem.errors import InvalidArgument, StaleRevision


def test_a_remove_at_the_revision_shown_removes(mem: docmem.BoundMemory) -> None:
    mem.save("Prefers metric units.")
    shown = mem.save("Works at Acme.").revision
    removed = mem.remove(0, expected_revision=shown)
    assert (removed.status, removed.revision) == ("removed", shown + 1)


def test_a_remove_after_another_change_is_refused_and_writes_nothing(
    mem: docmem.BoundMemory,
) -> None:
    shown = mem.save("Prefers metric units.").revision
    mem.save("A save the operator has not seen.")
    before = mem.read()
    with pytest.raises(StaleRevision, match=f"since revision {shown} ") as refused:
        mem.remove(0, expected_revision=shown)
    assert refused.value.outcome == "not_committed"
    assert mem.read() == before


def test_an_erase_never_takes_a_save_its_caller_did_not_see(mem: docmem.BoundMemory) -> None:
    shown = mem.save("Prefers metric units.").revision
    mem.save("A save the operator has not seen.")
    with pytest.raises(StaleRevision):
        mem.erase(expected_revision=shown)
    assert len(mem.read().entries) == 2
    erased = mem.erase(expected_revision=mem.read().revision)
    assert erased.status == "erased"
    assert mem.read().entries == {}


def test_an_empty_scope_is_at_revision_zero(mem: docmem.BoundMemory) -> None:
    assert mem.remove(3, expected_revision=0).status == "absent"
    with pytest.raises(StaleRevision):
        mem.erase(expected_revision=1)


def test_a_retry_of_a_done_remove_replays_even_though_the_revision_moved(
    mem: docmem.BoundMemory,
) -> None:
    shown = mem.save("Prefers metric units.").revision
    first = mem.remove(0, mutation_id="op-1", expected_revision=shown)
    again = mem.remove(0, mutation_id="op-1", expected_revision=shown)
    assert (again.status, again.revision) == ("removed", first.revision)


def test_a_racing_save_and_an_erase_based_on_the_old_revision_never_both_land(
    mem: docmem.BoundMemory,
) -> None:
    shown = mem.save("Prefers metric units.").revision
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def save() -> None:
        start.wait()
        mem.save("Saved while the operator looked.")

    def erase() -> None:
        start.wait()
        try:
            outcomes.append(mem.erase(expected_revision=shown).status)
        except StaleRevision:
            outcomes.append("stale")

    threads = [threading.Thread(target=save), threading.Thread(target=erase)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = mem.read().entries
    if outcomes == ["erased"]:  # the erase came first: the save landed after it
        assert list(entries.values()) == ["Saved while the operator looked."]
    else:
        assert outcomes == ["stale"]
        assert len(entries) == 2


@pytest.mark.parametrize("revision", [-1, True, "3"])
def test_an_expected_revision_must_be_a_non_negative_integer(
    mem: docmem.BoundMemory, revision: object
) -> None:
    with pytest.raises(InvalidArgument):
        mem.remove(0, expected_revision=revision)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        mem.erase(expected_revision=revision)  # type: ignore[arg-type]
