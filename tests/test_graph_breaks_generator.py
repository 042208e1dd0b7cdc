"""Random methods with graph breaks, eagerly and through Janus: they must agree.

Each program is generated from a seed: a class with state (a ``tf.Variable``, Python
numbers, a list log, a ``threading.Lock``) and a method ``f(self, x)`` of random nested
statements — tensor arithmetic on locals, Python int and float locals, ``if`` on tensor
and on Python conditions, ``for`` loops with ``break``/``continue``, ``with`` over the
object's lock or a ``tf.GradientTape`` (its ``gradient`` taken after it), ``try``/
``except ValueError``/``finally``, ``return`` and ``raise`` under conditions, variable
updates, attribute writes, appends and prints — with *break statements* placed at
random depth: NumPy on ``.numpy()`` of a tensor (a NumPy scalar statistic among them,
which later statements combine with tensors and Python numbers), a Python number taken from a tensor, a
call of a ``janus.do_not_convert`` helper that raises for some values, a print of a
NumPy array, a step of a Python environment (which draws noise: a Python island where the
graph holds it), the lock's ``with``; and locals bound under
a condition before a break and read after it (so unbound locals cross the break).
(a random draw with an op-level seed, a break too, is left to tests/test_graph_breaks.py: the
harness alternates eager and Janus calls, which would share TensorFlow's random state.)  The inputs change sign and size of
their values between calls, and so does a Python number in state.  The harness compares
results, exceptions (with their messages), printed output and state after every call.

A program Janus runs wholly eagerly is a gap; a different answer is not.  The test also
asserts that a good share of the programs were split at a break and ran graph segments.
This generator found a segment split again that ran without its eager version's
handling of unbound inputs and of what it raises, a ``tf.GradientTape`` returned by a
segment, locals a later binding inside a ``try`` left stale, and ``np.round`` of a
number the trace computes making the whole function eager (tests/test_graph_breaks.py).
"""
import dataclasses
import random
import types
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus import config
from janus.driver import segments
from harness import check, fresh_module, inline_segments

PROGRAMS = 120
PER_TEST = 40

_HEADER = '''\
import threading

import numpy as np

import janus


@janus.do_not_convert
def audit(value):
    if value > 2.5:
        raise ValueError(f"audit {value:.3f}")
    return round(value * 0.5, 4)


class Env:
    """A Python environment the step drives (NumPy state and noise): a Python island where
    the step's graph holds it (janus.lowering.islands), a break elsewhere."""

    def __init__(self):
        self.s = np.array([0.1, -0.2, 0.3], np.float32)
        self.rng = np.random.RandomState(4)

    def step(self, action):
        noise = self.rng.normal(0, 0.01, 3).astype(np.float32)
        self.s = (0.9 * self.s + 0.1 * np.float32(action) + noise).astype(np.float32)
        return self.s.copy(), float(self.s.sum())


class Prog:
    def __init__(self):
        self.env = Env()
        self.v = tf.Variable([0.5, -0.25, 1.0])
        self.n = 0
        self.k0 = 0
        self.rate = 1.0
        self.log = []
        self.lock = threading.Lock()

    def f(self, x):
'''

