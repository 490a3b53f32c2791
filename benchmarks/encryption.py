"""What client-side encryption costs: encrypted stores against plain ones.

Each row runs the same docmem operation on an encrypted store and on the
same kind of store unencrypted, interleaved in one run (A/B, then B/A, ...),
and reports the ratio of the medians:

* ``recall, file://``: ``recall()`` of a warm 10-entry document, encrypted
  with a local key (``encrypted+file://...?keyring=file:...``) against plain
  ``file://``. Each sample times a batch of recalls.
* ``save, file://``: ``save()`` into a 10-entry document (an untimed
  ``remove`` after each keeps it at 10), the same two stores.
* ``recall, s3:// + KMS``: ``recall()`` of a 10-entry document this process
  has read before (docmem-s3 answers a 304 from its cache) on an
  ``encrypted+s3://`` store whose keyring is a KMS key, against the same on
  plain docmem-s3. Target <= 1.15x.
* ``save, s3:// + KMS``: ``save()`` from a fresh cached version (this store
  wrote last; an untimed ``remove`` after each), encrypted against plain.
  Target <= 1.25x.

The file:// rows need no server and have the same targets. The S3 rows run
against ``--endpoint`` or ``$LOCALSTACK_ENDPOINT`` (KMS at the same endpoint
unless ``--kms-endpoint``; a key is created there unless ``--kms-key``);
without one they are not run and the report says so. S3 and KMS requests are
counted per timed call (botocore events, both sides): an unchanged recall and
a save within ``data_key_seconds`` make no KMS call. ``--quick`` is a smoke
run; ``--json`` prints one JSON object (benchmarks/README.md)::

    .venv/bin/python benchmarks/encryption.py --quick
    scripts/with-test-servers .venv/bin/python benchmarks/encryption.py
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from harness.arguments import add_endpoint_arguments, add_output_arguments, override
from harness.report import Result, describe, json_report, notes, table, verdict, versions
from harness.s3 import Prefixes, Requests, S3Endpoint, check_bucket
from harness.timing import Sample, interleave, log, settle
from harness.workload import index_of, save_text, seeded

import docmem
from docmem.storage.encryption import EncryptedStore, KmsKey
from docmem.storage.encryption.keyfile import render_keyring

NAMESPACE = "bench:encryption"
S3_ROWS = ("recall, s3:// + KMS", "save, s3:// + KMS")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Samples per side, operations per sample, untimed samples first."""

    file_rounds: int = 300
    s3_rounds: int = 200
    batch: int = 10
    warmup: int = 10


FULL = Settings()
QUICK = Settings(file_rounds=20, s3_rounds=10, batch=3, warmup=2)


class KmsCalls:
    """KMS requests a keyring's client sent while counting (botocore's before-call event)."""

    def __init__(self, store: EncryptedStore) -> None:
        self.count = 0
        self._active = False
        primary = store.keyring.primary
        assert isinstance(primary, KmsKey)
        primary.kms.client.meta.events.register("before-call.kms", self._seen)

    def _seen(self, **_: Any) -> None:
        if self._active:
            self.count += 1

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        self._active = True
        try:
            yield
        finally:
            self._active = False


#: What a timed call runs inside: request counting, or nothing.
Around = Callable[[], contextlib.AbstractContextManager[None]]


def recalls(memory: docmem.BoundMemory, batch: int, around: Around) -> Sample:
    def run() -> float:
        with around():
            start = time.perf_counter_ns()
            for _ in range(batch):
                if not memory.recall():
                    raise RuntimeError("the seeded document is missing")
            return (time.perf_counter_ns() - start) / 1e9 / batch

    return run


def saves(memory: docmem.BoundMemory, batch: int, around: Around) -> Sample:
    """Each call: ``batch`` timed saves, each followed by an untimed remove (10 entries kept)."""
    count = 0

    def run() -> float:
        nonlocal count
        spent = 0
        for _ in range(batch):
            count += 1
            with around():
                start = time.perf_counter_ns()
                result = memory.save(save_text(count), mutation_id=f"save-{count}")
                spent += time.perf_counter_ns() - start
            memory.remove(index_of(result), mutation_id=f"remove-{count}")
        return spent / 1e9 / batch

    return run


