"""``docs/breaks.md``: every code's page, in code order (``python -m janus.reporting.breaks_page
> docs/breaks.md`` writes it; ``tests/test_break_codes.py`` checks the file is this text)."""
from __future__ import annotations

from janus.reporting.break_entries import BREAKS
from janus.reporting.codes import Code, Entry
from janus.reporting.fallback_entries import FALLBACKS

ENTRIES: dict[Code, Entry] = {e.code: e for e in (*BREAKS, *FALLBACKS)}


def markdown() -> str:
    """``docs/breaks.md``: every code's entry (the file is this text; a test compares them)."""
    lines = ["# Break and fallback codes", "",
             "Every reason Janus gives for running something in Python has a code: a statement at a graph",
             "break, a call run eagerly, a function given up on. `janus.explain(f)`, the log, strict mode's",
             "`janus.GraphBreakError` and the report page (`JANUS_REPORT_HTML`) name it as `[JB014]`.",
             "This page is generated from `janus/reporting/break_entries.py` and `fallback_entries.py`",
             "(`python -m janus.reporting.breaks_page > docs/breaks.md`);",
             "`tests/test_break_codes.py` runs every example and checks it gives its code.", "",
             "| code | kind | title |", "|---|---|---|"]
    lines += [f"| [{e.code.value}](#{e.anchor}) | {e.kind.value} | {e.title} |" for e in ENTRIES.values()]
    for e in ENTRIES.values():
        lines += ["", f"## {e.code.value}", "", f"**{e.title}** ({e.kind.value}, `Code.{e.code.name}`)", "",
                  e.meaning, "", f"Fix: {e.fix}", "", f"Knob: {e.knob}.", ""]
        if e.example is not None:
            lines += ["```python", e.example, "```"]
        else:
            lines.append(f"No runnable example: {e.why_no_example}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - regenerates docs/breaks.md
    import sys

    sys.stdout.write(markdown())
