"""Training throughput of every example: eager, Janus, tf.function and a hand-written graph version.

    .venv/bin/python benchmarks/run_all.py                  # all 13 examples, writes docs/benchmarks.{md,png}
    .venv/bin/python benchmarks/run_all.py --quick          # smoke run: 4 examples, short windows, no docs
    .venv/bin/python benchmarks/run_all.py --examples lenet,lm [--rounds 2] [--json out.json]

Every (example, mode) first runs alone in a worker process of its own (``--worker MODE``,
internal): its checks against eager, its warm-up and its peak resident memory.  Then, for
``--rounds`` rounds, one worker process per example (``--worker interleaved``) builds all
its modes, warms each up and times them in interleaved windows (A B C D, B C D A, ...), so
that the shared machine's drift, and the speed a process happens to get (two processes of
the same program on this machine differ by up to 50%), land on all modes alike.  The
parent collects the JSON results, checks each mode's losses against eager's, reports the
median and the spread (min-max over rounds) of every ratio, prints the table and writes
``docs/benchmarks.md`` and ``docs/benchmarks.png``.

What is measured, per (example, mode), on a trainer built by the example's
``build(SEED)`` (the hand-written ones build the example's trainer and reuse its model,
optimizer and data iterator):

* **Throughput** of ``train_step`` alone: the batch is fetched with ``next_batch()``
  outside the timer, then ``float(train_step(*batch))`` is timed (``float`` waits for the
  result).  Examples/s of a window = examples in its batches / summed step time (an
  example is a batch row: an image, a sequence, a tree, a rollout transition).  After
  warm-up and one untimed window per mode, ``--windows`` windows of at least ``--window``
  seconds of step time per mode, interleaved; a round's number is a mode's median window,
  and a round's ratio of two modes is the median over the round's windows of one mode's
  window over the other's window next to it; the median over rounds is reported.
* **Peak memory**: ``ru_maxrss`` of the process that ran only that example in that mode
  (its checks, warm-up and windows); for Janus also the graphs its cache holds and the
  bytes of their constants.
* **Correctness**: the first ``--check-steps`` losses of every mode, compared with
  eager's (rtol 1e-4), and the Python-side effects after those steps (lengths of list
  attributes, graph tensors leaked into Python state), compared with eager's.
* **Janus warm-up**: time to first graph = summed wall time of the calls up to and
  including the first call that ran as a graph (the eager profiling calls, conversion,
  the first graph run), from ``janus.stats`` read after every warm-up call; and the
  share of calls that ran as graphs.

Timing lives here, not in tests.  Needs matplotlib for the chart (``pip install matplotlib``).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import importlib
import importlib.util
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLES_DIR = os.path.join(ROOT, "examples")

EXAMPLES = ["lenet", "resnet", "inception", "lstm", "lm", "treernn", "treelstm", "a3c", "ppo", "gan", "pix2pix",
            "dcgan", "vae"]
QUICK_EXAMPLES = ["lenet", "lstm", "lm", "gan"]
MODES = ["eager", "janus", "janus+xla", "tf.function", "handwritten"]
MODE_LABELS = {"eager": "eager", "janus": "Janus", "janus+xla": "Janus with XLA", "tf.function": "tf.function",
               "handwritten": "hand-written", "janus+reuse": "Janus with subtree reuse"}
JANUS_MODES = ("janus", "janus+xla", "janus+reuse")
# What a Janus mode sets in the environment while its trainer runs (read when Janus converts),
# so that it can share a process with the plain Janus trainer.
MODE_ENV = {"janus": {"JANUS_JIT_COMPILE": "auto", "JANUS_SUBTREE_REUSE": "0"},
            "janus+xla": {"JANUS_JIT_COMPILE": "1", "JANUS_SUBTREE_REUSE": "0"},
            "janus+reuse": {"JANUS_JIT_COMPILE": "auto", "JANUS_SUBTREE_REUSE": "1"}}
# Janus with JANUS_SUBTREE_REUSE=1 (identical subtrees of a call computed once), on the tree
# examples only, after the other modes of the example: the "Common-subtree reuse" section.
REUSE_EXAMPLES = ["treernn", "treelstm"]
SEED = 0
RTOL, ATOL = 1e-4, 1e-6
MAX_WARMUP_CALLS = 60  # Janus: stop waiting for it to settle after this many calls
MEMORY_WINDOWS = 2  # windows a mode runs alone after its warm-up, so that its peak memory is its steady state's


# ---------------------------------------------------------------------------------------------
# worker: one process, one mode, several examples
# ---------------------------------------------------------------------------------------------

def _symbolic_paths(obj, path="", depth=0, seen=None):
    """Paths of graph (symbolic) tensors held in Python state reachable from ``obj``.

    Walks instance ``__dict__``s of plain Python objects, lists, tuples and dicts, a few
    levels deep; does not enter Keras layers or tf.Modules (their variables are not
    Python state).  A graph tensor in Python state means a trace leaked it.
    """
    import tensorflow as tf

    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 4:
        return []
    seen.add(id(obj))
    if tf.is_tensor(obj):
        return [path] if tf.is_symbolic_tensor(obj) else []
    if isinstance(obj, (list, tuple)):
        out = []
        for i, v in enumerate(obj):
            found = _symbolic_paths(v, f"{path}[{i}]", depth + 1, seen)
            if found:
                return found[:1]  # one per container is enough
        return out
    if isinstance(obj, dict):
        out = []
        for k, v in obj.items():
            out += _symbolic_paths(v, f"{path}[{k!r}]", depth + 1, seen)
        return out
    if isinstance(obj, (tf.Module, tf.keras.layers.Layer)) or type(obj).__module__.startswith(("tensorflow", "keras")):
        return []
    d = getattr(obj, "__dict__", None)
    if not isinstance(d, dict) or isinstance(obj, type):
        return []
    out = []
    for k, v in d.items():
        if k.startswith("__"):
            continue
        out += _symbolic_paths(v, f"{path}.{k}" if path else k, depth + 1, seen)
    return out


def _python_state(owner):
    """Lengths of the trainer's list attributes (monitoring histories ...) and leaked graph tensors."""
    lengths = {k: len(v) for k, v in vars(owner).items() if isinstance(v, list)}
    return {"list_lengths": lengths, "symbolic": _symbolic_paths(owner)}


