"""Eager-equivalence harness: eager is the oracle.

A test describes a *program* with a factory and a *call sequence*.  The factory is
called twice, with ``jit=identity`` (the eager oracle) and with ``jit=janus.function``,
so each run gets fresh state.  It returns a ``types.SimpleNamespace`` with at least

* ``fn``: the callable the calls use by default (a function or a bound method),
* ``state`` (optional): a zero-argument callable returning a dict of everything the
  test wants compared after every call (attributes, list/dict contents, globals,
  ``tf.Variable`` objects ...),

and any other objects the calls need.  A call is either a tuple of positional
arguments (applied to ``p.fn``) or a callable ``call(p)`` that may mutate the
program's state before calling.

After every call the harness compares return value (structure, type, dtype, shape,
value within tolerance), the raised exception (type and message), captured stdout
and the state dict.  At the end it checks ``janus.stats`` so that a test cannot pass
by silently running everything eagerly.

The most common program is one function and nothing else; :func:`case` writes its
factory::

    @case                    # f is now the factory: f(jit) is SimpleNamespace(fn=jit(<copy of f>))
    def f(x, limit):
        ...

    check(f, calls)

Each run jits a fresh copy of the function (own ``__dict__``; same code, globals,
defaults and closure cells), as a ``def`` inside the factory would give.  The cells
and default values are the same objects in both runs, so a function that rebinds a
``nonlocal``, mutates a default, calls itself by name or needs per-run objects keeps a
factory written out (a ``make(jit)`` returning ``SimpleNamespace(fn=..., state=...)``).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import os
import random
import sys
import tempfile
import textwrap
import types
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import tensorflow as tf

import janus

RTOL = 1e-5
ATOL = 1e-5


def _identity(f):
    return f


def _leaf_value(x: Any) -> Any:
    """Normalise a leaf for comparison; keep the kind so type changes are caught."""
    if isinstance(x, tf.Variable):
        return ("variable", x.dtype.name, tuple(x.shape), x.numpy())
    if isinstance(x, tf.SparseTensor):
        where = tuple(map(tuple, x.indices.numpy().tolist()))
        return ("sparse", x.dtype.name, (tuple(x.dense_shape.numpy().tolist()), where), tf.sparse.to_dense(x).numpy())
    if isinstance(x, tf.RaggedTensor):
        return ("ragged", x.dtype.name, tuple(tuple(r.numpy().tolist()) for r in x.nested_row_lengths()), x.flat_values.numpy())
    if isinstance(x, tf.Tensor) or tf.is_tensor(x):
        return ("tensor", x.dtype.name, tuple(x.shape), x.numpy())
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.name, x.shape, x)
    return ("py", type(x).__name__, None, x)


def assert_same(eager: Any, jan: Any, where: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Assert that ``jan`` equals ``eager`` structurally, by kind, dtype, shape and value."""
    if isinstance(eager, dict):
        assert isinstance(jan, dict), f"{where}: expected dict, got {type(jan).__name__}"
        assert list(eager.keys()) == list(jan.keys()), f"{where}: keys {list(eager)} != {list(jan)}"
        for k in eager:
            assert_same(eager[k], jan[k], f"{where}[{k!r}]", rtol, atol)
        return
    if isinstance(eager, (list, tuple)) and not hasattr(eager, "numpy"):
        assert type(eager) is type(jan), f"{where}: type {type(eager).__name__} != {type(jan).__name__}"
        assert len(eager) == len(jan), f"{where}: length {len(eager)} != {len(jan)}"
        for i, (a, b) in enumerate(zip(eager, jan)):
            assert_same(a, b, f"{where}[{i}]", rtol, atol)
        return
    ke, de, se, ve = _leaf_value(eager)
    kj, dj, sj, vj = _leaf_value(jan)
    assert ke == kj, f"{where}: kind {ke} != {kj} ({eager!r} vs {jan!r})"
    assert de == dj, f"{where}: dtype/type {de} != {dj}"
    assert se == sj, f"{where}: shape {se} != {sj}"
    if ke == "py":
        if isinstance(ve, float) and isinstance(vj, float):
            np.testing.assert_allclose(vj, ve, rtol=rtol, atol=atol, err_msg=where)
        elif hasattr(ve, "__dict__") and not isinstance(ve, (type, types.FunctionType, types.MethodType,
                                                               types.ModuleType)):
            assert type(ve).__qualname__ == type(vj).__qualname__, f"{where}: {type(ve)} != {type(vj)}"
            assert_same(vars(ve), vars(vj), f"{where}.__dict__", rtol, atol)
        else:
            assert ve == vj, f"{where}: {ve!r} != {vj!r}"
        return
    if np.issubdtype(np.asarray(ve).dtype, np.floating):
        np.testing.assert_allclose(vj, ve, rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(vj, ve, err_msg=where)


def _run(call, prog) -> tuple[Any, BaseException | None, str]:
    out = io.StringIO()
    result, exc = None, None
    with contextlib.redirect_stdout(out):
        try:
            result = call(prog) if callable(call) else prog.fn(*call)
        except Exception as e:  # noqa: BLE001 - the exception is the observable
            exc = e
    return result, exc, out.getvalue()


def case(fn: types.FunctionType) -> Callable[[Callable], types.SimpleNamespace]:
    """The factory of a program that is ``fn`` alone: ``case(fn)(jit)`` is
    ``SimpleNamespace(fn=jit(copy))`` for a fresh copy of ``fn`` per run, so the eager and
    the Janus run never share a wrapped function object (see the module docstring)."""
    def factory(jit: Callable) -> types.SimpleNamespace:
        copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        copy.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
        copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        copy.__annotations__ = dict(fn.__annotations__)
        copy.__dict__.update(fn.__dict__)
        return types.SimpleNamespace(fn=jit(copy))

    return factory


def _janus_fns(prog) -> list:
    fns = getattr(prog, "janus_fns", None)
    if fns is not None:
        return list(fns)
    return [prog.fn]


def check(
    factory: Callable[[Callable], types.SimpleNamespace],
    calls: Sequence[Any] | Iterable[Any],
    *,
    graph_calls: int | None = None,
    min_graph_calls: int | None = None,
    eager_only: bool = False,
    rtol: float = RTOL,
    atol: float = ATOL,
    check_message: bool = True,
) -> dict:
    """Run ``calls`` eagerly and through Janus and compare after every call.

    ``graph_calls``: exact number of calls expected to run as graphs (summed over the
    program's Janus functions: ``p.janus_fns`` if given, else ``p.fn``).
    ``min_graph_calls``: lower bound instead (default: at least one graph call,
    unless ``eager_only``).  ``eager_only``: the program must fall back; asserts that
    no graph ran and that a reason was recorded.  Returns the summed stats.
    """
    calls = list(calls)
    janus.reset()
    eager = factory(_identity)
    jan = factory(janus.function)
    for i, call in enumerate(calls):
        re_, ee, oe = _run(call, eager)
        rj, ej, oj = _run(call, jan)
        where = f"call {i}"
        if ee is not None or ej is not None:
            assert ej is not None, f"{where}: eager raised {ee!r}, Janus returned {rj!r}"
            assert ee is not None, f"{where}: Janus raised {ej!r}, eager returned {re_!r}"
            assert type(ee) is type(ej), f"{where}: exception {type(ee).__name__} != {type(ej).__name__}: {ej}"
            if check_message:
                assert str(ee) == str(ej), f"{where}: message {str(ee)!r} != {str(ej)!r}"
        else:
            assert_same(re_, rj, f"{where} result", rtol, atol)
        assert oe == oj, f"{where}: stdout {oe!r} != {oj!r}"
        if hasattr(eager, "state"):
            assert_same(eager.state(), jan.state(), f"{where} state", rtol, atol)
    total: dict = {}
    for f in _janus_fns(jan):
        for k, v in janus.stats(f).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
    assert total.get("calls", 0) >= 1, "Janus function was never called"
    if eager_only:
        assert total["graph_calls"] == 0, f"expected a fallback, but graphs ran: {total}"
        assert total["fallbacks"] >= 1 or total["conversions"] == 0, total
    elif graph_calls is not None:
        assert total["graph_calls"] == graph_calls, f"expected {graph_calls} graph calls: {total}"
    else:
        lo = 1 if min_graph_calls is None else min_graph_calls
        assert total["graph_calls"] >= lo, f"expected >= {lo} graph calls: {total}\n{janus.explain(_janus_fns(jan)[0])}"
    return total


def check_seeded(
    factory: Callable[[Callable], types.SimpleNamespace],
    calls: Sequence[Any],
    seed: int,
    *,
    graph_calls: int | None = None,
    min_graph_calls: int = 1,
    eager_only: bool = False,
    rtol: float = 0,
    atol: float = 0,
) -> dict:
    """Like :func:`check` for programs that draw random numbers: bitwise equality (or
    within ``rtol``/``atol``, for programs whose other arithmetic a graph may round
    differently).

    The eager and Janus runs share TensorFlow's random state, so they cannot alternate
    call by call: each runs the whole sequence after ``tf.random.set_seed(seed)``, and the
    observations after every call (result, exception, stdout, state) are compared with
    tolerance 0.  A call that is a callable may draw random numbers eagerly itself
    (between calls, as a program's other code would).
    """
    def observe(jit: Callable) -> tuple[list, types.SimpleNamespace]:
        prog = factory(jit)
        tf.random.set_seed(seed)
        seen = []
        for call in calls:
            result, exc, out = _run(call, prog)
            state = prog.state() if hasattr(prog, "state") else None
            seen.append((result, exc, out, state))
        return seen, prog

    janus.reset()
    eager, _ = observe(_identity)
    jan, prog = observe(janus.function)
    for i, ((re_, ee, oe, se), (rj, ej, oj, sj)) in enumerate(zip(eager, jan)):
        where = f"call {i}"
        assert (ee is None) == (ej is None), f"{where}: eager raised {ee!r}, Janus raised {ej!r}"
        if ee is not None:
            assert type(ee) is type(ej) and str(ee) == str(ej), f"{where}: {ee!r} != {ej!r}"
        else:
            assert_same(re_, rj, f"{where} result", rtol, atol)
        assert oe == oj, f"{where}: stdout {oe!r} != {oj!r}"
        assert_same(se, sj, f"{where} state", rtol, atol)
    total: dict = {}
    for f in _janus_fns(prog):
        for k, v in janus.stats(f).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
    if eager_only:
        assert total["graph_calls"] == 0, f"expected a fallback, but graphs ran: {total}"
    elif graph_calls is not None:
        assert total["graph_calls"] == graph_calls, f"expected {graph_calls} graph calls: {total}"
    else:
        assert total["graph_calls"] >= min_graph_calls, \
            f"expected >= {min_graph_calls} graph calls: {total}\n{janus.explain(_janus_fns(prog)[0])}"
    return total


_MODULES_DIR = tempfile.mkdtemp(prefix="janus_test_modules_")
_MODULE_COUNT = itertools.count()


def inline_segments(fn: Callable) -> None:
    """Run every segment of ``fn``'s split (and of its segments' splits) as written in
    their drivers from the next call on, as segments settled as written are."""
    from janus.introspect import janus_function_of

    def inline(jf) -> None:
        if jf.split is not None:
            for call in jf.split.calls:
                jf.split.inline(call.segment.index)
                inline(call.function)

    inline(janus_function_of(fn))


def fresh_module(source: str, **inject: Any) -> types.ModuleType:
    """Import ``source`` as a brand-new module (own globals, own file) with ``inject`` predefined.

    Programs that read or rebind globals need module globals of their own, and Janus
    needs their source in a real file, as a user's module has.
    """
    name = f"_janus_test_module_{os.getpid()}_{next(_MODULE_COUNT)}"
    path = os.path.join(_MODULES_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__.update(inject)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class OwnGenerator:
    """The harness runs the eager and the Janus program call by call in turn: each keeps its
    own state of NumPy's global generator, put in place around its calls."""

    def __init__(self, seed: int):
        saved = np.random.get_state()
        np.random.seed(seed)
        self.state = np.random.get_state()
        np.random.set_state(saved)

    def run(self, fn: Callable, *args: Any) -> Any:
        saved = np.random.get_state()
        np.random.set_state(self.state)
        try:
            return fn(*args)
        finally:
            self.state = np.random.get_state()
            np.random.set_state(saved)


class BlockGenerator:
    """The base of the random program generators: a seeded ``random.Random`` (``r``), the
    nesting ``depth`` and the number of ``loops`` so far.  A generator gives ``branch()``,
    ``loop()`` and ``leaf(roll)`` (or a ``block`` of its own)."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.depth = 0
        self.loops = 0

    def block(self, size: int) -> list[str]:
        """``size`` statements: a branch (30%) or the program's one loop (10%) while less than
        two deep, else a leaf statement, given the roll."""
        lines: list[str] = []
        for _ in range(size):
            roll = self.r.random()
            if roll < 0.3 and self.depth < 2:
                lines += self.branch()
            elif roll < 0.4 and self.depth < 2 and not self.loops:
                lines += self.loop()
            else:
                lines += self.leaf(roll)
        return lines

    def nested(self, header: str, size: int) -> list[str]:
        """``header`` and an indented block of ``size`` statements one level deeper."""
        self.depth += 1
        body = self.block(size)
        self.depth -= 1
        return [header] + ["    " + line for line in body]


def program_source(fields: list[str], params: str, body: list[str], ret: str) -> str:
    """The source of a generated ``class Prog``: ``__init__`` sets ``fields`` (``"self.n = 0"``),
    ``step(self, <params>)`` runs ``body`` and returns ``ret``."""
    lines = ["class Prog:", "    def __init__(self):"] + ["        " + f for f in fields] \
        + ["", f"    def step(self, {params}):"] + ["        " + line for line in body] + [f"        return {ret}"]
    return "\n".join(lines) + "\n"


def signed_vectors(r: random.Random, count: int) -> list[tuple]:
    """``count`` argument tuples of one float32 vector of 3 or 4 values, negative 40% of the
    time: inputs that take both sides of the generated programs' tensor conditions."""
    out = []
    for _ in range(count):
        n = r.choice([3, 3, 3, 4])
        sign = -1.0 if r.random() < 0.4 else 1.0
        out.append((tf.constant(np.array([r.uniform(0.1, 1.5) * sign for _ in range(n)], np.float32)),))
    return out


def generated_step(mod: types.ModuleType, state: Callable[[Any], dict]) -> Callable[[Callable], types.SimpleNamespace]:
    """The harness factory of a generated module's ``Prog.step`` (through Janus, profiled on
    one call), comparing ``state(prog)`` after every call."""
    def make(jit):
        cls = type("Prog", (mod.Prog,), {})
        cls.step = janus.function(mod.Prog.step, profile_calls=1) if jit is janus.function else jit(mod.Prog.step)
        prog = cls()
        return types.SimpleNamespace(fn=prog.step, state=lambda: state(prog))

    return make


def check_generated(seeds: Iterable[int], source_of: Callable[[int], str],
                    run: Callable[[int, types.ModuleType, str], dict]) -> int:
    """For each seed, import the program ``source_of(seed)`` generates (``tf`` predefined)
    and ``run(seed, module, source)`` it — a comparison with eager returning the summed
    stats; a difference names the program and its source.  Returns how many of the
    programs ran graphs."""
    graph_programs = 0
    for seed in seeds:
        source = source_of(seed)
        mod = fresh_module(source, tf=tf)
        try:
            total = run(seed, mod, source)
        except AssertionError as e:
            raise AssertionError(f"program {seed}:\n{source}\n{e}") from None
        graph_programs += total["graph_calls"] > 0
    return graph_programs
