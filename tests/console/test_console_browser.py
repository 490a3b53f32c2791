"""The console's flows in a real headless Chromium against a real ``docmem console`` on file://.

One server and one browser for the module (each flow on a scope of its
own, each page in a fresh browser context); the flows themselves live in
console_flows.py, so docmem-s3's tests run the same ones on LocalStack.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import docmem

from .console_flows import FLOWS, ConsoleFlows, ConsoleRun, chromium_available

pytestmark = pytest.mark.process

#: Set by `make test` (which installs the browser with scripts/chromium): a missing browser
#: then fails the run instead of skipping the flows.
REQUIRED = os.environ.get("DOCMEM_REQUIRE_BROWSER") == "1"


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleFlows]:
    if not chromium_available():
        missing = "needs /usr/bin/chromium (scripts/chromium) and playwright"
        if REQUIRED:
            pytest.fail(missing)
        pytest.skip(missing)
    workdir = tmp_path_factory.mktemp("console")
    with docmem.open_store(f"file://{workdir}/store?create=true") as store:  # a store exists
        scope = docmem.lock_scope(namespace="acme:prod:user", scope=("user", "auth0", "", "u_0"))
        docmem.FileMemory(store).bind(scope, slot="user").save("The first note.")
    with ConsoleRun(f"file://{workdir}/store", workdir) as run:
        run.sign_in()
        yield ConsoleFlows(run)


@pytest.mark.parametrize("name", FLOWS)
def test_flow(flows: ConsoleFlows, name: str) -> None:
    getattr(flows, name)()
