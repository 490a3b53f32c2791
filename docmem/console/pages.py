"""The console's pages: each handler checks the session (a POST: its CSRF token), then renders.

Store work runs in a worker thread (the store's calls block). Every write
is one of :class:`~docmem.provider.memory.BoundMemory`'s mutations under a
mutation id the form carried, so a form sent twice has no second effect,
and each is conditional on the revision the operator was shown: when the
memory changed in between, the page answers 409 with the memory as it is
now and nothing written (each through its ``expected_revision``).
Every action goes to :func:`~docmem.console.actionlog.record_action`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from docmem.cli.address import is_storage_key
from docmem.errors import DocmemError, RevertRefused, StaleRevision
from docmem.provider.journal import fresh_mutation_id
from docmem.provider.memory import BoundMemory, FileMemory
from docmem.provider.tools import check_slot_name

from . import charts
from .actionlog import record_action
from .auth import LINK_OPERATOR, Session
from .exporting import export_scope
from .overview import probe_verdict, walk_store
from .scopes import bind, diff_rows, entry_rows, find_scope, recall_of, timeline

if TYPE_CHECKING:
    from .app import ConsoleSettings

__all__ = ["COOKIE", "Pages"]

#: The session cookie's name.
COOKIE = "docmem_console"
#: How many characters of the storage key the erase form asks the operator to type.
ERASE_CONFIRMATION = 8

_T = TypeVar("_T")


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("docmem.console", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _mutation_id() -> str:
    return f"console-{fresh_mutation_id().removeprefix('docmem-')}"


def _int(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


class Pages:
    """The request handlers of one console (routes in :mod:`docmem.console.app`)."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.store = settings.store
        # One provider for every request, as in an application: concurrent writes to one
        # scope share its group commit, and the limit is the application's.
        self.memory = FileMemory(settings.store, max_characters=settings.max_characters)
        self._templates = _environment()

    # -- rendering and sessions ----------------------------------------------------------

    def _page(
        self,
        name: str,
        session: Session | None,
        status: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        template = self._templates.get_template(name)
        html = template.render(session=session, store_url=self.store.url, **context)
        return HTMLResponse(html, status_code=status)

    def _session(self, request: Request) -> Session | None:
        return self.settings.sessions.get(request.cookies.get(COOKIE))

    def _signin_redirect(self) -> Response:
        return RedirectResponse("/signin", status_code=303)

    async def _form(self, request: Request) -> tuple[Session | None, Mapping[str, str]]:
        """The session and the form, if the form's CSRF token is that session's."""
        session = self._session(request)
        form = await request.form()
        fields = {name: value for name, value in form.items() if isinstance(value, str)}
        if session is None or not session.csrf_matches(fields.get("csrf")):
            return None, fields
        return session, fields

    def _refused(self) -> Response:
        return self._page(
            "message.html",
            None,
            status=403,
            title="Not signed in",
            text="This form's session has ended or was not yours. Sign in again and retry.",
        )

    def _slot(self, request: Request) -> str:
        try:
            return check_slot_name(request.query_params.get("slot", "user"))
        except DocmemError:
            return "user"

    def _memory(self, key: str, slot: str = "user") -> BoundMemory:
        return bind(self.memory, key, slot)

    async def _run(self, work: Callable[[], _T]) -> _T:
        return await run_in_threadpool(work)

    def _failed(self, session: Session | None, error: DocmemError, status: int = 400) -> Response:
        # docmem's messages never hold memory text, queries or raw scope values
        return self._page(
            "message.html", session, status=status, title=error.code, text=error.message
        )

    # -- finding a scope -------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        """The find form."""
        session = self._session(request)
        if session is None:
            return self._signin_redirect()
        return self._page("find.html", session, problem=None)

    async def find(self, request: Request) -> Response:
        """Resolve the find form to a storage key and go to the scope's page."""
        session, form = await self._form(request)
        if session is None:
            return self._refused()
        try:
            address = find_scope(form)
        except DocmemError as error:
            return self._page("find.html", session, status=400, problem=error.message)
        return RedirectResponse(f"/scope/{address.key}", status_code=303)

    # -- the scope -------------------------------------------------------------------------

    async def scope(self, request: Request) -> Response:
        """The recall as the model sees it, each entry with its provenance."""
        session = self._session(request)
        if session is None:
            return self._signin_redirect()
        key = request.path_params["key"]
        if not is_storage_key(key):
            return self._not_a_key(session)
        slot = self._slot(request)
        try:
            document = await self._run(lambda: self._memory(key, slot).read())
        except DocmemError as error:
            return self._failed(session, error, status=502)
        notice = _notice(request.query_params)
        return self._scope_page(session, key, slot, document, notice=notice)

    def _scope_page(
        self,
        session: Session,
        key: str,
        slot: str,
        document: Any,
        *,
        notice: str | None = None,
        conflict: str | None = None,
        status: int = 200,
    ) -> HTMLResponse:
        return self._page(
            "scope.html",
            session,
            status=status,
            key=key,
            slot=slot,
            document=document,
            recall=None if document is None else recall_of(document, slot),
            entries=[] if document is None else entry_rows(document),
            mutation_id=_mutation_id(),
            notice=notice,
            conflict=conflict,
        )

    def _not_a_key(self, session: Session) -> Response:
        return self._page(
            "message.html",
            session,
            status=404,
            title="Not a storage key",
            text="A storage key is memkey1_ followed by 43 characters; find the scope again.",
        )

    async def remove(self, request: Request) -> Response:
        """Remove one entry, if the memory is still at the revision the page showed."""
        session, form = await self._form(request)
        if session is None:
            return self._refused()
        key = request.path_params["key"]
        index, seen = _int(form.get("index")), _int(form.get("revision"))
        mutation_id = form.get("mutation_id", "")
        if not is_storage_key(key) or index is None or seen is None or not mutation_id:
            return self._page("message.html", session, status=400, title="Bad form", text="")
        memory = self._memory(key)

        def work() -> tuple[str, Any]:
            done = memory.inspect(mutation_id)
            if done is not None:  # the same form again: answered from the journal
                return "replayed", done.revision
            try:
                result = memory.remove(index, mutation_id=mutation_id, expected_revision=seen)
            except StaleRevision:
                return "conflict", memory.read()
            return result.status, result.revision

        try:
            outcome, value = await self._run(work)
        except DocmemError as error:
            record_action(session.operator, "remove", error.code, key=key, mutation_id=mutation_id)
            return self._failed(session, error)
        if outcome == "conflict":
            record_action(session.operator, "remove", "conflict", key=key, mutation_id=mutation_id)
            return self._scope_page(
                session, key, "user", value, status=409, conflict=_moved(seen, value)
            )
        record_action(
            session.operator, "remove", outcome, key=key, revision=value, mutation_id=mutation_id
        )
        return RedirectResponse(
            f"/scope/{key}?done=remove&outcome={outcome}&index={index}&revision={value}",
            status_code=303,
        )

    # -- history ---------------------------------------------------------------------------

    async def history(self, request: Request) -> Response:
        """The kept revisions, a diff between two of them, and the journal."""
        session = self._session(request)
        if session is None:
            return self._signin_redirect()
        key = request.path_params["key"]
        if not is_storage_key(key):
            return self._not_a_key(session)
        memory = self._memory(key)
        try:
            kept, document = await self._run(lambda: (timeline(memory), memory.read()))
        except DocmemError as error:
            return self._failed(session, error, status=502)
        readable = kept.readable()
        older = _int(request.query_params.get("from", ""))
        newer = _int(request.query_params.get("to", ""))
        if newer is None and readable:
            newer = readable[-1]
        if older is None and len(readable) > 1:
            older = readable[-2]
        diff = None
        if older in readable and newer in readable:
            diff = diff_rows(kept.document(older), kept.document(newer))
        return self._page(
            "history.html",
            session,
            key=key,
            timeline=kept,
            readable=readable,
            older=older,
            newer=newer,
            diff=diff,
            journal=[] if document is None else list(reversed(document.journal)),
            document=document,
            moment=_moment,
        )

    # -- revert ----------------------------------------------------------------------------

    async def revert_plan(self, request: Request) -> Response:
        """The dry run: what a revert to ``?to=N`` would take out and bring back."""
        session = self._session(request)
        if session is None:
            return self._signin_redirect()
        key = request.path_params["key"]
        to = _int(request.query_params.get("to", ""))
        if not is_storage_key(key):
            return self._not_a_key(session)
        if to is None or to < 1:
            return RedirectResponse(f"/scope/{key}/history", status_code=303)
        return await self._plan_page(session, key, to)

    async def _plan_page(
        self, session: Session, key: str, to: int, *, conflict: str | None = None
    ) -> Response:
        memory = self._memory(key)
        try:
            plan, current = await self._run(lambda: (memory.plan_revert(to), memory.read()))
        except DocmemError as error:
            return self._failed(session, error, status=409 if conflict else 400)
        rows = [("-", i, t) for i, t in plan.changes.removed.items()]
        rows += [("+", i, t) for i, t in plan.changes.added.items()]
        return self._page(
            "revert.html",
            session,
            status=409 if conflict else 200,
            key=key,
            plan=plan,
            rows=sorted(rows, key=lambda row: (row[1], row[0])),
            entries=[] if current is None else entry_rows(current),
            mutation_id=_mutation_id(),
            conflict=conflict,
        )

    async def revert(self, request: Request) -> Response:
        """Revert, conditional on the revision the dry run was computed on."""
        session, form = await self._form(request)
        if session is None:
            return self._refused()
        key = request.path_params["key"]
        to, expected = _int(form.get("to")), _int(form.get("expected_revision"))
        mutation_id = form.get("mutation_id", "")
        if not is_storage_key(key) or to is None or expected is None or not mutation_id:
            return self._page("message.html", session, status=400, title="Bad form", text="")
        memory = self._memory(key)

        def work() -> Any:
            return memory.revert(to, mutation_id=mutation_id, expected_revision=expected)

        try:
            result = await self._run(work)
        except RevertRefused as refusal:
            current = await self._run(memory.read)
            if current is not None and current.revision != expected:
                record_action(
                    session.operator, "revert", "conflict", key=key, mutation_id=mutation_id
                )
                return await self._plan_page(session, key, to, conflict=_moved(expected, current))
            record_action(session.operator, "revert", refusal.code, key=key)
            return self._failed(session, refusal, status=409)
        except DocmemError as error:
            record_action(session.operator, "revert", error.code, key=key, mutation_id=mutation_id)
            return self._failed(session, error)
        record_action(
            session.operator,
            "revert",
            result.status,
            key=key,
            revision=result.revision,
            mutation_id=mutation_id,
        )
        return RedirectResponse(
            f"/scope/{key}?done=revert&outcome={result.status}&to={to}&revision={result.revision}",
            status_code=303,
        )

    # -- erase -----------------------------------------------------------------------------

    async def erase_form(self, request: Request) -> Response:
        """The typed confirmation: the last characters of the storage key."""
        session = self._session(request)
        if session is None:
            return self._signin_redirect()
        key = request.path_params["key"]
        if not is_storage_key(key):
            return self._not_a_key(session)
        try:
            document = await self._run(self._memory(key).read)
        except DocmemError as error:
            return self._failed(session, error, status=502)
        return self._erase_page(session, key, document)

    def _erase_page(
        self,
        session: Session,
        key: str,
        document: Any,
        *,
        status: int = 200,
        problem: str | None = None,
        conflict: str | None = None,
    ) -> HTMLResponse:
        return self._page(
            "erase.html",
            session,
            status=status,
            key=key,
            document=document,
            entries=[] if document is None else entry_rows(document),
            confirmation=key[-ERASE_CONFIRMATION:],
            mutation_id=_mutation_id(),
            problem=problem,
            conflict=conflict,
        )

    async def erase(self, request: Request) -> Response:
        """Erase the scope, if confirmed and unchanged since the form; then the receipt."""
        session, form = await self._form(request)
        if session is None:
            return self._refused()
        key = request.path_params["key"]
        seen = _int(form.get("revision"))
        mutation_id = form.get("mutation_id", "")
        if not is_storage_key(key) or seen is None or not mutation_id:
            return self._page("message.html", session, status=400, title="Bad form", text="")
        memory = self._memory(key)
        if form.get("confirm", "").strip() != key[-ERASE_CONFIRMATION:]:
            document = await self._run(memory.read)
            problem = "The characters typed are not the end of this storage key: nothing erased."
            return self._erase_page(session, key, document, status=400, problem=problem)

        def work() -> tuple[str, Any, int, int]:
            done = memory.inspect(mutation_id)
            if done is not None:
                return "replayed", done.revision, 0, 0
            current = memory.read()
            if current is None or current.revision != seen:
                return "conflict", current, 0, 0
            kept = len(timeline(memory).revisions)
            try:  # conditional: a save landing since the read above is never erased unseen
                result = memory.erase(mutation_id=mutation_id, expected_revision=seen)
            except StaleRevision:
                return "conflict", memory.read(), 0, 0
            return result.status, result.revision, len(current.entries), kept

        try:
            outcome, value, entries, versions = await self._run(work)
        except DocmemError as error:
            record_action(session.operator, "erase", error.code, key=key, mutation_id=mutation_id)
            return self._failed(session, error)
        if outcome == "conflict":
            record_action(session.operator, "erase", "conflict", key=key, mutation_id=mutation_id)
            return self._erase_page(session, key, value, status=409, conflict=_moved(seen, value))
        record_action(
            session.operator, "erase", outcome, key=key, revision=value, mutation_id=mutation_id
        )
        return self._page(
            "receipt.html",
            session,
            key=key,
            outcome=outcome,
            revision=value,
            entries=entries,
            versions=versions,
            mutation_id=mutation_id,
            at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        )

    # -- export ----------------------------------------------------------------------------

    async def export(self, request: Request) -> Response:
        """The scope's document as a docmem-export/1 file, downloaded."""
        session, _form = await self._form(request)
        if session is None:
            return self._refused()
        key = request.path_params["key"]
        if not is_storage_key(key):
            return self._not_a_key(session)
        try:
            data = await self._run(lambda: export_scope(self.store, key))
        except DocmemError as error:
            record_action(session.operator, "export", error.code, key=key)
            return self._failed(session, error, status=502)
        record_action(session.operator, "export", "absent" if data is None else "exported", key=key)
        if data is None:
            return self._page(
                "message.html",
                session,
                status=404,
                title="Nothing stored",
                text="No memory is stored under this scope: there is nothing to export.",
            )
        return Response(
            data,
            media_type="application/jsonl",
            headers={"content-disposition": f'attachment; filename="{key}.docmem-export"'},
        )

    # -- the store -------------------------------------------------------------------------

    async def store_overview(self, request: Request) -> Response:
        """``docmem stats`` as pictures, with encryption and fence state."""
        session = self._session(request)
        if session is None:
            return self._signin_redirect()
        settings = self.settings
        try:
            shape = await self._run(
                lambda: walk_store(
                    self.store, max_characters=settings.max_characters, workers=settings.workers
                )
            )
        except DocmemError as error:
            return self._failed(session, error, status=502)
        return self._page(
            "store.html",
            session,
            shape=shape,
            scopes=charts.bar_chart("Scopes", shape.scope_bars()),
            sizes=charts.bar_chart(
                "Document sizes", shape.size_bars(), caption="in tenths of the 64 KiB cap"
            ),
            fullness=charts.bar_chart(
                "Fullness",
                shape.fullness_bars(),
                caption=f"recall length against max_characters={settings.max_characters}",
            ),
        )

    async def probe(self, request: Request) -> Response:
        """Run the store's probe (it writes and deletes a probe key) and show its verdict."""
        session, _form = await self._form(request)
        if session is None:
            return self._refused()
        try:
            verdict = await self._run(lambda: probe_verdict(self.store))
        except DocmemError as error:
            record_action(session.operator, "probe", error.code)
            return self._page("probe.html", session, status=200, verdict=None, error=error)
        record_action(session.operator, "probe", "passed" if verdict.passed else "failed")
        return self._page("probe.html", session, verdict=verdict, error=None)

    # -- signing in ------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        """Redeem a one-time login link: a session cookie, then the find page."""
        links = self.settings.links
        token = request.query_params.get("token", "")
        if links is None or not links.redeem(token):
            record_action("-", "login", "refused")
            return self._page(
                "message.html",
                None,
                status=403,
                title="This login link does not work",
                text="It was used already, has expired, or is mistyped. Restart docmem console "
                "for a new link.",
            )
        session = self.settings.sessions.start(LINK_OPERATOR)
        record_action(session.operator, "login", "signed_in")
        return self._signed_in(session)

    def _signed_in(self, session: Session) -> Response:
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE,
            session.id,
            max_age=max(1, int(session.expires - datetime.datetime.now().timestamp())),
            path="/",
            secure=self.settings.secure_cookie,
            httponly=True,
            samesite="strict",
        )
        return response

    async def signin_form(self, request: Request) -> Response:
        """Where an operator without a session lands: the JWT form, or how to get a link."""
        return self._page(
            "signin.html", None, jwt=self.settings.operators is not None, problem=None
        )

    async def signin(self, request: Request) -> Response:
        """Sign in with an operator JWT pasted into the form."""
        operators = self.settings.operators
        form = await request.form()
        token = form.get("token")
        operator = None
        if operators is not None and isinstance(token, str):
            operator = await operators.operator(token.strip())
        if operator is None:
            record_action("-", "signin", "refused")
            return self._page(
                "signin.html",
                None,
                status=403,
                jwt=operators is not None,
                problem="That token does not sign an operator in (invalid, expired, or without "
                "the operator claim).",
            )
        session = self.settings.sessions.start(operator.name, until=operator.expires)
        record_action(session.operator, "signin", "signed_in")
        return self._signed_in(session)

    async def signout(self, request: Request) -> Response:
        """End the session and forget its cookie."""
        session, _form = await self._form(request)
        if session is not None:
            self.settings.sessions.end(session.id)
            record_action(session.operator, "signout", "signed_out")
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response


def _moved(seen: int, current: Any) -> str:
    now = "no memory is stored now" if current is None else f"it is at revision {current.revision}"
    return (
        f"The memory changed since you looked (you saw revision {seen}; {now}). Nothing was "
        "written. This is the memory as it is now: check it, then act again."
    )


_DONE = {
    "remove": "Entry {index} removal: {outcome}, now at revision {revision}.",
    "revert": "Revert to revision {to}: {outcome}, now at revision {revision}.",
}


def _notice(query: Mapping[str, str]) -> str | None:
    """The line a redirect after an action carries (ids and counts only, from the query)."""
    template = _DONE.get(query.get("done", ""))
    if template is None:
        return None
    values = {name: query.get(name, "") for name in ("index", "outcome", "revision", "to")}
    if not all(value.replace("_", "").isalnum() for value in values.values() if value):
        return None
    return template.format(**values)


def _moment(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
