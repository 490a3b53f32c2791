"""Where docmem's spans sit in a framework's trace, from a run in a process of its own.

OpenTelemetry's global tracer provider can be set once per process, and the
frameworks trace on it, so a test of the trace runs its framework in a child
process: :func:`docmem_spans` puts an in-memory SDK provider in place (the
global one, and docmem's) before the test's script runs, and reports every
``docmem.recall`` and ``docmem.save`` span with the names of its ancestors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_PRELUDE = """
import json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from docmem import telemetry

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # the framework's spans and docmem's, one provider
telemetry.configure(tracer_provider=provider)
"""

_REPORT = """
spans = exporter.get_finished_spans()
by_id = {span.context.span_id: span for span in spans}

def ancestors(span):
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names

mine = [span for span in spans if span.name in ("docmem.recall", "docmem.save")]
print(json.dumps([[span.name, *ancestors(span)] for span in mine]))
"""


def docmem_spans(script: str) -> list[list[str]]:
    """Run ``script`` under the SDK; each docmem span as ``[name, parent, ..., root]``.

    In the order the spans finished. ``script`` runs at the top level of a
    fresh interpreter, in the repository's root, after the provider is set.
    """
    done = subprocess.run(
        [sys.executable, "-B", "-c", f"{_PRELUDE}\n{script}\n{_REPORT}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found: list[list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found
