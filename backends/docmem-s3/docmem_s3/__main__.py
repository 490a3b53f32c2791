"""``python -m docmem_s3 probe URL``: check that a store honours conditional writes."""

from __future__ import annotations

import argparse
import sys

import docmem

from .backend import S3Backend, probe
from .probe import ConditionsNotHonoured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docmem_s3", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("probe", help="run every conditional-write check on a store")
    check.add_argument("url", help="s3://bucket/prefix?endpoint_url=...&region=...")
    check.add_argument("--writers", type=int, default=8, help="concurrent creates to race")
    arguments = parser.parse_args(argv)
    store = docmem.open_store(arguments.url)
    if not isinstance(store, S3Backend):
        parser.error("the URL must be an s3:// URL")
    try:
        report = probe(store, writers=arguments.writers)
    except ConditionsNotHonoured as error:
        print(f"REFUSED: {error}")
        return 1
    except docmem.DocmemError as error:
        print(f"ERROR ({error.code}): {error}")
        return 2
    for name, passed in report.checks:
        print(f"{'ok' if passed else 'FAILED'}: {name}")
    print(f"versioning: {report.versioning}{_NOTES[report.versioning]}")
    return 0


_NOTES = {
    "enabled": " (an erase deletes older versions: needs s3:ListBucketVersions, "
    "s3:DeleteObjectVersion)",
    "suspended": " (older versions kept while it was enabled: an erase deletes them, which "
    "needs s3:ListBucketVersions, s3:DeleteObjectVersion)",
    "unversioned": " (no older versions are kept)",
    "unknown": " (GetBucketVersioning refused or failed: an erase will list versions to be "
    "sure, which needs s3:ListBucketVersions)",
}


if __name__ == "__main__":
    sys.exit(main())
