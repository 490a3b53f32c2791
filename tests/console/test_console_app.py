"""The console without a browser: sign-in, sessions, CSRF, Host and Origin, JWT operators, actions.

Starlette's TestClient calls the ASGI app in-process on a ``memory://``
store, so each security property is checked on its own, fast, with no
server and no browser (``make check`` runs these).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.testclient import TestClient

import docmem
from docmem.console import ConsoleSettings, console_app
from docmem.console.auth import LoginLinks, OperatorTokens, Sessions
from docmem.console.charts import Bar, bar_chart
from docmem.console.guard import CONTENT_SECURITY_POLICY
from docmem.console.overview import walk_store
from docmem.console.serving import accepted_hosts, is_loopback
from docmem.integrations.mcp_auth import JwtVerifier

ORIGIN = "http://testserver"
ISSUER = "https://issuer.example"
AUDIENCE = "docmem-console"


@pytest.fixture
def store() -> Iterator[docmem.Backend]:
    with docmem.open_store("memory://") as backend:
        yield backend


@pytest.fixture
def links() -> LoginLinks:
    return LoginLinks()


@pytest.fixture
def client(store: docmem.Backend, links: LoginLinks) -> TestClient:
    app = console_app(ConsoleSettings(store=store, hosts=["testserver"], links=links))
    return TestClient(app, base_url=ORIGIN, follow_redirects=False)


def _signed_in(client: TestClient, links: LoginLinks) -> str:
    """Redeem a fresh link; the session's CSRF token (read off the find page)."""
    answer = client.get(f"/login?token={links.issue()}")
    assert answer.status_code == 303
    page = client.get("/")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found
    return found.group(1)


def _seeded(store: docmem.Backend, *texts: str) -> docmem.BoundMemory:
    scope = docmem.lock_scope(namespace="acme:prod:user", scope=("user", "auth0", "", "u_1"))
    memory = docmem.FileMemory(store).bind(scope, slot="user")
    for text in texts:
        memory.save(text)
    return memory


# -- sign-in and sessions -------------------------------------------------------------------


def test_a_login_link_works_once(client: TestClient, links: LoginLinks) -> None:
    token = links.issue()
    first = client.get(f"/login?token={token}")
    assert first.status_code == 303
    assert first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    client.cookies.clear()
    again = client.get(f"/login?token={token}")
    assert again.status_code == 403
    assert "set-cookie" not in again.headers


def test_a_made_up_or_expired_link_is_refused(store: docmem.Backend) -> None:
    now = [0.0]
    links = LoginLinks(lifetime=60, clock=lambda: now[0])
    client = TestClient(
        console_app(ConsoleSettings(store=store, hosts=["testserver"], links=links)),
        base_url=ORIGIN,
        follow_redirects=False,
    )
    assert client.get("/login?token=made-up").status_code == 403
    token = links.issue()
    now[0] = 61.0
    assert client.get(f"/login?token={token}").status_code == 403


def test_every_page_needs_a_session(client: TestClient, store: docmem.Backend) -> None:
    key = _seeded(store, "Private.").read()
    assert key is not None
    for path in ("/", "/store", "/scope/memkey1_" + "A" * 43, "/scope/memkey1_x/history"):
        answer = client.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"] == "/signin"
        assert "Private." not in answer.text


def test_a_session_ends_at_sign_out(client: TestClient, links: LoginLinks) -> None:
    csrf = _signed_in(client, links)
    assert (
        client.post("/signout", data={"csrf": csrf}, headers={"origin": ORIGIN}).status_code == 303
    )
    assert client.get("/").status_code == 303


def test_sessions_expire() -> None:
    now = [1000.0]
    sessions = Sessions(lifetime=10, clock=lambda: now[0])
    session = sessions.start("op", until=1005.0)
    assert sessions.get(session.id) is session
    now[0] = 1005.0
    assert sessions.get(session.id) is None


def test_the_app_refuses_to_be_built_without_a_sign_in(store: docmem.Backend) -> None:
    with pytest.raises(ValueError, match="sign-in"):
        console_app(ConsoleSettings(store=store, hosts=["testserver"]))


# -- CSRF, Host, Origin, headers ------------------------------------------------------------


def test_a_post_needs_the_sessions_csrf_token(
    client: TestClient, links: LoginLinks, store: docmem.Backend
) -> None:
    memory = _seeded(store, "Keep.")
    csrf = _signed_in(client, links)
    key = memory._key
    form = {"index": "0", "revision": "1", "mutation_id": "m-1"}
    for token in (None, "forged", csrf[:-1]):
        data = form if token is None else {**form, "csrf": token}
        answer = client.post(f"/scope/{key}/remove", data=data, headers={"origin": ORIGIN})
        assert answer.status_code == 403
    assert memory.read().entries  # type: ignore[union-attr]
    answer = client.post(
        f"/scope/{key}/remove", data={**form, "csrf": csrf}, headers={"origin": ORIGIN}
    )
    assert answer.status_code == 303
    assert not memory.read().entries  # type: ignore[union-attr]


