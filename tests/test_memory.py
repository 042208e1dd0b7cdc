"""What a conversion keeps is released with what it belongs to (issue #39: memory flat
across conversions).

A Janus function made anew every epoch, ``janus.reset`` and re-conversion, a function the
take-over made: once nothing of the user's refers to them, their graphs (concrete
function, ``FuncGraph``, the function in TensorFlow's context), generated code and
records are collected.  Deterministic: weak references and counts, never RSS (the
numbers are in ``benchmarks/memory.py`` and ``docs/memory.md``).
"""
from __future__ import annotations

import gc
import importlib
import linecache
import sys
import textwrap
import weakref

import pytest
import tensorflow as tf

import janus
from janus import introspect
from janus.convert import pipeline
from janus.driver.function import JanusFunction
from janus.takeover import hook, redirect


def _collect() -> None:
    for _ in range(3):  # a finalizer run by one collection may free a cycle for the next
        gc.collect()


def make_step(w):
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * w)
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss
    return step


def _converted(jf: JanusFunction, x) -> JanusFunction:
    for _ in range(8):
        jf(x)
        if janus.stats(jf)["graph_calls"]:
            return jf
    raise AssertionError(f"never ran as a graph: {janus.explain(jf)}")


def _context_functions() -> set[str]:
    from tensorflow.python.eager import context
    return set(context.context().list_function_names())


def test_a_janus_function_dropped_frees_its_graphs_and_generated_code():
    w, x = tf.Variable([1.0, 2.0]), tf.constant([3.0, 4.0])
    jf = _converted(janus.function(make_step(w)), x)
    concrete = jf.entries[0].graph.concrete
    names = {concrete.function_def.signature.name}
    dead = [weakref.ref(o) for o in (jf, jf.python_function, jf.entries[0], concrete, concrete.graph,
                                     pipeline._fn_cache[jf.python_function])]
    assert names <= _context_functions()
    del jf, concrete
    _collect()
    assert [r() for r in dead] == [None] * len(dead)
    assert not names & _context_functions()  # TensorFlow's context let go of the function too


def test_a_janus_function_dropped_frees_its_graphs_at_once_without_the_collector():
    """Nothing of a Janus function refers back to it: reference counting frees it, its
    concrete function and its function in TensorFlow's context as soon as the user lets
    go, as ``tf.function``'s are; a cycle kept them (and the native memory behind them)
    until Python's next full collection, tens of epochs later."""
    w, x = tf.Variable([1.0, 2.0]), tf.constant([3.0, 4.0])
    jf = _converted(janus.function(make_step(w)), x)
    concrete = jf.entries[0].graph.concrete
    name = concrete.function_def.signature.name
    dead = [weakref.ref(o) for o in (jf, jf.entries, jf.entries[0], jf.conversion, jf.profiler, concrete,
                                     pipeline._fn_cache[jf.python_function])]  # the converted function too
    _collect()
    gc.disable()
    try:
        del jf, concrete
        assert [r() for r in dead] == [None] * len(dead)
        assert name not in _context_functions()
    finally:
        gc.enable()


def test_a_conversion_leaves_no_cycle_of_its_own_for_the_collector():
    """The trace's context (its guard builder, heap model, the profile its speculator read)
    and an entry's guard code go by reference counting, when the trace ends and when the
    entry is dropped: only TensorFlow's own ``FuncGraph`` waits for the collector, as with
    ``tf.function``."""
    from janus.trace.context import TraceContext
    w, x = tf.Variable([1.0, 2.0]), tf.constant([3.0, 4.0])
    jf = janus.function(make_step(w))
    _collect()
    gc.disable()
    try:
        _converted(jf, x)
        assert not [o for o in gc.get_objects() if isinstance(o, TraceContext)]
        graph = jf.entries[0].graph
        dead = [weakref.ref(graph.check), weakref.ref(graph.inputs)]
        del graph
        janus.reset(jf)
        assert [r() for r in dead] == [None, None]
    finally:
        gc.enable()


def test_calls_keep_none_of_their_inputs_for_the_collector():
    """The batches a program feeds go when it lets go of them, through the profiled calls,
    the conversion and the graph calls alike (a cycle in the walk over the arguments kept
    every call's input tensors until the next full collection)."""
    w = tf.Variable([1.0, 2.0])
    jf = janus.function(make_step(w))
    _collect()
    gc.disable()
    try:
        dead = []
        for i in range(6):
            x = tf.constant([3.0, float(i)])
            jf(x)
            dead.append(weakref.ref(x))
            del x
        assert janus.stats(jf)["graph_calls"], janus.explain(jf)
        assert [r() for r in dead] == [None] * len(dead)
    finally:
        gc.enable()


