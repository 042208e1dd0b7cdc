"""The report page and the timeline of the examples (issue #42), as a user gets them:
``JANUS_TRACE=t.json python -m janus --html page.html examples/X.py --steps N``.

For each example the page names its training step, marks some of its lines as run in a graph,
charts its calls, and the timeline is valid Chrome trace-event JSON with graph runs of that
step; the split program has its own test (``test_report_page.py``).
"""
import json
import os
import subprocess
import sys

import pytest

from test_report_page import ROOT, _rows, assert_trace_format

EXAMPLES = [("lenet.py", 12), ("lm.py", 8), ("treelstm.py", 12)]


@pytest.mark.parametrize("example,steps", EXAMPLES, ids=[e for e, _ in EXAMPLES])
def test_an_examples_page_and_trace(tmp_path, example, steps):
    page_path, trace_path = tmp_path / "page.html", tmp_path / "trace.json"
    env = dict(os.environ, PYTHONPATH=ROOT, JANUS_TRACE=str(trace_path))
    env.pop("JANUS_REPORT_HTML", None)
    run = subprocess.run([sys.executable, "-m", "janus", "--html", str(page_path),
                          os.path.join(ROOT, "examples", example), "--steps", str(steps)],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    page = page_path.read_text(encoding="utf-8")
    assert "train_step" in page and "<svg" in page and "Calls over the run" in page
    assert "graph" in set(_rows(page).values()), _rows(page)
    items = assert_trace_format(json.loads(trace_path.read_text()))
    assert any(e.get("cat") == "graph" for e in items), {e.get("cat") for e in items}
