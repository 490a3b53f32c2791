"""MemorySlot: names, scope then namespace resolution, principals, default namespaces, tools."""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import docmem
from docmem.host.slot import ScopeContext, SlotLock
from docmem.provider.protocol import ToolsContext


class Provider:
    """A provider that recalls nothing; counts its calls."""

    def __init__(self) -> None:
        self.recalls = 0

    def recall(self, context: docmem.RecallContext) -> None:
        self.recalls += 1


def alice() -> ScopeContext:
    return ScopeContext(principal=docmem.Principal("user", "auth0", "alice-id"))


def locked(slot: docmem.MemorySlot, context: ScopeContext | None = None) -> SlotLock | None:
    return slot.lock(context or ScopeContext(), app_root="/srv/app", node="support")


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCMEM_ENVIRONMENT", raising=False)
    monkeypatch.delenv("DOCMEM_DEV", raising=False)


# -- declaration ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["user", "a", "A-1", "team_channel", "a_b_c", "x" * 48, "-", "0-_-0"]
)
def test_valid_slot_names(name: str) -> None:
    assert docmem.MemorySlot(name, Provider(), scope="s", namespace="n").name == name


@pytest.mark.parametrize(
    "name",
    ["", "x" * 49, "a__b", "_a", "a_", "_", "a b", "a.b", "a/b", "a:b", "ä", "a\n", None, 3],
)
def test_invalid_slot_names_are_rejected(name: Any) -> None:
    with pytest.raises(docmem.InvalidArgument):
        docmem.MemorySlot(name, Provider(), scope="s", namespace="n")


@pytest.mark.parametrize("description", ["", "   ", "\n\t", 5])
def test_a_blank_description_is_rejected(description: Any) -> None:
    with pytest.raises(docmem.InvalidArgument):
        docmem.MemorySlot("user", Provider(), scope="s", namespace="n", description=description)


@pytest.mark.parametrize("visibility", ["all", "Scope", "", None, "thread"])
def test_a_bad_visibility_is_rejected(visibility: Any) -> None:
    with pytest.raises(docmem.InvalidArgument):
        docmem.MemorySlot("user", Provider(), scope="s", namespace="n", visibility=visibility)


def test_a_provider_without_recall_is_rejected() -> None:
    class NoRecall:
        def tools(self, context: ToolsContext) -> None: ...

    with pytest.raises(docmem.InvalidArgument):
        docmem.MemorySlot("user", NoRecall(), scope="s", namespace="n")  # type: ignore[arg-type]


def test_file_memory_is_a_memory_provider() -> None:
    memory = docmem.FileMemory(docmem.open_store("memory://"))
    assert isinstance(memory, docmem.MemoryProvider)
    slot = docmem.MemorySlot("user", memory, scope="s", namespace="n")
    assert slot.provider is memory
    assert slot.visibility == "scope"
    assert slot.tools is True
    assert slot.description is None


