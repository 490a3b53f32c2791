"""The command line the benchmark scripts share: counts, the S3 endpoint, ``--json``."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "DEFAULT_BUCKET",
    "DEFAULT_REGION",
    "add_contention_arguments",
    "add_endpoint_arguments",
    "add_output_arguments",
    "endpoint_arguments",
    "override",
]

DEFAULT_BUCKET = "docmem-test"
DEFAULT_REGION = "us-east-1"

SettingsT = TypeVar("SettingsT", bound="DataclassInstance")


def override(
    parser: argparse.ArgumentParser, settings: SettingsT, arguments: argparse.Namespace
) -> SettingsT:
    """``settings`` with each field given on the command line (``--save-runs`` sets
    ``save_runs``); a usage error for a count below 1."""
    given = {
        field.name: getattr(arguments, field.name)
        for field in dataclasses.fields(settings)
        if getattr(arguments, field.name, None) is not None
    }
    settings = dataclasses.replace(settings, **given)
    for name, value in dataclasses.asdict(settings).items():
        if value < 1:
            parser.error(f"{name.replace('_', '-')} must be at least 1")
    return settings


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``: the report as one JSON object on stdout, for comparisons over time."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the results as one JSON object instead of the table (see benchmarks/README.md)",
    )


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """``--endpoint``, ``--bucket`` and ``--region``, defaults from the environment."""
    parser.add_argument(
        "--endpoint",
        default=os.environ.get("LOCALSTACK_ENDPOINT"),
        help="the S3 endpoint URL (default: $LOCALSTACK_ENDPOINT)",
    )
    parser.add_argument(
        "--bucket",
        default=os.environ.get("DOCMEM_TEST_BUCKET") or DEFAULT_BUCKET,
        help=f"an existing bucket (default: $DOCMEM_TEST_BUCKET or {DEFAULT_BUCKET})",
    )
    parser.add_argument("--region", default=DEFAULT_REGION, help="default: %(default)s")


def add_contention_arguments(parser: argparse.ArgumentParser) -> None:
    """``--writers``, ``--writer-saves`` and ``--contention-runs``."""
    parser.add_argument("--writers", type=int, help="threads in the contention benchmark")
    parser.add_argument("--writer-saves", type=int, help="saves per contention writer")
    parser.add_argument("--contention-runs", type=int, help="contention runs per side")


def endpoint_arguments(
    parser: argparse.ArgumentParser, arguments: argparse.Namespace
) -> tuple[str, str, str]:
    """The endpoint URL, bucket and region given; a usage error when there is no endpoint."""
    if not arguments.endpoint:
        parser.error(
            "no S3 endpoint: pass --endpoint URL or set LOCALSTACK_ENDPOINT "
            "(scripts/with-test-servers sets it)"
        )
    return arguments.endpoint, arguments.bucket, arguments.region
