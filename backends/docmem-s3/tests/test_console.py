"""The operator console's browser flows on LocalStack: the same ones the core runs on file://.

The flows (``tests/console/console_flows.py`` in the core's tests) drive a
real ``docmem console`` process in Debian's headless Chromium; here its
store is an ``s3://`` prefix on a versioned LocalStack bucket, since history,
revert and erase need kept versions. The core's tests run before the servers
start, so this run lives with the plug-in's. The flows are loaded from their
file: they are test code, not part of any installed package.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from s3_servers import endpoint_of, store_url, versioned_bucket

import docmem

pytestmark = [pytest.mark.integration, pytest.mark.process]

_FLOWS = Path(__file__).resolve().parents[3] / "tests" / "console" / "console_flows.py"


def _flows() -> ModuleType:
    spec = importlib.util.spec_from_file_location("console_flows", _FLOWS)
    assert spec is not None, _FLOWS
    assert spec.loader is not None, _FLOWS
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def test_every_console_flow_on_localstack(tmp_path: Path) -> None:
    flows = _flows()
    if not flows.chromium_available():
        missing = "needs /usr/bin/chromium (scripts/chromium) and playwright"
        if os.environ.get("DOCMEM_REQUIRE_BROWSER") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    endpoint = endpoint_of("localstack")
    url = store_url(endpoint, f"console-{uuid.uuid4().hex[:12]}", name=versioned_bucket(endpoint))
    with docmem.open_store(url) as store:  # the versioned bucket keeps history
        assert store.history("memkey1_" + "A" * 43) == []
    flows.run_every_flow(url, tmp_path)
