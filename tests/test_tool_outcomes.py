"""What the model is told when a mutation's outcome is not a plain failure (issue 21, item 2).

A write that landed while its answer was lost, followed by a settling read
that fails, is an ``unknown`` outcome: every tool result must say the note
may be saved, or the model retries under a new call id or tells the user
nothing was saved while the note is stored.
"""

from __future__ import annotations

import pytest
from wrappers import ScriptedBackend

import docmem
from docmem.errors import StoreUnavailable
from docmem.host.slot import ScopeContext
from docmem.provider.tools import OUTCOME_SENTENCES, error_result

NS = "tests:outcomes"
MAY_HAVE = "The change may have been made: check the memory shown on the next turn"


def _unreadable_after_a_lost_answer(backend: ScriptedBackend) -> None:
    """The next write lands but its answer is lost; the read that would settle it fails."""

    def store_goes_down() -> None:
        raise StoreUnavailable("the test store's read failed (HTTP 503)")

    backend.script = ["lost"]
    backend.interloper = store_goes_down


@pytest.fixture
def backend() -> ScriptedBackend:
    return ScriptedBackend()


def _memory(backend: ScriptedBackend) -> docmem.FileMemory:
    return docmem.FileMemory(backend, retry=docmem.RetryPolicy(base=0.0, cap=0.0))


def test_the_error_itself_carries_the_unknown_outcome(
    backend: ScriptedBackend, scope: docmem.LockedScope
) -> None:
    mem = _memory(backend).bind(scope, slot="user")
    _unreadable_after_a_lost_answer(backend)
    with pytest.raises(StoreUnavailable) as caught:
        mem.save("Lives in Berlin.", mutation_id="m1")
    assert caught.value.outcome == "unknown"


def test_a_tool_call_with_an_unknown_outcome_says_the_note_may_be_saved(
    backend: ScriptedBackend, scope: docmem.LockedScope
) -> None:
    mem = _memory(backend).bind(scope, slot="user")
    save = mem.tools()["user__save_memory"]
    _unreadable_after_a_lost_answer(backend)
    result = save.call({"text": "Lives in Berlin."}, call_id="c1", session_id="s")
    assert result.is_error
    assert result.text.startswith("The test store's read failed (HTTP 503). ")
    assert MAY_HAVE in result.text
    # And it was: the next recall shows it, and a retry of the same call is a replay.
    assert mem.recall()[0].content.endswith("0: Lives in Berlin.")
    again = save.call({"text": "Lives in Berlin."}, call_id="c1", session_id="s")
    assert again.text == "Saved as memory 0."


def test_runtime_dispatch_says_so_too(backend: ScriptedBackend) -> None:
    slot = docmem.MemorySlot("user", _memory(backend), scope=docmem.by_principal, namespace=NS)
    runtime = docmem.MemoryRuntime([slot])
    context = ScopeContext(principal=docmem.Principal("user", "auth0", "u_1"))
    _unreadable_after_a_lost_answer(backend)
    result = runtime.dispatch(
        context, "user__save_memory", {"text": "Lives in Berlin."}, call_id="c1", session_id="s"
    )
    assert result.is_error
    assert MAY_HAVE in result.text


def test_a_plain_failure_says_nothing_of_the_kind(
    backend: ScriptedBackend, scope: docmem.LockedScope
) -> None:
    mem = _memory(backend).bind(scope, slot="user")
    result = mem.tools()["user__remove_memory"].call({"index": -1})
    assert result.is_error
    assert "may have been made" not in result.text


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("unknown", OUTCOME_SENTENCES["unknown"]),
        ("committed", "The change itself was made."),
        ("not_committed", None),
        (None, None),
    ],
)
def test_every_outcome_has_its_sentence(outcome: str | None, expected: str | None) -> None:
    error = StoreUnavailable("the store is down")
    error.outcome = outcome  # type: ignore[assignment]
    text = error_result(error).text
    assert text == ("The store is down." + (f" {expected}" if expected else ""))
