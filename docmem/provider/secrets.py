"""The credential filter: secrets are not memory.

A filter takes normalized text and returns the *kind* of credential it found
(a short name, never the match) or ``None``. :class:`docmem.FileMemory` takes
any callable of that shape as ``secret_filter=``; the default looks for the
common shapes below.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["SecretFilter", "default_secret_filter"]

SecretFilter = Callable[[str], "str | None"]

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("aws_secret_key", re.compile(r"(?i)aws_?secret_?access_?key\s*[:=]\s*\S{16,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("api_key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{20,}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*")),
    (
        "password_assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|api[_-]?key|secret[_-]?key|access[_-]?token)"
            r"\s*[:=]\s*\S{6,}"
        ),
    ),
)


def default_secret_filter(text: str) -> str | None:
    """The kind of credential ``text`` seems to contain, or ``None``."""
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    return None