def _short(exc):
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


@contextlib.contextmanager
def _mode_env(mode):
    """The environment of a Janus mode (``MODE_ENV``) while its trainer runs."""
    settings = MODE_ENV.get(mode, {})
    old = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


class Run:
    """One (example, mode) in a worker: builds the trainer, runs the checked steps and the
    warm-up, then times windows on demand; ``res`` is its JSON-able record."""

    def __init__(self, name, mode, cfg):
        import tensorflow as tf

        import common

        self.mode, self.cfg, self.fn = mode, cfg, None
        self.janus = mode in JANUS_MODES
        self.res = res = {"example": name, "mode": mode, "error": None, "phase": "build", "windows": [],
                          "step_ms": []}
        try:
            start = time.perf_counter()
            if mode == "handwritten":
                trainer = importlib.import_module("handwritten." + name).build(SEED)
                owner = trainer.base
            else:
                trainer = importlib.import_module(name).build(SEED)
                owner = trainer
            common.maybe_janus(trainer, self.janus)
            if mode == "tf.function":
                trainer.train_step = tf.function(trainer.train_step)
            res["build_s"] = time.perf_counter() - start
            self.trainer, self.fn, self.owner = trainer, trainer.train_step, owner
        except Exception as exc:  # recorded, reported in the table
            res["error"] = _short(exc)
            self.fn = None

    def _stats(self):
        import janus  # only in Janus's modes: the other modes' processes do not load it

        return janus.stats(self.fn)

    def _graph_calls(self):
        return self._stats()["graph_calls"] if self.janus else 0

    def call(self):
        """One step on a fresh batch: (loss, rows, seconds, ran as a graph)."""
        batch = self.trainer.next_batch()
        before = self._graph_calls()
        with _mode_env(self.mode):
            t0 = time.perf_counter()
            loss = float(self.fn(*batch))
            dt = time.perf_counter() - t0
        return loss, len(batch[0]), dt, self._graph_calls() > before

    def prepare(self):
        """The checked steps, then (Janus) the warm-up."""
        if self.fn is None:
            return
        try:
            self._prepare()
        except Exception as exc:  # recorded, reported in the table
            self.res["error"] = _short(exc)
            self.fn = None

    def _prepare(self):
        res = self.res
        res["phase"] = "check"
        losses, call_times, first_graph = [], [], None
        for i in range(self.cfg["check_steps"]):
            loss, _, dt, as_graph = self.call()
            losses.append(loss)
            call_times.append(dt)
            if as_graph and first_graph is None:
                first_graph = i
        res["losses"] = losses
        res["state"] = _python_state(self.owner)
        res["phase"] = "warm-up"
        # Janus is warm when three calls in a row ran as graphs, or when it stopped converting
        # (no new conversion for five calls: e.g. a model whose graphs are not reused, once the budget is spent)
        graph_streak, quiet, conversions = 0, 0, None
        while self.janus and len(call_times) < MAX_WARMUP_CALLS and graph_streak < 3 and quiet < 5:
            _, _, dt, as_graph = self.call()
            call_times.append(dt)
            graph_streak = graph_streak + 1 if as_graph else 0
            now = self._stats()["conversions"]
            quiet = quiet + 1 if now == conversions and now > 0 else 0
            conversions = now
            if as_graph and first_graph is None:
                first_graph = len(call_times) - 1
        res["first_call_s"] = call_times[0]
        res["warmup_calls"] = res["calls"] = len(call_times)
        if self.janus:
            res["first_graph_call"] = None if first_graph is None else first_graph + 1
            res["time_to_first_graph_s"] = None if first_graph is None else sum(call_times[:first_graph + 1])
            res["stats_warm"] = self._stats()
        res["phase"] = "timed"

    def window(self, timed=True):
        """One window of at least ``window`` seconds of step time (and two steps); an untimed
        one only warms up (a graph's first runs instantiate functions and kernels)."""
        if self.fn is None:
            return
        try:
            n_total, t_total, steps, wall0 = 0, 0.0, 0, time.perf_counter()
            while steps < 2 or (t_total < self.cfg["window"] and time.perf_counter() - wall0 < 4 * self.cfg["window"]):
                _, n, dt, _ = self.call()
                n_total += n
                t_total += dt
                steps += 1
            self.res["calls"] += steps
            if timed:
                self.res["windows"].append(n_total / t_total)
                self.res["step_ms"].append(1000 * t_total / steps)
        except Exception as exc:  # recorded, reported in the table
            self.res["error"] = _short(exc)
            self.fn = None

    def finish(self):
        """The record, with what Janus and tf.function did over the whole run."""
        res = self.res
        res["throughput"] = statistics.median(res["windows"]) if res["windows"] else None
        if self.fn is not None and res["windows"]:
            res["phase"] = "done"
        if self.janus and "stats_warm" in res:
            import janus

            stats = res["stats"] = janus.stats(self.fn or self.trainer.train_step)
            warm = res["stats_warm"]
            res["timed_graph_share"] = (stats["graph_calls"] - warm["graph_calls"]) / max(stats["calls"] - warm["calls"], 1)
            res["reasons"] = {}
            explanation = janus.explain(self.trainer.train_step)
            res["xla"] = [e.xla.describe(e.graph.xla_ops) for e in explanation.entries if e.xla is not None]
            for k, v in explanation.reasons.items():
                k = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(k)).split())[:240]
                res["reasons"][k] = res["reasons"].get(k, 0) + v
        if self.mode == "tf.function" and self.fn is not None:
            res["traces"] = self.fn.experimental_get_tracing_count()
        return res