def compare(
    name: str,
    subject: Sample,
    baseline: Sample,
    settings: Settings,
    rounds: int,
    *,
    baseline_name: str,
    target: float,
    detail: str,
    reset: Callable[[], None] = lambda: None,
    per_call: Callable[[int], tuple[str, ...]] = lambda calls: (),
) -> Result:
    """Warm up, ``reset()`` the counters, then ``rounds`` interleaved rounds: the row."""
    interleave(settings.warmup, subject, baseline)
    reset()
    settle()
    started = time.monotonic()
    subject_times, baseline_times = interleave(rounds, subject, baseline)
    log(f"{name}: {time.monotonic() - started:.1f} s")
    calls = rounds * settings.batch
    return Result(
        name=name,
        detail=detail,
        subject=statistics.median(subject_times),
        baseline=statistics.median(baseline_times),
        baseline_name=baseline_name,
        target=target,
        runs=calls,
        notes=per_call(calls),
    )


#: Each operation's rows: the sample maker and the target.
OPERATIONS: tuple[tuple[str, Callable[[docmem.BoundMemory, int, Around], Sample], float], ...] = (
    ("recall", recalls, 1.15),
    ("save", saves, 1.25),
)


def _stored_size(store: docmem.Backend, memory: docmem.BoundMemory) -> int:
    stored = store.read(memory.scope.storage_key)
    return len(stored.data) if stored is not None else 0


# -- file:// --------------------------------------------------------------------------------


def file_rows(base: str, settings: Settings) -> list[Result]:
    keyring = Path(base) / "keyring.json"
    keyring.write_text(render_keyring({"bench-1": os.urandom(32)}, "bench-1"))
    keyring.chmod(0o600)
    plain = docmem.open_store(f"file://{base}/plain?create=true")
    sealed = docmem.open_store(f"encrypted+file://{base}/sealed?create=true&keyring=file:{keyring}")
    results = []
    for operation, make, target in OPERATIONS:
        ours = seeded(sealed, NAMESPACE, operation)
        theirs = seeded(plain, NAMESPACE, operation)
        results.append(
            compare(
                f"{operation}, file://",
                make(ours, settings.batch, contextlib.nullcontext),
                make(theirs, settings.batch, contextlib.nullcontext),
                settings,
                settings.file_rounds,
                baseline_name="plain file://",
                target=target,
                detail=f"{_stored_size(plain, theirs):,} B",
            )
        )
    plain.close()
    sealed.close()
    return results


# -- s3:// + KMS ----------------------------------------------------------------------------


def kms_key(endpoint: str, region: str, given: str | None) -> str:
    """``given``, or a new symmetric key created at ``endpoint`` (LocalStack)."""
    if given:
        return given
    import boto3

    client = boto3.session.Session().client("kms", endpoint_url=endpoint, region_name=region)
    arn: str = client.create_key(Description="docmem benchmark")["KeyMetadata"]["Arn"]
    client.close()
    return arn


