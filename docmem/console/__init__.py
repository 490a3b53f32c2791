"""The operator console: ``docmem console``, a small web app to see and fix one scope's memory.

A support engineer finds a scope by principal and namespace (or by a storage
key from a log), reads its memory exactly as the model sees it with each
entry's provenance and history, and removes an entry, reverts to a revision,
erases the scope or exports it; the store's overview draws ``docmem stats``
as pictures. Pages are rendered on the server from templates and a style
sheet shipped in this package: no JavaScript, no CDN (docs/console.md).

Needs the ``console`` extra (Starlette, uvicorn, Jinja2, python-multipart);
JWT sign-in also needs the ``mcp`` extra, whose verifier it reuses.
"""

from __future__ import annotations

from .app import ConsoleSettings, console_app

__all__ = ["ConsoleSettings", "console_app"]