def worker(args):
    """``--worker MODE``: one (example, mode) alone, for its checks, warm-up and peak memory.
    ``--worker interleaved``: all modes of one example in one process, their timed windows
    interleaved (each window's modes in a rotating order), for throughput and ratios."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path[:0] = [EXAMPLES_DIR, HERE]
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    # warm TensorFlow up once so the first example does not pay for it
    tf.function(lambda x: tf.reduce_sum(x * 2.0))(tf.ones([4]))
    cfg = {"check_steps": args.check_steps, "window": args.window}
    name = args.examples
    modes = args.modes.split(",") if args.worker == "interleaved" else [args.worker]
    # All trainers are built before any runs: building one seeds TensorFlow, which clears its
    # caches, and a graph function whose cached instance was cleared is optimized again at its
    # next call (about a second for the tree models' graphs).
    runs = [Run(name, mode, cfg) for mode in modes]
    for run in runs:
        run.prepare()
    for run in runs:
        run.window(timed=False)
    # The modes share one heap: what their builds and warm-ups left is frozen out of the
    # garbage collector's scans, and each window starts collected, so that no mode pays
    # for another's garbage.
    gc.collect()
    gc.freeze()
    windows = args.windows if args.worker == "interleaved" else MEMORY_WINDOWS
    for w in range(windows):
        for k in range(len(runs)):
            gc.collect()
            runs[(w + k) % len(runs)].window()
    for run in runs:
        res = run.finish()
        if args.worker != "interleaved":
            res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        gc.collect()
        with open(args.out, "a") as f:
            f.write(json.dumps(res) + "\n")
        speed = f"{res['throughput']:9.1f} ex/s" if res.get("throughput") else "     --     "
        print(f"  {args.worker:12s} {res['mode']:12s} {name:10s} {speed}  {res['error'] or ''}", flush=True)


# ---------------------------------------------------------------------------------------------
# parent: spawn workers, check, tabulate, write docs
# ---------------------------------------------------------------------------------------------

def run_worker(kind, example, modes, args, log):
    """Run one worker process (``kind`` a mode, or ``interleaved`` for ``modes``) on
    ``example``; a mode it did not report (the process died) is recorded as an error."""
    with tempfile.NamedTemporaryFile("r", suffix=".jsonl", delete=False) as out:
        path = out.name
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--examples", example,
           "--modes", ",".join(modes), "--out", path, "--check-steps", str(args.check_steps),
           "--windows", str(args.windows), "--window", str(args.window)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    try:
        returncode = subprocess.run(cmd, stderr=log, env=env, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        returncode = "timeout"
    results = {}
    with open(path) as f:
        for line in f:
            res = json.loads(line)
            results[res["mode"]] = res
    os.unlink(path)
    for mode in modes:
        if mode not in results:
            results[mode] = {"example": example, "mode": mode, "phase": "?", "windows": [],
                             "error": f"{kind} worker process died (exit {returncode}); see the log"}
            print(f"  {kind:12s} {mode:12s} {example:10s} worker died (exit {returncode})", flush=True)
    return results


def _add_round(per_mode, example, res):
    """Record one interleaved round of one (example, mode) on its record from the process
    that ran it alone (checks, warm-up, memory): its windows and their median."""
    first = per_mode[example]
    first.setdefault("round_windows", []).append(res.get("windows") or [])
    first.setdefault("round_throughputs", []).append(res.get("throughput"))
    if res.get("error") and not first.get("error"):
        first["error"] = res["error"]


def paired_ratios(a, b):
    """Round by round, the median over the round's interleaved windows of ``a``'s window
    over ``b``'s window next to it (rounds where both ran)."""
    out = []
    for wa, wb in zip(a.get("round_windows", []), b.get("round_windows", [])):
        pairs = [x / y for x, y in zip(wa, wb) if x and y]
        if pairs:
            out.append(statistics.median(pairs))
    return out


