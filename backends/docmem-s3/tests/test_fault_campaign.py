"""Seeded fault campaigns: docmem-s3 through faultproxy, in front of LocalStack and SeaweedFS.

The campaign engine and the promises it checks are
:mod:`docmem.testing.faultcampaign`'s; this file says how to reach each
server and which fault plans to run. Only the campaign's document objects
get faults; the first-write probe's ``<prefix>/.docmem-probe/`` objects pass
through (``FaultProxy.for_prefix``), so a campaign measures the data path and
never has to tell a refused probe from a fault. The ETag campaigns put one
fault (``ETag: ""``, an empty ``ETag:`` or none at all) on every GET or every
PUT answer: typed errors or correct results, never a lost update.
(LocalStack and SeaweedFS refuse ``If-Match: ""`` with a 412, but apply a PUT
with an empty ``If-Match`` unconditionally.)

Bounded: a few seeds by default; ``DOCMEM_LONG_CAMPAIGN=1`` runs many more
seeds and saves (nightly).
"""

from __future__ import annotations

import pytest
from s3_servers import SERVERS, bucket, endpoint_of, store_url

import docmem
from docmem.testing import faultcampaign as fc
from docmem.testing.faultproxy import FaultPlan, FaultProxy

pytestmark = pytest.mark.integration

SEEDS = tuple(range(1, 41)) if fc.LONG else (1, 2, 3, 4)
ETAG_SEEDS = tuple(range(1, 6)) if fc.LONG else (1,)
TARGETED_SAVES = 8 if fc.LONG else 4  # the ETag and cut campaigns


def s3(server: str) -> fc.CampaignServer:
    """``server`` (LocalStack or SeaweedFS), its objects under a campaign's prefix faultable."""
    endpoint = endpoint_of(server)
    return fc.CampaignServer(
        name=server,
        upstream=endpoint,
        faultable=lambda prefix: FaultProxy.for_prefix(bucket(), prefix),
        open_through=lambda proxy_url, prefix: docmem.open_store(
            store_url(proxy_url, prefix) + fc.CLIENT_TIMEOUTS
        ),
        open_direct=lambda prefix: docmem.open_store(store_url(endpoint, prefix)),
    )


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_mixed_faults_keep_every_outcome_truthful(server: str, seed: int) -> None:
    fc.run_campaign(s3(server), FaultPlan(seed, fc.MIXED, stall=fc.STALL), fc.WRITERS, fc.SAVES)


# Every answer of one method falsified: GET answers test the read path, PUT answers
# the write whose answer is unusable (unknown, then settled through the journal).
# ``ETag: ""`` is refused with a 412 by both servers, so one campaign covers it.
ETAG_PLANS = {
    "empty-etag-GET": ({"empty-etag": 1}, {"GET"}),
    "empty-etag-PUT": ({"empty-etag": 1}, {"PUT"}),
    "no-etag-GET": ({"no-etag": 1}, {"GET"}),
    "no-etag-PUT": ({"no-etag": 1}, {"PUT"}),
    "blank-etag": ({"blank-etag": 1}, {"GET", "PUT"}),
}


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("name", sorted(ETAG_PLANS))
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_bad_etag_is_a_typed_error_never_a_lost_update(server: str, name: str, seed: int) -> None:
    weights, methods = ETAG_PLANS[name]
    plan = FaultPlan(seed, weights, methods=frozenset(methods))
    fc.run_campaign(s3(server), plan, fc.WRITERS, TARGETED_SAVES)


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_answers_cut_midway_are_typed_errors(server: str, seed: int) -> None:
    """Every answer cut (closed or reset after half of it), error bodies included."""
    plan = FaultPlan(seed, {"cut": 1, "cut-reset": 1})
    fc.run_campaign(s3(server), plan, fc.WRITERS, TARGETED_SAVES)
