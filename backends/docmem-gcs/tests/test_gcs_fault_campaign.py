"""Seeded fault campaigns: docmem-gcs through docmem.testing.faultproxy before fake-gcs-server.

The campaign engine and the promises it checks are
:mod:`docmem.testing.faultcampaign`'s; this file says how to reach the
emulator and which fault plans to run. The proxy injects 5xx answers with
GCS's JSON error body.

Which requests get faults: a multipart upload names its object in its body,
not its path, so the proxy cannot tell a document's upload from the
first-write probe's. The campaign's store is therefore verified (layout
listing and probe) through the proxy before faults are armed
(``CampaignServer.warm_up``); from then on every upload and every download of
a document under the campaign's prefix may get one. The generation faults
act on ``X-Goog-Generation``, which carries a download's version (an
upload's is in its JSON body, which the ``cut`` faults break instead).

Bounded: a few seeds by default; ``DOCMEM_LONG_CAMPAIGN=1`` runs many more
seeds and saves.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from gcs_servers import bucket, endpoint, store_url

import docmem
from docmem.testing import faultcampaign as fc
from docmem.testing.faultproxy import FaultPlan

pytestmark = pytest.mark.integration

SEEDS = tuple(range(1, 41)) if fc.LONG else (1, 2, 3)
TARGETED_SEEDS = tuple(range(1, 6)) if fc.LONG else (1,)
TARGETED_SAVES = 8 if fc.LONG else 4

#: A download (GET) and an upload (POST): every request of a document's data path.
DATA_PATH = frozenset({"GET", "POST"})
_REASONS = {500: "backendError", 503: "backendError", 403: "forbidden"}


def gcs_error(status: int) -> tuple[str, bytes]:
    """A GCS JSON API error answer's content type and body, as the proxy injects it."""
    reason = _REASONS.get(status, "backendError")
    error = {"code": status, "message": "injected by faultproxy"}
    error["errors"] = [{"domain": "global", "reason": reason, "message": "injected"}]  # type: ignore[assignment]
    return "application/json; charset=UTF-8", json.dumps({"error": error}).encode()


def documents(prefix: str) -> Callable[[str, str], str]:
    """The proxy's ``faultable``: downloads of the campaign's documents, and every upload."""
    download = f"/download/storage/v1/b/{bucket()}/o/{prefix}/"
    upload = f"/upload/storage/v1/b/{bucket()}/o"

    def classify(method: str, path: str) -> str:
        if path.startswith(download) and ".docmem-probe/" not in path:
            return "campaign"
        return "campaign" if method == "POST" and path == upload else "other"

    return classify


def _verify(store: docmem.Backend) -> None:
    store.verify()  # type: ignore[attr-defined]  # the layout listing and the probe, unfaulted


def emulator() -> fc.CampaignServer:
    """fake-gcs-server, verified through the proxy before its documents get faults."""
    return fc.CampaignServer(
        name="fake-gcs-server",
        upstream=endpoint(),
        faultable=documents,
        open_through=lambda proxy_url, prefix: docmem.open_store(
            store_url(prefix, through=proxy_url) + fc.CLIENT_TIMEOUTS
        ),
        open_direct=lambda prefix: docmem.open_store(store_url(prefix)),
        error_response=gcs_error,
        version_header="X-Goog-Generation",
        warm_up=_verify,
    )


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
def test_mixed_faults_keep_every_outcome_truthful(seed: int) -> None:
    plan = FaultPlan(seed, fc.MIXED, methods=DATA_PATH, stall=fc.STALL)
    fc.run_campaign(emulator(), plan, fc.WRITERS, fc.SAVES)


#: One fault on every answer of one kind: downloads whose generation is blanked, emptied or
#: missing (typed errors, never a version taken from nowhere), and answers cut midway.
TARGETED: dict[str, tuple[dict[str, float], frozenset[str]]] = {
    "blank-generation": ({"blank-etag": 1}, frozenset({"GET"})),
    "empty-generation": ({"empty-etag": 1}, frozenset({"GET"})),
    "no-generation": ({"no-etag": 1}, frozenset({"GET"})),
    "cut": ({"cut": 1, "cut-reset": 1}, DATA_PATH),
    "5xx-after-landing": ({"landed-500": 1, "landed-503": 1}, frozenset({"POST"})),
}


@pytest.mark.parametrize("seed", TARGETED_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("name", sorted(TARGETED))
def test_one_fault_everywhere_is_a_typed_error_never_a_lost_update(name: str, seed: int) -> None:
    weights, methods = TARGETED[name]
    fc.run_campaign(
        emulator(), FaultPlan(seed, weights, methods=methods), fc.WRITERS, TARGETED_SAVES
    )