def round_ratios(row, mode, ref):
    """``mode``'s throughput over ``ref``'s, round by round."""
    a, b = row["modes"].get(mode), row["modes"].get(ref)
    if not (a and b and a["valid"] and b["valid"]):
        return []
    return paired_ratios(a["raw"], b["raw"])


def check(res, ref):
    """Verdict of a mode's run against eager's: (valid, short, detail)."""
    import numpy as np

    if res.get("error") and not res.get("losses"):
        return False, "error", res["error"]
    if not ref or not ref.get("losses"):
        return True, "unchecked", "no eager reference"
    a, b = np.array(ref["losses"]), np.array(res.get("losses", []))
    n = min(len(a), len(b))
    close = np.isclose(b[:n], a[:n], rtol=RTOL, atol=ATOL)
    if not close.all():
        k = int(np.argmin(close))
        rel = abs(b[k] - a[k]) / max(abs(a[k]), 1e-12)
        return False, "wrong losses", f"loss of step {k + 1} is {b[k]:.6g}, eager's {a[k]:.6g} (relative difference {rel:.1e})"
    problems = []
    ref_len, got_len = ref["state"]["list_lengths"], res["state"]["list_lengths"]
    for k, v in ref_len.items():
        if got_len.get(k) != v:
            problems.append(f"`{k}` has {got_len.get(k)} entries, eager's {v}")
    leaked = [p for p in res["state"]["symbolic"] if p not in ref["state"]["symbolic"]]
    if leaked:
        problems.append("graph tensors leaked into Python state: " + ", ".join(f"`{p}`" for p in leaked))
    if problems:
        return False, "wrong Python state", "; ".join(problems)
    if res.get("error"):
        return False, "error", res["error"]
    return True, "ok", f"first {n} losses match eager's (rtol {RTOL:g})"