_BREAKS = [
    "s = float(np.sum(y.numpy()))",
    "self.log.append(np.round(float(tf.reduce_sum(y)), 4))",
    "s = s + audit(float(tf.reduce_max(y)))",
    "self.log.append(audit(abs(float(tf.reduce_mean(y)))))",
    "print('v', np.round(y.numpy(), 3))",
    "k = k + int(np.argmax(y.numpy()))",
    "self.rate = float(np.round(np.std(y.numpy()), 4)) + 1.0",
    "y = y + tf.constant(self.env.step(float(tf.reduce_mean(y)))[0])",
    "s = np.mean(np.abs(y.numpy()))",  # a NumPy float32, fed to the segments after the break
    "s = np.float32(np.sum(y.numpy())) * np.float32(0.5)",
    "s = np.float64(np.max(y.numpy()))",  # eager casts it to float32 where a tensor meets it
]


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.loops = 0
        self.breaks = 0
        self.tapes = 0
        self.cond_bound = 0
        self.locked = False

    def tcond(self) -> str:
        return self.r.choice(["tf.reduce_sum(y) > 0.0", "tf.reduce_max(x) > 0.3", "tf.reduce_mean(y) < 0.5",
                              "tf.reduce_sum(x) < -0.2"])

    def pcond(self, loop_var: str | None) -> str:
        options = ["k > 1", "k % 2 == 0", "self.k0 == 1", "self.n % 3 == 1"]
        if loop_var:
            options += [f"{loop_var} > 0", f"{loop_var} == 1"]
        return self.r.choice(options)

    def cond(self, loop_var: str | None) -> str:
        return self.tcond() if self.r.random() < 0.5 else self.pcond(loop_var)

    def brk(self, depth: int, loop_var: str | None, indent: str) -> list[str]:
        self.breaks += 1
        roll = self.r.random()
        if roll < 0.2:  # a local bound under a condition before the break, read after it
            self.cond_bound += 1
            w = f"w{self.cond_bound}"
            use = f"y = y + {w}"
            bind = self.r.choice([f"{w} = y * 0.5", f"{w} = tf.reduce_sum(x) * 2.0"])
            return [f"{indent}if {self.cond(loop_var)}:", f"{indent}    {bind}",
                    indent + self.r.choice(_BREAKS), indent + use]
        return [indent + self.r.choice(_BREAKS)]

    def block(self, depth: int, loop_var: str | None, in_loop: bool, in_tape: bool, indent: str,
              size: int = 0) -> list[str]:  # noqa: PLR0913
        out: list[str] = []
        for _ in range(size or self.r.randint(1, 3)):
            out += self.stmt(depth, loop_var, in_loop, in_tape, indent)
        return out

    def stmt(self, depth: int, loop_var: str | None, in_loop: bool, in_tape: bool, indent: str) -> list[str]:
        kinds = ["y", "y", "k", "s", "var", "n", "log", "print", "return", "raise", "brk", "brk"]
        if depth < 3:
            kinds += ["if", "if", "try"] + ([] if self.locked else ["lock"])  # a Lock is not reentrant
            if not in_tape and self.tapes < 2:
                kinds.append("tape")
        if depth < 2 and self.loops < 3:
            kinds.append("for")
        if in_loop:
            kinds += ["break", "continue"]
        kind = self.r.choice(kinds)
        inner = indent + "    "
        simple = {
            "y": self.r.choice(["y = y * 2.0 + x", "y = tf.tanh(y) + self.v", "y = y * 0.5 - x * self.rate",
                                "y = y - tf.reduce_mean(y) + float(k)", "y = y * 0.5 + s"]),
            "k": self.r.choice(["k = k + 1", "k = k * 2 - 1"]),
            "s": self.r.choice(["s = s + 0.5", "s = s * 1.5"]),
            "var": "self.v.assign_add(x * 0.1)",
            "n": "self.n += 1",
            "log": self.r.choice(["self.log.append(k)", "self.log.append(('s', s))", "self.log.append(self.n)"]),
            "print": self.r.choice(["print('k', k)", "print('n', self.n, s)"]),
        }
        if kind in simple:
            return [indent + simple[kind]]
        if kind == "brk":
            return self.brk(depth, loop_var, indent)
        exits = {"break": "break", "continue": "continue", "return": "return y, k, s",
                 "raise": "raise ValueError('raised ' + str(k))"}
        if kind in exits:
            return [f"{indent}if {self.cond(loop_var)}:", inner + exits[kind]]
        if kind == "if":
            lines = [f"{indent}if {self.cond(loop_var)}:"] + self.block(depth + 1, loop_var, in_loop, in_tape, inner)
            if self.r.random() < 0.4:
                lines += [f"{indent}else:"] + self.block(depth + 1, loop_var, in_loop, in_tape, inner)
            return lines
        if kind == "for":
            self.loops += 1
            var = f"i{self.loops}"
            return [f"{indent}for {var} in range({self.r.randint(1, 3)}):"] + \
                self.block(depth + 1, var, True, in_tape, inner)
        if kind == "lock":
            self.locked = True
            body = self.block(depth + 1, loop_var, in_loop, in_tape, inner)
            self.locked = False
            return [f"{indent}with self.lock:"] + body
        if kind == "tape":
            self.tapes += 1
            t = f"tape{self.tapes}"
            return ([f"{indent}with tf.GradientTape() as {t}:", f"{inner}{t}.watch(x)", f"{inner}y = y * x"]
                    + self.block(depth + 1, loop_var, in_loop, True, inner)
                    + [f"{inner}z = tf.reduce_sum(y * x)",
                       f"{indent}g = {t}.gradient(z, x)", f"{indent}y = y + 0.1 * g"])
        lines = [f"{indent}try:"] + self.block(depth + 1, loop_var, in_loop, in_tape, inner)
        handled = self.r.random() < 0.7
        if handled:
            lines += [f"{indent}except ValueError as e:", f"{inner}self.log.append(str(e))"]
            if self.r.random() < 0.4:
                lines += self.block(depth + 1, loop_var, in_loop, in_tape, inner, 1)
        if not handled or self.r.random() < 0.5:
            lines += [f"{indent}finally:", f"{inner}self.log.append('fin')"]
            if self.r.random() < 0.4:
                lines += self.block(depth + 1, loop_var, in_loop, in_tape, inner, 1)
        return lines

    def program(self) -> str:
        body = ["y = x * 1.0", "k = self.k0", "s = 0.0"] + self.block(0, None, False, False, "", 4)
        if not self.breaks:  # every program has at least one break, at a random place of its body
            at = self.r.choice([i for i in range(3, len(body) + 1)  # between two statements of the body
                                if i == len(body) or not body[i].startswith((" ", "else", "except", "finally"))])
            body[at:at] = self.brk(0, None, "")
        body.append(self.r.choice(["return y, k, s", "return tf.reduce_sum(y) + s", "return y * self.rate, k"]))
        return _HEADER + "\n".join("        " + line for line in body) + "\n"


