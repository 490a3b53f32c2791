"""``python -m docmem_gcs probe URL``: check that a store honours generation preconditions."""

from __future__ import annotations

import argparse
import sys

import docmem

from .backend import GcsBackend, probe
from .probe import ConditionsNotHonoured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docmem_gcs", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("probe", help="run every conditional-write check on a store")
    check.add_argument("url", help="gs://bucket/prefix[?endpoint_url=...&credentials_file=...]")
    check.add_argument("--writers", type=int, default=8, help="concurrent creates to race")
    arguments = parser.parse_args(argv)
    try:
        store = docmem.open_store(arguments.url)
    except docmem.DocmemError as error:
        print(f"ERROR ({error.code}): {error}")
        return 2
    if not isinstance(store, GcsBackend):
        parser.error("the URL must be a gs:// or gcs:// URL")
    try:
        report = probe(store, writers=arguments.writers)
    except ConditionsNotHonoured as error:
        print(f"REFUSED: {error}")
        return 1
    except docmem.DocmemError as error:
        print(f"ERROR ({error.code}): {error}")
        return 2
    finally:
        store.close()
    for name, passed in report.checks:
        print(f"{'ok' if passed else 'FAILED'}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
