"""What an adapter's import needs: checked in a fresh interpreter, where nothing is loaded yet.

``import docmem`` must never import a framework, an adapter must name its
extra when its framework is missing, and a scripted model must import
without the test tools (pytest, hypothesis), so users can drive it from
their own tests with the framework's extra alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _python(code: str) -> str:
    # Not -I: in CrewAI's venv docmem is this checkout, found through PYTHONPATH.
    done = subprocess.run(
        [sys.executable, "-B", "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout


def import_errors_without(framework: str, modules: Sequence[str]) -> list[str]:
    """Each of ``modules``' ImportError messages with ``framework`` blocked.

    Fails first if importing docmem, its integrations or its testing package
    imported ``framework`` at all.
    """
    code = (
        "import sys, docmem, docmem.integrations, docmem.testing\n"
        f"assert {framework!r} not in sys.modules, 'imported'\n"
        f"sys.modules[{framework!r}] = None\n"
        f"for name in {list(modules)!r}:\n"
        "    try:\n"
        "        __import__(name)\n"
        "    except ImportError as error:\n"
        "        print(error)\n"
    )
    return _python(code).splitlines()


def loaded_test_tools(module: str) -> list[str]:
    """The test tools (pytest, hypothesis) that importing ``module`` loaded."""
    tools = "{'pytest', 'hypothesis'}"
    code = f"import json, sys, {module}\nprint(json.dumps(sorted({tools} & set(sys.modules))))\n"
    found: list[str] = json.loads(_python(code))
    return found
