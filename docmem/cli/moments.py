"""Instants on the command line: ISO 8601 in (``--since``, ``--before``), ISO 8601 UTC out.

An operator copies a time from ``docmem history`` or ``docmem audit`` into
``--before`` or ``--since``, so the times printed and the times read agree
to the millisecond, the precision of a provenance record: a printed time is
cut to whole milliseconds, never rounded up, so a version printed at
``07:46:52.386`` is at or before ``--before 2026-12-02T07:46:52.386Z``.
"""

from __future__ import annotations

import argparse
import datetime
import math

__all__ = ["instant", "iso_milliseconds", "milliseconds", "milliseconds_of_seconds"]

_UTC = datetime.timezone.utc


def instant(text: str) -> datetime.datetime:
    """An argparse type: an ISO 8601 instant, aware; a time without a zone is taken as UTC.

    ``2026-12-02T07:46:52Z``, ``2026-12-02 07:46:52.386``, ``2026-12-02T08:46:52+01:00``
    and ``2026-12-02`` (midnight UTC) are all accepted.
    """
    written = text.strip()
    if written[-1:] in ("Z", "z"):  # Python 3.10's fromisoformat does not read Z
        written = written[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(written)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "not an ISO 8601 time: write it as 2026-12-02T07:46:52Z (UTC) or with an offset"
        ) from None
    return moment.replace(tzinfo=_UTC) if moment.tzinfo is None else moment


def milliseconds(moment: datetime.datetime) -> int:
    """``moment`` in whole milliseconds since the epoch, as a provenance record's ``at``."""
    delta = moment - datetime.datetime(1970, 1, 1, tzinfo=_UTC)
    return delta // datetime.timedelta(milliseconds=1)


def milliseconds_of_seconds(seconds: float) -> int:
    """A store's time (:attr:`docmem.backend.KeptVersion.modified`) cut to whole milliseconds."""
    return math.floor(seconds * 1000)


def iso_milliseconds(at: int) -> str:
    """``2026-12-02T07:46:52.386Z``: milliseconds since the epoch as ISO 8601 UTC."""
    moment = datetime.datetime(1970, 1, 1, tzinfo=_UTC) + datetime.timedelta(milliseconds=at)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