def machine():
    info = {"python": platform.python_version(), "platform": platform.platform(), "cores": os.cpu_count()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                info["cpu"] = line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        mem = open("/proc/meminfo").readline().split()[1]
        info["memory_gb"] = round(int(mem) / 2**20, 1)
    except OSError:
        pass
    out = subprocess.run([sys.executable, "-c", "import tensorflow as tf, numpy as np, keras; "
                          "print(tf.__version__, np.__version__, keras.__version__, "
                          "len(tf.config.list_physical_devices('GPU')))"],
                         capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    try:
        info["tensorflow"], info["numpy"], info["keras"], gpus = out.stdout.split()
        info["gpus"] = int(gpus)
    except ValueError:
        pass
    try:
        info["commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def fmt_speed(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def summarize(results, examples):
    """Per example: throughputs, speedups and verdicts of each mode."""
    rows = []
    for ex in examples:
        ref = results["eager"].get(ex) if "eager" in results else None
        row = {"example": ex, "modes": {}}
        base = ref.get("throughput") if ref else None
        for mode in results:
            res = results[mode].get(ex)
            if res is None:
                continue
            valid, short, detail = (True, "reference", "") if mode == "eager" else check(res, ref)
            if mode == "eager" and res.get("error"):
                valid, short, detail = False, "error", res["error"]
            tp = res.get("throughput")
            row["modes"][mode] = {"valid": valid and tp is not None, "verdict": short, "detail": detail,
                                  "throughput": tp, "speedup": tp / base if tp and base else None, "raw": res}
        rows.append(row)
    return rows


def speed_cell(m):
    if m is None:
        return "--"
    if not m["valid"]:
        return f"✗ {m['verdict']}"
    s = fmt_speed(m["throughput"])
    return f"{s} ({m['speedup']:.1f}×)" if m["speedup"] is not None and m["raw"]["mode"] != "eager" else s


def janus_cells(m):
    if m is None:
        return "--", "--"
    r = m["raw"]
    if "stats" not in r:
        return "--", "--"
    ttfg = r.get("time_to_first_graph_s")
    first = f"{ttfg:.2f} s (call {r['first_graph_call']})" if ttfg is not None else f"none in {r['warmup_calls']} calls"
    s = r["stats"]
    share = f"{s['graph_calls']}/{s['calls']} ({100 * s['graph_calls'] / max(s['calls'], 1):.0f}%)"
    if s["conversions"] > 3:
        share += f", {s['conversions']} conversions"
    return first, share


def table(rows, modes):
    head = ["example", "batch"] + [MODE_LABELS[m] + " (ex/s)" for m in modes]
    if "janus" in modes:
        head += ["Janus: time to first graph", "Janus: calls run as graphs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        batch = "--"
        ref = row["modes"].get("eager") or next(iter(row["modes"].values()), None)
        if ref:
            batch = BATCH_DESC.get(row["example"], "")
        cells = [row["example"], batch] + [speed_cell(row["modes"].get(m)) for m in modes]
        if "janus" in modes:
            cells += list(janus_cells(row["modes"].get("janus")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


RATIOS = [("janus", "eager"), ("janus", "handwritten"), ("janus+xla", "janus"), ("tf.function", "handwritten")]


def ratio_table(rows):
    """Median and spread over rounds of the ratios that matter; ~ where the spread crosses 1.0."""
    head = [f"{MODE_LABELS[a]} / {MODE_LABELS[b]}" for a, b in RATIOS]
    lines = ["| example | " + " | ".join(head) + " |", "|" + "---|" * (len(head) + 1)]
    for row in rows:
        cells = []
        for a, b in RATIOS:
            r = round_ratios(row, a, b)
            if not r:
                cells.append("--")
                continue
            flag = " ~" if b != "eager" and min(r) < 1.0 < max(r) else ""
            cells.append(f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f}){flag}")
        lines.append(f"| {row['example']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reuse_table(rows):
    """Janus with common-subtree reuse against Janus without, on the tree examples."""
    lines = ["| example | Janus with reuse (ex/s) | with reuse / without (median, spread) | nodes walked | nodes computed "
             "| first losses vs eager's |", "|---|---|---|---|---|---|"]
    for row in rows:
        m = row["modes"].get("janus+reuse")
        if m is None:
            continue
        r = paired_ratios(m["raw"], row["modes"].get("janus", {}).get("raw", {}))
        ratio = f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})" if r else "--"
        stats = m["raw"].get("stats", {})
        lines.append(f"| {row['example']} | {fmt_speed(m['throughput']) if m['throughput'] else '--'} | {ratio} | "
                     f"{stats.get('tree_nodes', '--')} | {stats.get('tree_nodes_computed', '--')} | "
                     f"{m['verdict']}: {m['detail']} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def memory_table(rows, modes):
    """Peak resident memory of each (example, mode) process, and what Janus's cache holds."""
    head = [MODE_LABELS[m] + " (MB)" for m in modes] + ["Janus cache: graphs, constants"]
    lines = ["| example | " + " | ".join(head) + " |", "|" + "---|" * (len(head) + 1)]
    for row in rows:
        cells = []
        for m in modes:
            got = row["modes"][m]["raw"].get("peak_rss_mb") if m in row["modes"] else None
            cells.append(f"{got:,.0f}" if got else "--")
        stats = row["modes"].get("janus", {}).get("raw", {}).get("stats")
        cells.append(f"{stats['cache_entries']}, {stats.get('cache_constant_bytes', 0) / 1024:,.1f} KB"
                     if stats else "--")
        lines.append(f"| {row['example']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


BATCH_DESC = {
    "lenet": "32 images", "resnet": "32 images", "inception": "32 images", "lstm": "16 sequences",
    "lm": "16 sequences", "treernn": "4 trees", "treelstm": "4 trees", "a3c": "≤20 transitions",
    "ppo": "64 transitions", "gan": "64 images", "pix2pix": "16 image pairs",
    "dcgan": "64 images", "vae": "≤64 images",
}


def chart(rows, modes, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    others = [m for m in modes if m != "eager"]
    colors = {"janus": "#1f77b4", "janus+xla": "#9467bd", "tf.function": "#ff7f0e", "handwritten": "#2ca02c"}
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows) + 2), 4.2))
    width = 0.8 / max(len(others), 1)
    for j, mode in enumerate(others):
        ax.bar([0], [0], 0, color=colors[mode], label=MODE_LABELS[mode])  # legend entry
        for i, row in enumerate(rows):
            m = row["modes"].get(mode)
            x = i + (j - (len(others) - 1) / 2) * width
            if m and m["valid"] and m["speedup"]:
                ax.bar(x, m["speedup"], width, color=colors[mode])
                ax.text(x, m["speedup"] * 1.04, f"{m['speedup']:.1f}", ha="center", va="bottom", fontsize=6)
            elif m:
                ax.text(x, 1.05, "✗", ha="center", va="bottom", color=colors[mode], fontsize=9, fontweight="bold")
    ax.legend(fontsize=8, loc="upper left")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylim(bottom=min([0.5] + [m["speedup"] * 0.7 for r in rows for m in r["modes"].values()
                                    if m["valid"] and m["speedup"]]))
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["example"] for r in rows], rotation=30)
    ax.set_ylabel("training throughput / eager's (log scale)")
    ax.set_title("Speedup over eager of train_step (✗: results differ from eager's or error)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def findings(rows, modes):
    """Per example and mode: the correctness verdict and what was seen."""
    out = []
    for mode in modes:
        if mode == "eager":
            continue
        out.append(f"\n### {MODE_LABELS[mode]}\n")
        for row in rows:
            m = row["modes"].get(mode)
            if m is None:
                continue
            r = m["raw"]
            note = f"- **{row['example']}**: {m['verdict']} — {m['detail']}"
            if mode == "tf.function" and r.get("traces") is not None:
                note += f"; traced {r['traces']} time{'s' if r['traces'] != 1 else ''} in {r.get('calls', '?')} calls"
            if mode in JANUS_MODES and r.get("reasons"):
                note += "; eager calls: " + ", ".join(f"{k} (×{v})" for k, v in r["reasons"].items())
            if mode in JANUS_MODES and r.get("xla"):
                note += "; XLA: " + " / ".join(sorted(set(r["xla"])))
            if r.get("error") and m["verdict"] != "error":
                note += f"; error later: {r['error']}"
            out.append(note)
    return "\n".join(out)


def summary(rows, modes):
    """A few sentences computed from the results."""
    out = []
    for mode in modes:
        if mode == "eager":
            continue
        ups = [r["modes"][mode]["speedup"] for r in rows if mode in r["modes"] and r["modes"][mode]["valid"]
               and r["modes"][mode]["speedup"]]
        bad = [r["example"] for r in rows if mode in r["modes"] and not r["modes"][mode]["valid"]]
        slow = [r["example"] for r in rows if mode in r["modes"] and r["modes"][mode]["valid"]
                and r["modes"][mode]["speedup"] and r["modes"][mode]["speedup"] < 1]
        line = f"- **{MODE_LABELS[mode]}**: "
        if ups:
            line += (f"valid on {len(ups)} of {len(ups) + len(bad)} examples, speedup over eager "
                     f"{min(ups):.1f}× to {max(ups):.1f}× (median {statistics.median(ups):.1f}×)")
        if slow:
            line += f"; slower than eager on {', '.join(slow)}"
        if bad:
            line += f"; results differ from eager's or failed on {', '.join(bad)}"
        out.append(line + ".")
    return "\n".join(out)


def write_docs(path_md, path_png, rows, modes, args, info, started, elapsed):
    rel_png = os.path.relpath(path_png, os.path.dirname(path_md))
    warm = ["| example | Janus: eager calls before first graph | Janus: conversions | Janus graph share (timed windows) "
            "| tf.function: first call (trace) | tf.function: traces | hand-written: first call |",
            "|---|---|---|---|---|---|---|"]
    for row in rows:
        j, t, h = (row["modes"].get(m) for m in ("janus", "tf.function", "handwritten"))
        jr, tr, hr = (m["raw"] if m else {} for m in (j, t, h))
        fg = jr.get("first_graph_call")
        warm.append("| " + " | ".join([
            row["example"],
            f"{fg - 1}" if fg else "--",
            str(jr["stats"]["conversions"]) if "stats" in jr else "--",
            f"{100 * jr['timed_graph_share']:.0f}%" if "timed_graph_share" in jr else "--",
            f"{tr['first_call_s']:.2f} s" if "first_call_s" in tr else "--",
            str(tr.get("traces", "--")),
            f"{hr['first_call_s']:.2f} s" if "first_call_s" in hr else "--"]) + " |")
    text = f"""# Benchmarks: eager, Janus, tf.function and hand-written graphs

Generated by `benchmarks/run_all.py` — do not edit by hand; rerun the command.

- **Command**: `{args.command}`
- **Date**: {started:%Y-%m-%d %H:%M} UTC; the run took {elapsed / 60:.1f} minutes.
- **Machine**: {info.get('cores')} cores ({info.get('cpu', '?')}), {info.get('memory_gb', '?')} GB RAM, \
{'no GPU' if not info.get('gpus') else str(info.get('gpus')) + ' GPU(s)'}; {info.get('platform')}.
- **Software**: Python {info.get('python')}, TensorFlow {info.get('tensorflow', '?')} (CPU), \
Keras {info.get('keras', '?')}, numpy {info.get('numpy', '?')}; Janus at commit `{info.get('commit', '?')}` \
(plus any uncommitted work in the tree).
- **Settings**: {args.rounds} round(s) per example, each one process timing all modes in {args.windows} \
interleaved windows of ≥ {args.window:g} s of step time per mode; correctness over the first {args.check_steps} steps.

## Training throughput

Examples per second of `train_step` (median over rounds of each mode's median window in the
round; × = speedup over eager in the same run). "✗" marks a mode whose results differ from eager's (see below): its speed is
not a valid comparison and is not shown.

{table(rows, modes)}

{summary(rows, modes)}

![Speedup over eager per example]({rel_png})

## Ratios across rounds

Each ratio is taken window by window between the two modes' interleaved windows of one
round (median over the round's windows), then the median and the spread (min-max over the
{args.rounds} rounds) are shown.
"~" marks a comparison with the hand-written graph whose spread crosses 1.0: within noise,
neither is shown to be faster.

{ratio_table(rows)}

## Closing the gaps

The LSTM was the one example below 0.95× its hand-written graph (0.83 in the run of
2026-11-23 19:23 UTC, 0.73-0.93 over rounds). In one process, alternating 40-step windows
of the two, the time went to the graph, not to Janus's Python side (guard check 0.01 ms,
inputs 0.00 ms of a 3-5 ms step): once the epoch's short last batch had made Janus relax
the batch dimension, the graph with a symbolic batch served every call — 1,973 ops
against the hand-written graph's 1,400, 5.0 against 3.8 ms per run of the bare concrete
functions (the hand-written step is traced once per batch shape, static shapes). Before
the first short batch the two were equal (1,404 ops; 3.05 against 3.08 ms). Janus now
keeps the graph specialized on the full batch and looks shape-specialized graphs up
before relaxed ones: full batches run the static graph, the short batch the general one
(`docs/architecture.md`, shapes).

## Peak memory

Peak resident memory (`ru_maxrss`) of the worker process that ran only that example in
that mode (its checks, warm-up and {MEMORY_WINDOWS} windows): TensorFlow, the example's model and data, and the mode's
own machinery. The last column is what Janus's cache held at the end of the run: how many
graphs, and the bytes of the constants they captured (`janus.stats(f)["cache_constant_bytes"]`).

{memory_table(rows, modes)}

## Common-subtree reuse

The tree examples once more through Janus with `JANUS_SUBTREE_REUSE=1` (set while that
trainer converts), one more mode interleaved with the others: nodes whose whole subtree (cases, words, children) is identical within
one call are computed once (`docs/recursion.md`). Nodes walked and computed are summed over
the calls the cached graph served (`janus.stats`). Reuse is off by default: it sums
gradients in another order than eager (results agree to round-off, not bitwise).

{reuse_table(rows) or "(not run: no tree example or no Janus mode in this run)"}

## What is measured

- **Modes.** *eager*: the example's trainer as written. *Janus*: `common.maybe_janus(trainer, True)`,
  i.e. `trainer.train_step = janus.function(trainer.train_step)`; XLA left to measurement, which
  the examples' global seed turns off (`docs/xla.md`). *Janus with XLA*: the same with
  `JANUS_JIT_COMPILE=1`: the pure ops that run before each graph's first state write are
  compiled in XLA clusters, assertions and writes stay outside. *tf.function*:
  `trainer.train_step = tf.function(trainer.train_step)` on the same unmodified trainer
  (AutoGraph on, the default). *hand-written*: `benchmarks/handwritten/<example>.py`, the same
  model and loss written by hand in graph style (below). Every (example, mode) first runs alone
  in a process of its own (checks, warm-up, memory). Then, per round, one process per example
  builds all modes (before warming any up: building a trainer seeds TensorFlow, which clears
  its caches, and a cleared graph function is optimized again at its next call), warms them
  up, runs one untimed window of each (a graph's first runs instantiate its functions and
  kernels) and times them in interleaved windows, rotating the order; the heap the builds left is
  frozen out of the garbage collector and each window starts collected. Two processes of the
  same program on this machine run at speeds up to 50% apart, so modes timed in separate
  processes (as this benchmark did before) gave ratios that flipped from run to run. Compare
  numbers only within one run.
- **Timer.** Only `train_step` is timed: `next_batch()` (data, and in the RL examples the
  environment rollouts) runs outside the timer, then `float(train_step(*batch))` is timed (the
  `float` waits for the result). Examples/s of a window = batch rows in the window / summed step
  time; an example is an image, a sequence, a tree or a rollout transition. The reported number is
  the median over the windows.
- **Warm-up.** Every mode first runs {args.check_steps} steps that are checked against eager (below) and not
  timed. Janus then keeps stepping until three calls in a row ran as graphs, or until it made no new
  conversion for five calls (at most {MAX_WARMUP_CALLS} calls): it profiles the first calls eagerly,
  converts, then runs graphs — or, where graphs do not get reused, converts until its conversion
  budget is spent and then runs eagerly. In the interleaved process every mode then runs one untimed
  window; the timed windows measure the steady state. Time to first graph = summed wall
  time of the calls up to and including the first call that ran as a graph (profiling +
  conversion + first graph run), read from `janus.stats` after every call. Calls run as graphs =
  `graph_calls / calls` of `janus.stats` over the whole run (warm-up included); a large number of
  conversions means that Janus specialized a new graph for most calls instead of reusing one.
- **Correctness.** The losses of the first {args.check_steps} steps of each mode are compared with eager's
  from the same seed (rtol {RTOL:g}, atol {ATOL:g}); then the trainer's Python state is compared:
  the lengths of its list attributes (monitoring histories) and any graph tensor leaked into Python
  state (found by walking the trainer's attributes). A mode that fails either check is marked
  ✗ instead of getting a speed.
- **Noise.** The machine is shared and small; numbers vary from run to run by 10–20% or more,
  especially for steps of about 1 ms, where Python and dispatch overhead dominate.

## Warm-up and tracing

{chr(10).join(warm)}

## Correctness findings
{findings(rows, modes)}

## The hand-written graph versions

`benchmarks/handwritten/<example>.py` builds the example's own trainer (same seed, so the same
initial weights, optimizer and data iterator) and replaces `train_step` with one `tf.function`
written graph-style by hand: a fixed `input_signature` with `None` batch dimensions (the short
last batch of an epoch does not retrace), AutoGraph off, and Python-side state passed explicitly —
the LM's recurrent state goes in and comes out of the step, monitoring values (GAN/pix2pix
histories, A3C entropy, PPO clip fraction) are returned and appended by the caller. Weights and
optimizer slots stay `tf.Variable`s. The examples' Keras layers are reused. Specific choices:
`lstm` unrolls its fixed 20 time steps; `lm` runs a `tf.while_loop` over a `TensorArray` so
that one graph serves every window length; `treernn` and `treelstm` flatten the batch's Python
trees (in Python, inside the timed step) and compute all leaves in one batch and then all nodes of
one tree level in one batch, level by level (the Cavs idea of batching across nodes and trees),
unrolled over the maximum height of 6 — a different schedule of the same arithmetic, not a
recursion in the graph. Their losses agree with eager's within round-off.
"""
    with open(path_md, "w") as f:
        f.write(text)


def _extra(example, modes):
    return ["janus+reuse"] if "janus" in modes and example in REUSE_EXAMPLES else []


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--examples", help="comma-separated subset (default: all; --quick: %s)" % ",".join(QUICK_EXAMPLES))
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="smoke run: a subset, short windows, no docs")
    parser.add_argument("--windows", type=int, default=None, help="timed windows per mode and round (default 5, --quick 3)")
    parser.add_argument("--window", type=float, default=None, help="seconds of step time per window (default 0.5, --quick 0.2)")
    parser.add_argument("--check-steps", type=int, default=6, help="steps compared with eager (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved timing processes per example; medians and spreads over rounds "
                             "(default 3, --quick 1)")
    parser.add_argument("--docs", default=None, help="write the markdown here (default docs/benchmarks.md; none with --quick)")
    parser.add_argument("--no-docs", action="store_true", help="print the table only")
    parser.add_argument("--json", help="also write all raw results to this file")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per worker process")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.windows is None:
        args.windows = 3 if args.quick else 5
    if args.window is None:
        args.window = 0.2 if args.quick else 0.5
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.worker:
        return worker(args)

    if importlib.util.find_spec("matplotlib") is None:
        sys.exit("run_all.py: matplotlib is not installed (pip install matplotlib); it draws docs/benchmarks.png")
    examples = args.examples.split(",") if args.examples else (QUICK_EXAMPLES if args.quick else EXAMPLES)
    unknown = [e for e in examples if e not in EXAMPLES]
    if unknown:
        sys.exit(f"run_all.py: unknown examples {unknown}; choose from {','.join(EXAMPLES)}")
    modes = [m for m in MODES if m in args.modes.split(",")]
    if "eager" not in modes:
        sys.exit("run_all.py: the eager mode is the reference and cannot be left out")
    write = not args.no_docs and (args.docs is not None or not args.quick)
    md = args.docs or os.path.join(ROOT, "docs", "benchmarks.md")
    png = os.path.splitext(md)[0] + ".png"
    args.command = ".venv/bin/python benchmarks/run_all.py" + "".join(" " + a for a in (argv if argv is not None else sys.argv[1:]))

    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    log_path = os.path.join(tempfile.gettempdir(), "janus-run_all.log")
    print(f"{len(examples)} examples x {len(modes)} modes, {args.rounds} round(s); worker stderr in {log_path}", flush=True)
    results = {m: {} for m in modes}
    with open(log_path, "w") as log:
        for ex in examples:  # alone: checks, warm-up, peak memory
            for mode in modes + _extra(ex, modes):
                results.setdefault(mode, {}).update({ex: run_worker(mode, ex, [mode], args, log)[mode]})
        for _ in range(args.rounds):  # together: throughput
            for ex in examples:
                for mode, res in run_worker("interleaved", ex, modes + _extra(ex, modes), args, log).items():
                    _add_round(results[mode], ex, res)
    for per_mode in results.values():
        for res in per_mode.values():
            done = [t for t in res["round_throughputs"] if t is not None]
            res["throughput"] = statistics.median(done) if done else None
    elapsed = time.perf_counter() - t0
    rows = summarize(results, examples)
    print()
    print(table(rows, modes))
    print()
    print(ratio_table(rows))
    print()
    print(memory_table(rows, modes))
    print()
    print(reuse_table(rows))
    print(findings(rows, modes))
    print(f"\n{elapsed / 60:.1f} minutes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if write:
        os.makedirs(os.path.dirname(md), exist_ok=True)
        chart(rows, modes, png)
        write_docs(md, png, rows, modes, args, machine(), started, elapsed)
        print(f"wrote {os.path.relpath(md)} and {os.path.relpath(png)}")


if __name__ == "__main__":
    main()
