"""The ``janus`` logger: a ``janus:`` prefix where nothing names the logger, and
``JANUS_LOG``'s handler on stderr."""
from __future__ import annotations

import logging
import sys

from janus import config

log = logging.getLogger("janus")


class _Prefix(logging.Filter):
    """Janus's messages name Janus: warnings start with ``janus:`` so that Python's last-resort
    output (no handler configured anywhere) says who speaks.  Where a handler is configured
    its format names the logger already (``INFO:janus:...``, or ``JANUS_LOG``'s ``janus: ...``),
    so the prefix is dropped there instead of doubled."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("janus: ") and log.hasHandlers():
            record.msg = record.msg[len("janus: "):]
        return True


log.addFilter(_Prefix())


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record is emitted."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):  # noqa: D102 - StreamHandler's attribute, read at each emit
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


_logging_configured = False


def configure_logging() -> None:
    """``JANUS_LOG=info|debug``: give the ``janus`` logger a handler on stderr, once, at the
    first use of Janus (``janus: <message>`` lines; the logger stops propagating, so a root
    handler does not print them twice).  Unset: nothing is configured (library code adds no
    handler)."""
    global _logging_configured
    if _logging_configured:
        return
    _logging_configured = True
    level = config.log_level()
    if level is None:
        return
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("janus: %(message)s"))
    log.addHandler(handler)
    log.setLevel(level.upper())
    log.propagate = False
