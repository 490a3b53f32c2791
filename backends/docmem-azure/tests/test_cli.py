"""``python -m docmem_azure probe`` and the ``docmem`` console script on Azurite, in subprocesses.

Each runs with an explicit environment: PATH, HOME and Azurite's connection
string, nothing else of the developer's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from azure_servers import ACCOUNT, connection_string, free_port, store_url

pytestmark = pytest.mark.integration

DOCMEM = Path(sys.executable).parent / "docmem"


def run(*command: str, store: str = "") -> subprocess.CompletedProcess[str]:
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AZURE_STORAGE_CONNECTION_STRING": connection_string(),
        "DOCMEM_STORE": store,
    }
    return subprocess.run(
        list(command), env=environment, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_module_probe_runs_every_check_and_the_race() -> None:
    done = run(sys.executable, "-m", "docmem_azure", "probe", store_url(), "--writers", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 9  # seven deterministic checks, the race, the account
    assert all(line.startswith("ok: ") for line in lines[:8]), done.stdout
    assert "4 concurrent creates have exactly one winner" in lines[7]
    assert lines[8].startswith("account: http://127.0.0.1:")
    assert lines[8].endswith("(credential from connection string)")
    assert "AccountKey" not in done.stdout + done.stderr


def test_the_module_probe_on_a_dead_endpoint_is_an_error_line() -> None:
    dead = f"http://127.0.0.1:{free_port()}/{ACCOUNT}"
    url = f"{store_url()}?account_url={dead}&connect_timeout=0.5&max_attempts=1"
    environment_string = connection_string().replace(
        connection_string().split("BlobEndpoint=")[1].split(";")[0], dead
    )
    done = subprocess.run(
        [sys.executable, "-m", "docmem_azure", "probe", url],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "AZURE_STORAGE_CONNECTION_STRING": environment_string,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith("ERROR (store_unavailable): the azure layout could not reach")


def test_docmem_save_show_and_probe_on_azurite() -> None:
    store = store_url()
    alice = ("--namespace", "acme:prod:user", "--scope", "user", "--scope", "u_1")
    saved = run(str(DOCMEM), "save", *alice, "Prefers metric units.", store=store)
    assert saved.returncode == 0, saved.stderr
    shown = run(str(DOCMEM), "show", *alice, store=store)
    assert shown.returncode == 0, shown.stderr
    assert "Prefers metric units." in shown.stdout
    probed = run(str(DOCMEM), "probe", "--writers", "2", store=store)
    assert probed.returncode == 0, probed.stdout + probed.stderr
    assert "docmem-azure" in probed.stdout