def test_a_new_janus_function_per_epoch_keeps_nothing_of_the_old_ones():
    w, x = tf.Variable([1.0, 2.0]), tf.constant([3.0, 4.0])
    before = len(_context_functions())
    dead = []
    for _ in range(4):
        step = _converted(janus.function(make_step(w)), x)
        dead.append(weakref.ref(step.entries[0].graph.concrete))
    del step
    _collect()
    assert [r() for r in dead] == [None] * 4
    assert len(_context_functions()) <= before


def make_logging_step(w, log):
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * w) ** 2
        log.append(float(loss.numpy()))  # a graph break: the function is split into segments
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss
    return step


def test_a_split_function_dropped_frees_its_segments_and_their_graphs():
    w, x, log = tf.Variable([1.0, 2.0]), tf.constant([0.1, 0.2]), []
    dead = []
    for _ in range(2):
        jf = janus.function(make_logging_step(w, log))
        for _ in range(12):
            jf(x)
        segments = [c.function for c in jf.split.calls]
        concretes = [e.graph.concrete for s in segments for e in s.entries]
        assert concretes, janus.explain(jf)
        dead += [weakref.ref(o) for o in [jf, jf.split] + segments + concretes]
        del segments, concretes
    del jf
    _collect()
    assert [r() for r in dead] == [None] * len(dead)


def test_a_split_function_dropped_goes_without_the_collector():
    """A segment refers to the function it is a segment of weakly, and its call back into
    the split too: the split function, its segments and their graphs go at once."""
    w, x, log = tf.Variable([1.0, 2.0]), tf.constant([0.1, 0.2]), []
    jf = janus.function(make_logging_step(w, log))
    for _ in range(12):
        jf(x)
    segments = [c.function for c in jf.split.calls]
    assert segments[0].segment_of is jf
    dead = [weakref.ref(o) for o in [jf, jf.split] + segments + [e.graph.concrete for s in segments for e in s.entries]]
    _collect()
    gc.disable()
    try:
        del jf, segments
        assert [r() for r in dead] == [None] * len(dead)
    finally:
        gc.enable()


def test_reset_frees_the_graphs_it_drops_and_the_function_converts_again():
    w, x = tf.Variable([1.0, 2.0]), tf.constant([3.0, 4.0])
    jf = _converted(janus.function(make_step(w)), x)
    dead = []
    for _ in range(3):
        dead.append(weakref.ref(jf.entries[0].graph.concrete))
        janus.reset(jf)
        _converted(jf, x)
    _collect()
    assert [r() for r in dead] == [None] * 3
    assert janus.stats(jf)["cache_entries"] == 1 and "graph 0:" in str(janus.explain(jf)), \
        f"reset dropped the old graphs; the last _converted built exactly one: {janus.stats(jf)}"


def test_conversions_leave_no_linecache_entries():
    w, x = tf.Variable([1.0, 2.0]), tf.constant([3.0, 4.0])
    _converted(janus.function(make_step(w)), x)        # the user's file is read once
    before = set(linecache.cache)
    for _ in range(3):
        _converted(janus.function(make_step(w)), x)
    assert set(linecache.cache) == before


# ------------------------------------------------------------------ what the take-over made
def test_a_function_take_over_made_is_freed_with_its_janus_function():
    w, x = tf.Variable([1.0, 2.0]), tf.constant([3.0, 4.0])
    fn = make_step(w)
    jf = _converted(hook.take_over(fn), x)           # the script rewrite's decorator
    assert janus.stats(fn)["graph_calls"]            # the history answers for the function
    dead = [weakref.ref(fn), weakref.ref(jf), weakref.ref(jf.entries[0].graph.concrete)]
    del fn, jf
    _collect()
    assert [r() for r in dead] == [None] * 3
    assert "make_step.<locals>.step" not in hook.taken_over()


CLOSURE_MODULE = """
import tensorflow as tf


def make_step(w):
    def step(x):                       # a closure made anew each epoch: the running take-over finds it
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) ** 2
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss
    return step
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("JANUS_TAKEOVER_SAMPLE_MS", "1")   # 3.11: the sampler finds short steps fast
    (tmp_path / "memory_user.py").write_text(textwrap.dedent(CLOSURE_MODULE))
    importlib.invalidate_caches()
    yield importlib.import_module("memory_user")
    hook.disable()
    sys.modules.pop("memory_user", None)


def test_closure_steps_the_running_take_over_found_each_epoch_are_freed(user_module):
    w, x = tf.Variable([1.0, 2.0]), tf.constant([1.0, 0.5])
    dead = []
    janus.enable()
    for _ in range(3):
        step = user_module.make_step(w)
        for _ in range(1000):                       # 3.11: until the sampler sees it run (a busy machine)
            step(x)
            if any(f is step for f in redirect.redirected()):
                break
        jf = introspect.janus_function_of(step)
        assert jf is not None, "the hook did not take the closure step over"
        dead += [weakref.ref(step), weakref.ref(jf)]
        del jf
    del step
    _collect()
    assert [r() for r in dead] == [None] * len(dead)
    assert not redirect.redirected()
