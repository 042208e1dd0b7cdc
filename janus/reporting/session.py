"""Recording for the run, asked for by the environment (``JANUS_TRACE``,
``JANUS_REPORT_HTML``) or by ``python -m janus --html``: start the per-call log and write the
timeline and the page at exit."""
from __future__ import annotations

import atexit
import logging
import os

from janus import config
from janus.reporting import chrome_trace, events, report_page

log = logging.getLogger("janus")

_pages: list[str] = []  # pages to write at exit, besides JANUS_REPORT_HTML's
_hooked = False


def start_from_environment(page: str | None = None) -> None:
    """Record from now on if the environment (or ``page``) asks for a page or a timeline,
    and write them at exit (the exit hook is registered once per process)."""
    global _hooked
    if page is not None:
        _pages.append(os.path.abspath(page))
    if _hooked or not (_pages or config.trace_path() or config.report_html()):
        return
    _hooked = True
    events.start()
    atexit.register(write_at_exit)


def write_at_exit() -> None:
    """Write what was asked for; a failure is logged, never raised at exit."""
    recorded = events.ACTIVE
    jobs = [(config.trace_path(), chrome_trace.write)]
    jobs += [(path, report_page.write) for path in [config.report_html(), *_pages]]
    for path, write in jobs:
        if not path:
            continue
        try:
            write(os.path.abspath(path), recorded)
            log.info("janus: wrote %s", path)
        except Exception as e:  # noqa: BLE001 - the program's exit must not fail for a report
            log.warning("janus: could not write %s: %s: %s", path, type(e).__name__, e)
