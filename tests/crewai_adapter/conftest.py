"""The CrewAI adapter's tests run only where CrewAI is installed (its own venv).

CrewAI pins versions the main test venv cannot hold, so there these files are
not collected at all: ``pytest tests`` there neither fails nor skips them.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("crewai") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    import os

    # Offline: no CrewAI telemetry or trace upload, in this process or the ones it starts.
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