def _calls(seed: int) -> list:
    r = np.random.RandomState(seed)
    calls = []
    for i in range(8):
        sign = -1.0 if r.uniform() < 0.35 else 1.0
        x = tf.constant((sign * r.uniform(-0.4, 1.0, size=3)).astype(np.float32))

        def call(p, x=x, k0=int(r.randint(0, 4)), i=i):
            p.obj.k0 = k0  # a Python number in state that changes between calls
            if p.inline_at == i:
                inline_segments(p.fn)
            return p.fn(x)
        calls.append(call)
    return calls


def _run(seed: int, mod) -> dict:
    # most convert after one profiled call, so that the segments run graphs within 8 calls;
    # every third after the default number
    profile = {} if seed % 3 == 0 else {"profile_calls": 1}

    def make(jit):
        cls = type("Prog", (mod.Prog,), {})
        cls.f = janus.function(mod.Prog.f, **profile) if jit is janus.function else jit(mod.Prog.f)
        obj = cls()
        # every other program runs its segments as written in the driver from the sixth call
        inline_at = 5 if seed % 2 and jit is janus.function else None
        return types.SimpleNamespace(fn=obj.f, obj=obj, inline_at=inline_at, state=lambda: {
            "v": obj.v, "n": obj.n, "k0": obj.k0, "rate": obj.rate, "log": list(obj.log),
            "env": obj.env.s.copy(), "rng": obj.env.rng.get_state()[1:], "locked": obj.lock.locked()})

    if seed % 4 != 2:
        return check(make, _calls(seed), min_graph_calls=0)
    # a quarter of the programs go through the segments' trials and the confirmation on whole
    # calls within their 8 calls (one run each way), kept as graphs or dropped
    one_run = dataclasses.replace(config.LIMITS, segment_trial_runs=1)
    with mock.patch.object(config, "LIMITS", one_run), \
            mock.patch.multiple(segments, graphs_faster=lambda trial: True,
                                whole_calls_faster_with_graphs=lambda trial: seed % 8 == 2):
        return check(make, _calls(seed), min_graph_calls=0)


def _check_programs(seeds) -> list[dict]:
    """Each program compared with eager; its summed stats."""
    totals = []
    for seed in seeds:
        source = _Gen(seed).program()
        mod = fresh_module(source, tf=tf)
        try:
            totals.append(_run(seed, mod))
        except AssertionError as e:
            raise AssertionError(f"program {seed}:\n{source}\n{e}") from None
    return totals


@pytest.mark.parametrize("first", range(0, PROGRAMS, PER_TEST))
def test_random_methods_with_graph_breaks_agree_with_eager(first):
    totals = _check_programs(range(first, first + PER_TEST))
    split = sum(t.get("breaks", 0) > 0 and t.get("segment_graph_calls", 0) > 0 for t in totals)
    assert split >= PER_TEST * 6 // 10, f"only {split} of {PER_TEST} programs were split and ran graph segments"