def s3_rows(endpoint: S3Endpoint, kms_endpoint: str, key: str, settings: Settings) -> list[Result]:
    from docmem_s3 import S3Backend

    prefixes = Prefixes(endpoint)
    try:
        plain = endpoint.s3_store(prefixes.fresh("plain"))
        query = urlencode(
            {
                "endpoint_url": endpoint.url,
                "region": endpoint.region,
                "keyring": f"kms:{key}",
                "kms_endpoint_url": kms_endpoint,
                "kms_region": endpoint.region,
            }
        )
        sealed = docmem.open_store(
            f"encrypted+s3://{endpoint.bucket}/{prefixes.fresh('sealed')}?{query}"
        )
        assert isinstance(sealed, EncryptedStore)
        assert isinstance(sealed.store, S3Backend)
        kms = KmsCalls(sealed)
        results = []
        for operation, make, target in OPERATIONS:
            ours = seeded(sealed, NAMESPACE, operation)
            theirs = seeded(plain, NAMESPACE, operation)
            ours.recall()  # each store has seen its document: a recall is a 304
            theirs.recall()
            ours_requests = Requests().attach(*sealed.store.clients())
            theirs_requests = Requests().attach(*plain.clients())

            @contextlib.contextmanager
            def counted(requests: Requests = ours_requests) -> Iterator[None]:
                with requests.counting(), kms.counting():
                    yield

            def reset(ours: Requests = ours_requests, theirs: Requests = theirs_requests) -> None:
                ours.reset()
                theirs.reset()
                kms.count = 0

            def per_call(
                calls: int, ours: Requests = ours_requests, theirs: Requests = theirs_requests
            ) -> tuple[str, ...]:
                return (
                    f"encrypted per call: {ours.per_call(calls)}, KMS {kms.count / calls:.2f}",
                    f"plain per call: {theirs.per_call(calls)}",
                )

            results.append(
                compare(
                    f"{operation}, s3:// + KMS",
                    make(ours, settings.batch, counted),
                    make(theirs, settings.batch, theirs_requests.counting),
                    settings,
                    settings.s3_rounds,
                    baseline_name="plain docmem-s3",
                    target=target,
                    detail=f"{_stored_size(plain, theirs):,} B",
                    reset=reset,
                    per_call=per_call,
                )
            )
        sealed.close()
        plain.close()
        return results
    finally:
        prefixes.clean_up()


# -- the command line -------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--file-rounds", type=int, help="samples per side, file:// rows")
    parser.add_argument("--s3-rounds", type=int, help="samples per side, s3:// rows")
    parser.add_argument("--batch", type=int, help="operations per sample")
    parser.add_argument("--warmup", type=int, help="untimed samples per side first")
    parser.add_argument(
        "--kms-endpoint", help="the AWS KMS endpoint URL (default: the S3 endpoint)"
    )
    parser.add_argument("--kms-key", help="a KMS key id, ARN or alias (default: create one)")
    add_endpoint_arguments(parser)
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    started = time.monotonic()
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="docmem-bench-encryption-") as base:
        log(f"benchmarking docmem {docmem.__version__} encryption; file:// stores in {base}")
        results = file_rows(base, settings)
    endpoint = None
    if arguments.endpoint:
        endpoint = S3Endpoint(arguments.endpoint, arguments.bucket, arguments.region)
        check_bucket(endpoint, "benchmarks/encryption.py")
        kms_endpoint = arguments.kms_endpoint or endpoint.url
        key = kms_key(kms_endpoint, endpoint.region, arguments.kms_key)
        log(f"s3:// rows on {endpoint.url}, bucket {endpoint.bucket}, KMS at {kms_endpoint}")
        results += s3_rows(endpoint, kms_endpoint, key, settings)
    else:
        reason = "no S3 endpoint (--endpoint URL or $LOCALSTACK_ENDPOINT)"
        skipped = [f"{name}: {reason}" for name in S3_ROWS]
    found = versions("cryptography", *(("agent-docmem-s3", "boto3") if endpoint else ()))
    if arguments.json:
        context = {
            "docmem_from": os.path.dirname(docmem.__file__),
            "endpoint": endpoint.url if endpoint else None,
            "bucket": endpoint.bucket if endpoint else None,
            "region": endpoint.region if endpoint else None,
        }
        report = json.loads(
            json_report(
                "encryption",
                results,
                settings=settings,
                found=found,
                context=context,
                started=started,
            )
        )
        report["skipped"] = skipped
        print(json.dumps(report, indent=2, allow_nan=False))
        return 0
    print(describe(found))
    print("ratio = encrypted store / the same store unencrypted (medians of interleaved runs)")
    print()
    print(table(results))
    print()
    print(notes([result for result in results if result.notes], "check FAILED"))
    for entry in skipped:
        print(f"not run: {entry}")
    if skipped:
        print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