@pytest.mark.parametrize("origin", [None, "http://evil.example", "http://testserver:8080", "null"])
def test_a_post_from_another_origin_is_refused(
    client: TestClient, links: LoginLinks, store: docmem.Backend, origin: str | None
) -> None:
    memory = _seeded(store, "Keep.")
    csrf = _signed_in(client, links)
    headers = {} if origin is None else {"origin": origin}
    form = {"csrf": csrf, "index": "0", "revision": "1", "mutation_id": "m-1"}
    answer = client.post(f"/scope/{memory._key}/remove", data=form, headers=headers)
    assert answer.status_code == 403
    assert "Cross-site" in answer.text
    assert memory.read().entries  # type: ignore[union-attr]


@pytest.mark.parametrize("host", ["evil.example", "testserver.evil.example", "127.0.0.1:1"])
def test_a_wrong_host_is_refused(client: TestClient, links: LoginLinks, host: str) -> None:
    answer = client.get(f"/login?token={links.issue()}", headers={"host": host})
    assert answer.status_code == 400
    assert "set-cookie" not in answer.headers


def test_every_answer_carries_the_security_headers(client: TestClient, links: LoginLinks) -> None:
    _signed_in(client, links)
    answers = [
        client.get("/"),
        client.get("/static/console.css"),
        client.get("/", headers={"host": "evil.example"}),
        client.post("/find", data={}),
        client.get("/login?token=nope"),
    ]
    for answer in answers:
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"
        assert "cache-control" in answer.headers
    assert answers[0].headers["cache-control"] == "no-store"
    assert "<script" not in answers[0].text


def test_hosts_on_loopback_and_elsewhere() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("console.example.com")
    assert accepted_hosts("127.0.0.1", 8765) == ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert accepted_hosts("10.0.0.5", 80, ["console.example.com"]) == [
        "10.0.0.5:80",
        "console.example.com",
    ]


# -- JWT operators ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _token(key: rsa.RSAPrivateKey, **claims: object) -> str:
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice@example.com", "exp": time.time() + 300}
    body.update(claims)
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm="RS256")


@pytest.fixture
def jwt_client(store: docmem.Backend, signing_key: rsa.RSAPrivateKey) -> TestClient:
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=signing_key.public_key())
    settings = ConsoleSettings(
        store=store, hosts=["testserver"], operators=OperatorTokens(verifier, "docmem:operator")
    )
    return TestClient(console_app(settings), base_url=ORIGIN, follow_redirects=False)


@pytest.mark.parametrize(
    "claims",
    [
        {},
        {"docmem:operator": "true"},
        {"docmem:operator": 1},
        {"docmem:operator": False},
        {"docmem:operator": True, "aud": "another"},
        {"docmem:operator": True, "exp": time.time() - 10},
        {"docmem:operator": True, "iss": "https://other.example"},
    ],
)
def test_only_an_operator_token_signs_in(
    jwt_client: TestClient, signing_key: rsa.RSAPrivateKey, claims: dict[str, object]
) -> None:
    token = _token(signing_key, **claims)
    answer = jwt_client.post("/signin", data={"token": token}, headers={"origin": ORIGIN})
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_an_operator_token_signs_in_until_it_expires(
    jwt_client: TestClient, signing_key: rsa.RSAPrivateKey
) -> None:
    token = _token(signing_key, **{"docmem:operator": True})
    answer = jwt_client.post("/signin", data={"token": token}, headers={"origin": ORIGIN})
    assert answer.status_code == 303
    max_age = int(re.search(r"Max-Age=(\d+)", answer.headers["set-cookie"]).group(1))  # type: ignore[union-attr]
    assert 0 < max_age <= 300
    page = jwt_client.get("/")
    assert page.status_code == 200
    assert "alice@example.com" in page.text
    # no login links in JWT mode
    assert jwt_client.get("/login?token=anything").status_code == 403


def test_a_token_from_another_key_is_refused(jwt_client: TestClient) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = _token(other, **{"docmem:operator": True})
    answer = jwt_client.post("/signin", data={"token": token}, headers={"origin": ORIGIN})
    assert answer.status_code == 403


# -- actions, conflicts and the action log ----------------------------------------------------


