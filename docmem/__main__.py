"""``python -m docmem``: the ``docmem`` command line (see :mod:`docmem.cli`)."""

from __future__ import annotations

import sys

from docmem.cli import main

if __name__ == "__main__":
    sys.exit(main())
