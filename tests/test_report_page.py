"""The report page, the timeline and their log (issue #42): the lines marked by where they
ran, the codes present, the trace valid Chrome trace-event JSON, the log bounded, and
nothing recorded when off."""
import json
import os
import subprocess
import sys

import tensorflow as tf

import janus
from janus.reporting import chrome_trace, events, model, report_page

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _recording():
    events.stop()
    return events.start()


def _rows(page: str) -> dict:
    """Source rows of the page: line text -> the row's class (graph, python, eager or '')."""
    out = {}
    for chunk in page.split("<tr class='")[1:]:
        mark, rest = chunk.split("'", 1)
        text = rest.split("<td class='c'>", 1)[1].split("</td>", 1)[0] if "<td class='c'>" in rest else ""
        out[text.strip()] = mark
    return out


def assert_trace_format(doc):
    """Chrome's trace-event format: a list, or an object with ``traceEvents``; each event has
    ph, ts, pid, tid and name; complete events a duration."""
    items = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert isinstance(items, list) and items
    for e in items:
        assert {"ph", "ts", "pid", "tid", "name"} <= set(e), e
        assert isinstance(e["ts"], (int, float)) and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "X":
            assert e["dur"] >= 0
    return items


def test_off_by_default_records_nothing():
    assert events.ACTIVE is None or os.environ.get("JANUS_TRACE") or os.environ.get("JANUS_REPORT_HTML")

    @janus.function
    def f(x):
        return x * 2.0

    before = None if events.ACTIVE is None else events.ACTIVE.calls
    for _ in range(5):
        f(tf.ones(2))
    assert (events.ACTIVE is None) == (before is None)


def test_page_marks_graph_lines_and_names_codes(tmp_path):
    log = _recording()
    try:
        @janus.function
        def whole(x):
            y = x * 2.0
            return y + 1.0

        @janus.function
        def gen(x):
            yield x * 2.0

        for _ in range(6):
            whole(tf.ones(2))
            list(gen(tf.ones(2)))
        path = janus.report(str(tmp_path / "page.html"))
    finally:
        events.stop()
    page = open(path, encoding="utf-8").read()
    rows = _rows(page)
    assert rows["y = x * 2.0"] == "graph" and rows["return y + 1.0"] == "graph", rows
    assert rows["yield x * 2.0"] == "eager", rows
    assert "[JB001]" in page and "<svg" in page and "http" not in page.split("</style>")[1].lower()
    whole_events = [e for e in log.events if e.function.endswith("whole")]
    assert [e.kind for e in whole_events][:4] == ["eager", "eager", "eager", "convert"]
    assert whole_events[-1].kind == "graph"
    assert_trace_format(chrome_trace.document(log))


def test_log_is_bounded_and_says_so():
    log = events.EventLog(full_calls=5, sample_every=10, max_events=8)
    events.stop()
    events.ACTIVE = log
    try:
        @janus.function
        def g(x):
            return x + 1.0

        for _ in range(60):
            g(tf.ones(2))
    finally:
        events.stop()
    assert log.calls == 60 and len(log.events) <= 8
    assert log.unrecorded == 60 - 5 - 6 and log.totals["test_log_is_bounded_and_says_so.<locals>.g"]["graph"] > 0
    doc = chrome_trace.document(log)
    assert doc["otherData"]["calls_not_recorded"] == log.unrecorded and "one in 10" in doc["otherData"]["recorded"]
    json.dumps(doc)
    assert "not charted" in report_page.render(log)


def test_split_program_page_and_trace(tmp_path):
    """An environment stepped inside a tape: the step is split at the break; the page marks the
    break's line as Python and the segments' lines as graphs, with the code; the trace has
    segment runs and the Python between them."""
    page_path, trace_path = tmp_path / "split.html", tmp_path / "split.json"
    env = dict(os.environ, PYTHONPATH=ROOT, JANUS_TRACE=str(trace_path))
    env.pop("JANUS_REPORT_HTML", None)
    run = subprocess.run([sys.executable, "-m", "janus", "--html", str(page_path),
                          os.path.join(ROOT, "examples", "split_env.py"), "30"],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    page = page_path.read_text(encoding="utf-8")
    rows = _rows(page)
    assert rows["new_obs, reward = env.step(action.numpy())"] == "python", rows
    # a segment is a graph unless its trial found eager faster (timing decides: either is right)
    assert rows["logits = tf.matmul(obs[None, :], w)"] in ("graph", "eager"), rows
    assert "segment 0" in page and "class='graph'" in page
    assert rows["with tf.GradientTape() as tape:"] == "python", rows
    assert "[JB014]" in page and "Graph breaks" in page and "<svg" in page
    items = assert_trace_format(json.loads(trace_path.read_text()))
    cats = {e.get("cat") for e in items}
    assert {"split", "graph", "python", "conversion"} <= cats, cats
    assert all("function" in e["args"] and "line" in e["args"] for e in items if e["ph"] == "X")


def test_model_codes_seen_of_a_split_function():
    @janus.function
    def f(x):
        y = x * 2.0
        s = y.numpy().sum()
        return y * s

    for _ in range(6):
        f(tf.ones(2))
    from janus.reporting.codes import Code
    assert Code.TENSOR_VALUE in model.codes_seen(f.__janus_function__)
    view = model.source_view(f.__janus_function__)
    assert "python" in view.marks.values() and "graph" in view.marks.values()


def test_janus_profile_html_page(tmp_path):
    """``janus-profile --html``: the profiler's page, with the verdict's code for a function Janus
    would not convert and the sites' observations beside their lines."""
    script = tmp_path / "prof.py"
    script.write_text("def gen(n):\n    yield n\n\n\ndef step(x):\n    if x > 0:\n        return x * 2\n    return -x\n\n\n"
                      "for i in range(5):\n    step(i + 1)\n    list(gen(i))\n")
    page = tmp_path / "prof.html"
    run = subprocess.run([sys.executable, "-m", "janus_profiler", "--html", str(page), str(script)],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    text = page.read_text(encoding="utf-8")
    assert "Janus would not convert it: generator (yield)" in text and "[JB001]" in text, text[-3000:]
    assert "True 5 / False 0" in text and "<table class='src'>" in text