def test_a_stale_remove_is_a_conflict_and_writes_nothing(
    client: TestClient, links: LoginLinks, store: docmem.Backend
) -> None:
    memory = _seeded(store, "First.")
    csrf = _signed_in(client, links)
    memory.save("Saved meanwhile.")
    form = {"csrf": csrf, "index": "0", "revision": "1", "mutation_id": "m-stale"}
    answer = client.post(f"/scope/{memory._key}/remove", data=form, headers={"origin": ORIGIN})
    assert answer.status_code == 409
    assert "Saved meanwhile." in answer.text
    assert memory.read().revision == 2  # type: ignore[union-attr]


def test_a_form_sent_twice_acts_once(
    client: TestClient, links: LoginLinks, store: docmem.Backend
) -> None:
    memory = _seeded(store, "First.", "Second.")
    csrf = _signed_in(client, links)
    form = {"csrf": csrf, "index": "0", "revision": "2", "mutation_id": "m-twice"}
    for _ in range(2):
        answer = client.post(f"/scope/{memory._key}/remove", data=form, headers={"origin": ORIGIN})
        assert answer.status_code == 303
    assert memory.read().revision == 3  # type: ignore[union-attr]


def test_a_stale_revert_is_a_conflict_with_the_new_plan(
    client: TestClient, links: LoginLinks, store: docmem.Backend
) -> None:
    memory = _seeded(store, "True.", "Poison.")
    csrf = _signed_in(client, links)
    memory.save("Meanwhile.")
    form = {"csrf": csrf, "to": "1", "expected_revision": "2", "mutation_id": "r-1"}
    answer = client.post(f"/scope/{memory._key}/revert", data=form, headers={"origin": ORIGIN})
    assert answer.status_code == 409
    assert "you saw revision 2; it is at revision 3" in answer.text
    assert 'name="expected_revision" value="3"' in answer.text
    assert memory.read().revision == 3  # type: ignore[union-attr]


def test_erase_gives_a_receipt_and_the_log_holds_no_content(
    client: TestClient, links: LoginLinks, store: docmem.Backend, caplog: pytest.LogCaptureFixture
) -> None:
    memory = _seeded(store, "Vegetarian since 2019.", "Lives at 5 Main St.")
    csrf = _signed_in(client, links)
    key = memory._key
    form = {"csrf": csrf, "revision": "2", "mutation_id": "e-1", "confirm": key[-8:]}
    with caplog.at_level(logging.DEBUG):
        client.post(
            "/find",
            data={
                "csrf": csrf,
                "namespace": "acme:prod:user",
                "kind": "user",
                "authenticator": "auth0",
                "id": "u_1",
            },
            headers={"origin": ORIGIN},
        )
        answer = client.post(f"/scope/{key}/erase", data=form, headers={"origin": ORIGIN})
    assert answer.status_code == 200
    assert "Entries erased" in answer.text
    assert "e-1" in answer.text
    assert not memory.read().entries  # type: ignore[union-attr]
    logged = "\n".join(
        f"{r.getMessage()} {getattr(r, 'docmem_console', '')}" for r in caplog.records
    )
    assert f"action=erase key={key} outcome=erased" in logged
    for secret in ("Vegetarian", "Main St", "u_1", "acme:prod"):
        assert secret not in logged


def test_find_resolves_a_principal_to_its_storage_key(
    client: TestClient, links: LoginLinks, store: docmem.Backend
) -> None:
    memory = _seeded(store, "x")
    csrf = _signed_in(client, links)
    form = {
        "csrf": csrf,
        "namespace": "acme:prod:user",
        "kind": "user",
        "authenticator": "auth0",
        "id": "u_1",
    }
    answer = client.post("/find", data=form, headers={"origin": ORIGIN})
    assert answer.headers["location"] == f"/scope/{memory._key}"
    blank = client.post("/find", data={"csrf": csrf, "namespace": "ns"}, headers={"origin": ORIGIN})
    assert blank.status_code == 400


# -- the overview -------------------------------------------------------------------------------


def test_the_overview_counts_sizes_and_fullness(store: docmem.Backend) -> None:
    _seeded(store, "a" * 100, "b" * 100)
    shape = walk_store(store, max_characters=400)
    assert shape.tally.documents == 1
    assert shape.tally.entries == 2
    assert sum(shape.sizes) == 1
    assert shape.sizes[0] == 1
    assert sum(shape.fullness) == 1
    assert shape.fullness[-1] == 0
    assert not shape.encrypted
    assert shape.fence is None


def test_a_chart_escapes_its_labels_and_uses_no_style_attribute() -> None:
    svg = str(bar_chart("T<", [Bar("<b>", 3), Bar("z", 0, warning=True)]))
    assert "<b>" not in svg
    assert "&lt;b&gt;" in svg
    assert "style=" not in svg
    assert svg.startswith("<svg")
    assert 'role="img"' in svg
