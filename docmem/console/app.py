"""The console's ASGI app: its settings, its routes, and the guard around them.

:func:`console_app` builds a Starlette app from :class:`ConsoleSettings`;
``docmem console`` serves it with uvicorn, and a test can serve it the same
way or call it in-process. Routes (every one but sign-in needs a session):

=======  ===============================  ===========================================
GET      ``/``                            find a scope
POST     ``/find``                        resolve the form to a storage key, redirect
GET      ``/scope/{key}``                 the recall as the model sees it, provenance
POST     ``/scope/{key}/remove``          remove one entry (conditional on the revision)
GET      ``/scope/{key}/history``         revisions, a diff of any two, the journal
GET      ``/scope/{key}/revert``          the dry run of a revert
POST     ``/scope/{key}/revert``          the revert, conditional on the dry run's revision
GET      ``/scope/{key}/erase``           the typed confirmation
POST     ``/scope/{key}/erase``           the erase, then its receipt
POST     ``/scope/{key}/export``          the scope as a docmem-export/1 file
GET      ``/store``                       the store at a glance
POST     ``/store/probe``                 run the store's probe, show its verdict
GET      ``/login?token=...``             redeem a one-time login link
GET/POST ``/signin``                      sign in with an operator JWT
POST     ``/signout``                     end the session
GET      ``/static/...``                  the style sheet
=======  ===============================  ===========================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from docmem.backend import Backend

from .auth import LoginLinks, OperatorTokens, Sessions
from .guard import Guard, origins_of
from .pages import Pages

__all__ = ["ConsoleSettings", "console_app"]


@dataclass
class ConsoleSettings:
    """What one console serves and whom it lets in.

    ``hosts`` are the exact ``Host`` values it answers (``127.0.0.1:8765``);
    ``links`` issues the one-time login links (loopback), ``operators``
    verifies JWT sign-in (a shared deployment); at least one must be given.
    ``max_characters`` is the limit the application binds its memory with
    (what the fullness chart and removes go by); ``secure_cookie`` marks the
    session cookie Secure, for a console behind HTTPS.
    """

    store: Backend
    hosts: Iterable[str]
    links: LoginLinks | None = None
    operators: OperatorTokens | None = None
    sessions: Sessions = field(default_factory=Sessions)
    max_characters: int = 4000
    secure_cookie: bool = False
    workers: int = 8


def console_app(settings: ConsoleSettings) -> Starlette:
    """The console as an ASGI app; refuses to build one that would let anyone in."""
    if settings.links is None and settings.operators is None:
        raise ValueError("the console needs a sign-in: login links, operator JWTs or both")
    hosts = list(settings.hosts)
    schemes = ("https",) if settings.secure_cookie else ("http",)
    pages = Pages(settings)
    routes = [
        Route("/", pages.home, methods=["GET"]),
        Route("/find", pages.find, methods=["POST"]),
        Route("/scope/{key}", pages.scope, methods=["GET"]),
        Route("/scope/{key}/remove", pages.remove, methods=["POST"]),
        Route("/scope/{key}/history", pages.history, methods=["GET"]),
        Route("/scope/{key}/revert", pages.revert_plan, methods=["GET"]),
        Route("/scope/{key}/revert", pages.revert, methods=["POST"]),
        Route("/scope/{key}/erase", pages.erase_form, methods=["GET"]),
        Route("/scope/{key}/erase", pages.erase, methods=["POST"]),
        Route("/scope/{key}/export", pages.export, methods=["POST"]),
        Route("/store", pages.store_overview, methods=["GET"]),
        Route("/store/probe", pages.probe, methods=["POST"]),
        Route("/login", pages.login, methods=["GET"]),
        Route("/signin", pages.signin_form, methods=["GET"]),
        Route("/signin", pages.signin, methods=["POST"]),
        Route("/signout", pages.signout, methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("docmem.console", "static")]), name="static"),
    ]
    guard = Middleware(Guard, hosts=hosts, origins=origins_of(hosts, schemes))
    return Starlette(routes=routes, middleware=[guard])