@pytest.mark.process
def test_file_memory_type_checks_as_a_slot_provider(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "import docmem\n"
        "memory = docmem.FileMemory(docmem.open_store('memory://'))\n"
        "slot = docmem.MemorySlot('user', memory, scope='s', namespace='n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout


# -- resolution order -----------------------------------------------------------------


def test_scope_resolves_first_then_namespace() -> None:
    calls: list[str] = []

    def scope(context: ScopeContext) -> str:
        calls.append("scope")
        return "s"

    def namespace(context: docmem.NamespaceContext) -> str:
        calls.append("namespace")
        assert context == docmem.NamespaceContext(app_root="/srv/app", node="support", slot="user")
        return "n"

    lock = locked(docmem.MemorySlot("user", Provider(), scope=scope, namespace=namespace))
    assert calls == ["scope", "namespace"]
    assert lock == SlotLock("user", docmem.lock_scope(namespace="n", scope="s"), "scope")


def test_a_scope_of_none_disables_without_resolving_the_namespace() -> None:
    def namespace(context: docmem.NamespaceContext) -> str:
        raise AssertionError("the namespace must not be resolved for a disabled slot")

    for scope in (None, lambda context: None):
        slot = docmem.MemorySlot("user", Provider(), scope=scope, namespace=namespace)
        assert locked(slot) is None


def test_a_scope_of_none_never_falls_back_to_default_namespace() -> None:
    # default_namespace would raise without DOCMEM_ENVIRONMENT: it is never called.
    slot = docmem.MemorySlot("user", Provider(), scope=docmem.by_principal)
    assert locked(slot) is None


def test_a_namespace_of_none_disables_too() -> None:
    assert locked(docmem.MemorySlot("user", Provider(), scope="s", namespace=None)) is None
    slot = docmem.MemorySlot("user", Provider(), scope="s", namespace=lambda context: None)
    assert locked(slot) is None


def test_the_scope_resolver_sees_only_the_trusted_context() -> None:
    seen: list[ScopeContext] = []
    context = ScopeContext(
        principal=docmem.Principal("user", "okta", "u_1", issuer="https://idp"),
        channel="slack",
        channel_metadata={"team": "T1", "channel": "C1"},
    )

    def scope(received: ScopeContext) -> tuple[str, ...]:
        seen.append(received)
        return (*docmem.by_principal(received), received.channel_metadata["team"])  # type: ignore[misc]

    lock = locked(docmem.MemorySlot("team", Provider(), scope=scope, namespace="n"), context)
    assert seen == [context]
    assert {field.name for field in dataclasses.fields(ScopeContext)} == {
        "principal",
        "channel",
        "channel_metadata",
        "cancel",
    }
    assert lock is not None
    expected = docmem.lock_scope(namespace="n", scope=("user", "okta", "https://idp", "u_1", "T1"))
    assert lock.scope == expected


def test_an_invalid_scope_value_raises_never_a_shared_key() -> None:
    for scope in ("", (), ("x",) * 17, "x" * 1025):
        slot = docmem.MemorySlot("user", Provider(), scope=scope, namespace="n")
        with pytest.raises(docmem.InvalidScope):
            locked(slot)
    with pytest.raises(docmem.InvalidScope):
        locked(docmem.MemorySlot("user", Provider(), scope="s", namespace=""))


def test_the_lock_carries_the_slot_visibility() -> None:
    slot = docmem.MemorySlot("user", Provider(), scope="s", namespace="n", visibility="session")
    lock = locked(slot)
    assert lock is not None
    assert (lock.slot, lock.visibility) == ("user", "session")


def test_locking_makes_no_provider_call() -> None:
    provider = Provider()
    locked(docmem.MemorySlot("user", provider, scope="s", namespace="n"))
    assert provider.recalls == 0


# -- development-mode diagnostics ------------------------------------------------------------


def test_dev_mode_names_the_slot_and_the_scope_resolver(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DOCMEM_DEV", "1")
    caplog.set_level(logging.DEBUG, logger="docmem")
    slot = docmem.MemorySlot("support_user", Provider(), scope=lambda c: None, namespace="ns-x")
    assert locked(slot, alice()) is None

    messages = [record.getMessage() for record in caplog.records if record.name == "docmem"]
    assert len(messages) == 1
    assert "support_user" in messages[0]
    assert "scope" in messages[0]
    assert "namespace" not in messages[0]
    assert "alice-id" not in caplog.text
    assert "ns-x" not in caplog.text


def test_dev_mode_names_the_namespace_resolver_never_the_scope_value(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DOCMEM_DEV", "1")
    caplog.set_level(logging.DEBUG, logger="docmem")
    slot = docmem.MemorySlot("user", Provider(), scope=docmem.by_principal, namespace=None)
    assert locked(slot, alice()) is None

    messages = [record.getMessage() for record in caplog.records if record.name == "docmem"]
    assert len(messages) == 1
    assert "user" in messages[0]
    assert "namespace" in messages[0]
    assert "alice-id" not in caplog.text
    assert "auth0" not in caplog.text


def test_no_disabled_diagnostic_outside_dev_mode(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="docmem")
    assert locked(docmem.MemorySlot("user", Provider(), scope=None, namespace="n")) is None
    assert not [record for record in caplog.records if record.name == "docmem"]


# -- by_principal -----------------------------------------------------------------------------


def test_by_principal_is_a_four_tuple() -> None:
    principal = docmem.Principal("user", "okta", "u_1", issuer="https://idp.example")
    assert docmem.by_principal(ScopeContext(principal=principal)) == (
        "user",
        "okta",
        "https://idp.example",
        "u_1",
    )
    assert docmem.by_principal(alice()) == ("user", "auth0", "", "alice-id")
    service = docmem.Principal("service", "mtls", "svc-9")
    assert docmem.by_principal(ScopeContext(principal=service)) == ("service", "mtls", "", "svc-9")


@pytest.mark.parametrize("kind", ["anonymous", "runtime"])
def test_by_principal_is_none_for_anonymous_and_runtime(kind: str) -> None:
    principal = docmem.Principal(kind, "auth0", "someone")
    assert docmem.by_principal(ScopeContext(principal=principal)) is None


def test_by_principal_is_none_without_a_principal() -> None:
    assert docmem.by_principal(ScopeContext()) is None


@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u00a0", "\u3000"])
def test_by_principal_is_none_for_a_blank_id(blank: str) -> None:
    principal = docmem.Principal("user", "auth0", blank)
    assert docmem.by_principal(ScopeContext(principal=principal)) is None
    slot = docmem.MemorySlot("user", Provider(), scope=docmem.by_principal, namespace="n")
    assert locked(slot, ScopeContext(principal=principal)) is None


def test_by_principal_keeps_an_id_with_surrounding_whitespace() -> None:
    principal = docmem.Principal("user", "auth0", " u_1 ")
    assert docmem.by_principal(ScopeContext(principal=principal)) == ("user", "auth0", "", " u_1 ")


@pytest.mark.parametrize("blank", [" ", "\t", "\u3000"])
def test_a_blank_namespace_fails_the_lock_never_a_shared_key(blank: str) -> None:
    for namespace in (blank, lambda context: blank):
        slot = docmem.MemorySlot("user", Provider(), scope="u", namespace=namespace)
        with pytest.raises(docmem.InvalidScope, match="blank"):
            locked(slot)


def test_an_issuer_or_not_gives_distinct_scopes() -> None:
    with_issuer = docmem.Principal("user", "okta", "u_1", issuer="https://a")
    without = docmem.Principal("user", "okta", "u_1")
    slot = docmem.MemorySlot("user", Provider(), scope=docmem.by_principal, namespace="n")
    first, second = (
        locked(slot, ScopeContext(principal=with_issuer)),
        locked(slot, ScopeContext(principal=without)),
    )
    assert first is not None
    assert second is not None
    assert first.scope.scope_key != second.scope.scope_key


# -- default_namespace ----------------------------------------------------------------------------


def ns_context(app_root: str = "/srv/secret-app-root") -> docmem.NamespaceContext:
    return docmem.NamespaceContext(app_root=app_root, node="support", slot="user")


def test_default_namespace_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCMEM_ENVIRONMENT", "acme-prod")
    assert docmem.default_namespace(ns_context()) == "acme-prod:support:user"
    monkeypatch.setenv("DOCMEM_DEV", "1")  # a named environment wins over dev mode
    assert docmem.default_namespace(ns_context()) == "acme-prod:support:user"


@pytest.mark.parametrize("value", [None, "", "   "])
def test_default_namespace_without_an_environment_fails_closed(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is not None:
        monkeypatch.setenv("DOCMEM_ENVIRONMENT", value)
    with pytest.raises(docmem.InvalidScope) as raised:
        docmem.default_namespace(ns_context())
    assert "/srv/secret-app-root" not in str(raised.value)
    monkeypatch.setenv("DOCMEM_DEV", "0")
    with pytest.raises(docmem.InvalidScope):
        docmem.default_namespace(ns_context())


def test_default_namespace_in_dev_mode_digests_the_app_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCMEM_DEV", "1")
    namespace = docmem.default_namespace(ns_context())
    assert namespace.startswith("dev-")
    assert namespace.endswith(":support:user")
    assert "secret-app-root" not in namespace
    assert "/srv" not in namespace
    assert docmem.default_namespace(ns_context()) == namespace  # stable
    assert docmem.default_namespace(ns_context("/srv/other-app")) != namespace
    other_node = docmem.NamespaceContext(app_root="/srv/secret-app-root", node="n2", slot="user")
    assert docmem.default_namespace(other_node) != namespace


def test_a_slot_uses_default_namespace_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    slot = docmem.MemorySlot("user", Provider(), scope="s")
    with pytest.raises(docmem.InvalidScope):
        locked(slot)
    monkeypatch.setenv("DOCMEM_ENVIRONMENT", "acme-prod")
    lock = locked(slot)
    assert lock is not None
    assert lock.scope == docmem.lock_scope(namespace="acme-prod:support:user", scope="s")


def test_default_namespaces_separate_slots_and_deployments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCMEM_ENVIRONMENT", "acme-prod")
    user = locked(docmem.MemorySlot("user", Provider(), scope="s"))
    team = locked(docmem.MemorySlot("team", Provider(), scope="s"))
    monkeypatch.setenv("DOCMEM_ENVIRONMENT", "acme-staging")
    staging = locked(docmem.MemorySlot("user", Provider(), scope="s"))
    assert user is not None
    assert team is not None
    assert staging is not None
    keys = {user.scope.storage_key, team.scope.storage_key, staging.scope.storage_key}
    assert len(keys) == 3


# -- scope keys through the slot API ------------------------------------------------------------

DISTINCT_SCOPES: list[Any] = [
    "a:b:c",
    ("a:b", "c"),
    ("a", "b:c"),
    ("a", "b", "c"),
    "a",
    ("a",),
    ("a", ""),
    ("", "a"),
    "a\x00b",
    ("a", "b"),
]


def test_scalar_tuple_and_delimiter_cases_give_distinct_identities() -> None:
    keys = []
    for value in DISTINCT_SCOPES:
        for spec in (value, lambda context, value=value: value):
            lock = locked(docmem.MemorySlot("user", Provider(), scope=spec, namespace="n"))
            assert lock is not None
            keys.append((repr(value), lock.scope.scope_key, lock.scope.storage_key))
    by_value: dict[str, set[tuple[str, str]]] = {}
    for value, scope_key, storage_key in keys:
        by_value.setdefault(value, set()).add((scope_key, storage_key))
    assert all(len(found) == 1 for found in by_value.values())  # a value or its resolver agree
    distinct = {next(iter(found)) for found in by_value.values()}
    assert len(distinct) == len(DISTINCT_SCOPES)
    assert len({scope_key for scope_key, _ in distinct}) == len(DISTINCT_SCOPES)


def test_a_list_scope_is_the_same_identity_as_a_tuple() -> None:
    as_list = locked(docmem.MemorySlot("user", Provider(), scope=["a", "b"], namespace="n"))
    as_tuple = locked(docmem.MemorySlot("user", Provider(), scope=("a", "b"), namespace="n"))
    assert as_list is not None
    assert as_tuple is not None
    assert as_list.scope == as_tuple.scope


def test_namespaces_with_delimiters_are_distinct() -> None:
    first = locked(docmem.MemorySlot("user", Provider(), scope="b:c", namespace="a"))
    second = locked(docmem.MemorySlot("user", Provider(), scope="c", namespace="a:b"))
    assert first is not None
    assert second is not None
    assert first.scope.storage_key != second.scope.storage_key


# -- tools -----------------------------------------------------------------------------------------


def tools_context(slot: str = "user") -> ToolsContext:
    scope = docmem.lock_scope(namespace="n", scope="s")
    return ToolsContext(slot=slot, scope=scope, operation_id="op", messages=())


def test_provider_tools_are_qualified_with_the_description_prefix() -> None:
    memory = docmem.FileMemory(docmem.open_store("memory://"))
    slot = docmem.MemorySlot(
        "user", memory, scope="s", namespace="n", description="About the person you help."
    )
    tools = slot.qualified_tools(tools_context())
    assert sorted(tools) == ["user__remove_memory", "user__save_memory"]
    own = memory.tools(tools_context())
    for name, tool in tools.items():
        assert tool.name == name
        original = own[name.removeprefix("user__")]
        assert tool.description == f"About the person you help.\n\n{original.description}"
        assert tool.parameters == original.parameters


def test_without_a_description_tool_descriptions_are_unchanged() -> None:
    memory = docmem.FileMemory(docmem.open_store("memory://"))
    slot = docmem.MemorySlot("user", memory, scope="s", namespace="n")
    tools = slot.qualified_tools(tools_context())
    own = memory.tools(tools_context())
    assert tools["user__save_memory"].description == own["save_memory"].description


def test_tools_false_exposes_none() -> None:
    memory = docmem.FileMemory(docmem.open_store("memory://"))
    slot = docmem.MemorySlot("user", memory, scope="s", namespace="n", tools=False)
    assert slot.qualified_tools(tools_context()) == {}


def test_a_provider_without_tools_exposes_none() -> None:
    slot = docmem.MemorySlot("user", Provider(), scope="s", namespace="n")
    assert slot.qualified_tools(tools_context()) == {}


def test_a_principal_parses_from_its_command_line_form() -> None:
    assert docmem.Principal.parse("user:auth0:u_123") == docmem.Principal("user", "auth0", "u_123")
    assert docmem.Principal.parse("user:oidc:a:b").id == "a:b"
    for bad in ("person-42", "idp-x:person-42", ":idp-x:person-42", "kind-x::person-42"):
        with pytest.raises(docmem.InvalidArgument) as raised:
            docmem.Principal.parse(bad)
        assert "person-42" not in str(raised.value)
