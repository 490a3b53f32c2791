"""The model-based test: a Hypothesis state machine that checks a store against a dict.

:class:`docmem.testing.BackendTests` runs it on every backend; a plug-in may
also run it on its own, with other settings, through
:meth:`BackendStateMachine.bound_to`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, cast

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from ..backend import Backend, Stored
from ..errors import VersionConflict

__all__ = ["STATE_MACHINE_KEYS", "BackendFactory", "BackendStateMachine"]

#: Returns a fresh, empty store on every call.
BackendFactory = Callable[[], Backend]

#: A few keys of different shapes; a small set makes collisions between rules likely.
STATE_MACHINE_KEYS = ("k0", "k-1", "key_2", "memkey1_" + "Ab9-_" * 8 + "xyz")
_MADE_UP_VERSION = "docmem-conformance-never-a-version"

_keys = st.sampled_from(STATE_MACHINE_KEYS)
_data = st.binary(max_size=64)


class BackendStateMachine(RuleBasedStateMachine):
    """Checks a store against a dict model: every read must match the model.

    Use :meth:`bound_to` to get a machine class for one backend factory, then
    run it with ``run_state_machine_as_test`` (as :class:`BackendTests` does) or
    expose its ``TestCase``.
    """

    make_backend: ClassVar[BackendFactory | None] = None

    @classmethod
    def bound_to(cls, factory: BackendFactory) -> type[BackendStateMachine]:
        """A subclass whose examples each run on a fresh store from ``factory``."""
        bound = type(f"{cls.__name__}Bound", (cls,), {"make_backend": staticmethod(factory)})
        return cast("type[BackendStateMachine]", bound)

    def __init__(self) -> None:
        super().__init__()
        factory = type(self).make_backend
        if factory is None:
            raise TypeError("use BackendStateMachine.bound_to(factory) to pick the store")
        self.backend = factory()
        #: What the store must hold: key -> (bytes, version returned by the write).
        self.model: dict[str, Stored] = {}
        #: Every version each key ever had, for stale updates.
        self.history: dict[str, set[str]] = {key: set() for key in STATE_MACHINE_KEYS}
        #: Everything each key ever held (``None``: missing), for reads that may be stale.
        self.held: dict[str, list[Stored | None]] = {key: [None] for key in STATE_MACHINE_KEYS}

    def teardown(self) -> None:
        self.backend.close()

    def _committed(self, key: str, data: bytes, version: object) -> None:
        assert isinstance(version, str), f"write returned version {version!r}"
        assert version, "write returned an empty version"
        self.model[key] = Stored(data=data, version=version)
        self.history[key].add(version)
        self.held[key].append(self.model[key])

    def _refused(self, key: str, data: bytes, expected: str | None) -> None:
        try:
            version = self.backend.write(key, data, expected=expected)
        except VersionConflict:
            return
        raise AssertionError(
            f"write(expected={expected!r}) of {key!r} succeeded with version {version!r}; "
            f"the model holds {self.model.get(key)!r}"
        )

    @rule(key=_keys, data=_data)
    def create(self, key: str, data: bytes) -> None:
        if key in self.model:
            self._refused(key, data, None)
        else:
            self._committed(key, data, self.backend.write(key, data, expected=None))

    @rule(key=_keys, data=_data)
    def update_with_current_version(self, key: str, data: bytes) -> None:
        current = self.model.get(key)
        if current is None:
            # An update of a missing key is a conflict, whatever version it names.
            old = sorted(self.history[key]) or [_MADE_UP_VERSION]
            self._refused(key, data, old[-1])
            return
        version = self.backend.write(key, data, expected=current.version)
        if data != current.data:
            assert version != current.version, "the bytes changed but the version did not"
        self._committed(key, data, version)

    @rule(key=_keys, data=_data, pick=st.data())
    def update_with_stale_version(self, key: str, data: bytes, pick: st.DataObject) -> None:
        current = self.model.get(key)
        stale = sorted(self.history[key] - ({current.version} if current else set()))
        expected = pick.draw(st.sampled_from(stale)) if stale else _MADE_UP_VERSION
        self._refused(key, data, expected)

    @rule(key=_keys)
    def read(self, key: str) -> None:
        self._check(key)

    @rule(key=_keys)
    def read_recent(self, key: str) -> None:
        recent = self.backend.read_recent(key)
        if self.backend.recent_reads_may_be_stale:
            assert recent in self.held[key], f"{key!r}: read_recent answered what it never held"
        else:
            self._compare(key, recent)

    @rule(key=_keys)
    def delete(self, key: str) -> None:
        self.backend.delete(key)
        self.model.pop(key, None)
        self.held[key].append(None)

    @rule(key=_keys)
    def purge_history(self, key: str) -> None:
        self.backend.purge_history(key)

    def _check(self, key: str) -> None:
        self._compare(key, self.backend.read(key))

    def _compare(self, key: str, stored: Stored | None) -> None:
        expected = self.model.get(key)
        if expected is None:
            assert stored is None, f"{key!r} should be missing, read {stored!r}"
        else:
            assert stored is not None, f"{key!r} should hold {expected!r}, read None"
            assert stored.data == expected.data, f"{key!r}: bytes differ from the model"
            assert stored.version == expected.version, f"{key!r}: version differs from the write"

    @invariant()
    def store_matches_model(self) -> None:
        for key in STATE_MACHINE_KEYS:
            self._check(key)
        assert set(self.backend.keys()) == set(self.model)
