"""Seeded fault campaigns: docmem-azure through docmem.testing.faultproxy, in front of Azurite.

The campaign engine and the promises it checks are
:mod:`docmem.testing.faultcampaign`'s; this file says how to reach Azurite
(through the proxy, with the account key as a credential) and which fault
plans to run. The proxy answers Azure's XML errors (5xx) and blanks or
removes ETags. Only the campaign's document blobs get faults
(``FaultProxy.for_prefix``); the probe's ``.docmem-probe/`` blobs and the
layout listing pass. A few seeds by default; ``DOCMEM_LONG_CAMPAIGN=1`` runs
many more (nightly).
"""

from __future__ import annotations

import pytest
from azure_servers import ACCOUNT, container, store_url, upstream, via

import docmem
from docmem.testing import faultcampaign as fc
from docmem.testing.faultproxy import FaultPlan, FaultProxy

pytestmark = pytest.mark.integration

SEEDS = tuple(range(1, 41)) if fc.LONG else (1, 2, 3, 4)
ETAG_SEEDS = tuple(range(1, 6)) if fc.LONG else (1,)
TARGETED_SAVES = 8 if fc.LONG else 3

_AZURE_CODES = {403: "AuthenticationFailed", 500: "InternalError", 503: "ServerBusy"}


def azure_error(status: int) -> tuple[str, bytes]:
    """An error answer as the blob service sends one: its XML body."""
    code = _AZURE_CODES.get(status, "InternalError")
    body = (
        '<?xml version="1.0" encoding="utf-8"?>'
        f"<Error><Code>{code}</Code><Message>injected by faultproxy</Message></Error>"
    ).encode()
    return "application/xml", body


def _through(proxy_url: str, prefix: str) -> docmem.Backend:
    url, options = via(proxy_url, prefix)
    return docmem.open_store(url + fc.CLIENT_TIMEOUTS, **options)


def azurite() -> fc.CampaignServer:
    """Azurite, its blobs under a campaign's prefix faultable."""
    return fc.CampaignServer(
        name="azurite",
        upstream=upstream(),
        faultable=lambda prefix: FaultProxy.for_prefix(f"{ACCOUNT}/{container()}", prefix),
        open_through=_through,
        open_direct=lambda prefix: docmem.open_store(store_url(prefix)),
        error_response=azure_error,
    )


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
def test_mixed_faults_keep_every_outcome_truthful(seed: int) -> None:
    fc.run_campaign(azurite(), FaultPlan(seed, fc.MIXED, stall=fc.STALL), fc.WRITERS, fc.SAVES)


# Every answer of one method falsified: GET answers test the read path, PUT answers
# the write whose answer is unusable (unknown, then settled through the journal).
ETAG_PLANS = {
    "empty-etag": ({"empty-etag": 1}, {"GET", "PUT"}),
    "no-etag-GET": ({"no-etag": 1}, {"GET"}),
    "no-etag-PUT": ({"no-etag": 1}, {"PUT"}),
    "blank-etag": ({"blank-etag": 1}, {"GET", "PUT"}),
}


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("name", sorted(ETAG_PLANS))
def test_a_bad_etag_is_a_typed_error_never_a_lost_update(name: str, seed: int) -> None:
    weights, methods = ETAG_PLANS[name]
    plan = FaultPlan(seed, weights, methods=frozenset(methods))
    fc.run_campaign(azurite(), plan, fc.WRITERS, TARGETED_SAVES)


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
def test_answers_cut_midway_and_dropped_writes_are_typed_errors(seed: int) -> None:
    """Every answer cut (closed or reset after half of it), or a write forwarded then dropped."""
    plan = FaultPlan(seed, {"cut": 1, "cut-reset": 1, "drop": 1})
    fc.run_campaign(azurite(), plan, fc.WRITERS, TARGETED_SAVES)
