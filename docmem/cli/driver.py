"""One run of the command line: parse, run the command, turn every failure into an exit code.

Exit codes (docs/cli.md): 0 success; 1 a docmem error, reported as one line
that starts with its code (``internal_error`` for anything unexpected, which
is a bug); 2 a usage error; 130 interrupted; 141 stdout closed early (a pipe
into ``head``). A traceback is printed only with ``--debug``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback

from docmem.errors import DocmemError

from .command import MissingExtra, UsageError
from .commands import load
from .parser import build_parser
from .report import Reporter

__all__ = ["EXIT_DOCMEM_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_PIPE", "EXIT_USAGE", "run"]

EXIT_OK = 0
EXIT_DOCMEM_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141

#: The loggers of docmem and its plug-ins: shown with --debug, silent otherwise.
_LOGGERS = ("docmem", "docmem_s3", "docmem_fsspec")


def run(argv: list[str]) -> int:
    """Parse ``argv`` and run its command; every outcome is an exit code."""
    debug = "--debug" in argv
    if hasattr(sys.stdout, "reconfigure"):  # what the terminal cannot show, as an escape
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        parsers = build_parser(argv)
    except MissingExtra as missing:
        print(missing.message, file=sys.stderr)
        if debug:
            traceback.print_exception(missing.cause)
        return EXIT_DOCMEM_ERROR
    except Exception as error:  # a broken installation: docmem's own module is missing
        _trace(debug)
        return Reporter("docmem", json=False, quiet=False).crashed(error)
    try:
        arguments = parsers.top.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    command = load(arguments.command)  # imported by build_parser already
    _configure_logging(debug=arguments.debug, serving=command.server)
    report = Reporter(
        arguments.command,
        json=getattr(arguments, "json", False),
        quiet=getattr(arguments, "quiet", False),
    )
    try:
        code = command.run(arguments, report)
        sys.stdout.flush()  # here, so that a closed pipe is reported below, not at exit
        return code
    except UsageError as usage:
        with contextlib.suppress(SystemExit):  # argparse prints the usage, then exits
            parsers.commands[arguments.command].error(usage.message)
        return EXIT_USAGE
    except DocmemError as error:
        _trace(arguments.debug)
        return report.failed(error)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE
    except Exception as error:
        if _only_broken_pipes(error):  # a host that closed our stdout (anyio groups it)
            _silence_stdout()
            return EXIT_PIPE
        _trace(arguments.debug)
        return report.crashed(error)


def _only_broken_pipes(error: BaseException) -> bool:
    """Whether ``error`` is an exception group of nothing but broken pipes (nested groups too)."""
    if isinstance(error, BrokenPipeError):
        return True
    inner: object = getattr(error, "exceptions", None)
    if not isinstance(inner, tuple) or not inner:
        return False
    return all(isinstance(each, BaseException) and _only_broken_pipes(each) for each in inner)


def _configure_logging(*, debug: bool, serving: bool) -> None:
    """With ``--debug``, docmem's own loggers at DEBUG on stderr (keys and codes, never text).

    Only docmem's: botocore's debug logs carry request headers. Without it a
    command that runs once stays silent (its report says what happened), and
    a server (``docmem mcp``) logs WARNING and above: its operator must hear
    of a JWKS out of reach or a store that keeps failing while it serves.
    """
    handler: logging.Handler
    if debug or serving:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        handler.setLevel(logging.DEBUG if debug else logging.WARNING)
    else:
        handler = logging.NullHandler()
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        if debug:
            logger.setLevel(logging.DEBUG)


def _trace(debug: bool) -> None:
    if debug:
        traceback.print_exc(file=sys.stderr)


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush is quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
