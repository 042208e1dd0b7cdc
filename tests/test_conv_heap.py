"""Reads of Python state and tf.Variables, checked against eager.

The test rebinds globals, closure cells, attributes, list/dict contents and variables
between calls; Janus must never answer from a stale value.  Variables are compared in
the state after every call.  Globals live in a fresh module per program (loaded from a
real file so that the source can be read), so the eager and Janus programs do not share.
"""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import check, fresh_module



def rnd(shape, seed, dtype=np.float32):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(dtype))


def do(mutate, *args):
    """A call that first mutates the program's state, then calls ``p.fn(*args)``."""
    def call(p):
        mutate(p)
        return p.fn(*args)
    return call


# ---------------------------------------------------------------------------------------
GLOBAL_TENSOR_SRC = """
import tensorflow as tf
W = None

@jit
def f(x):
    return tf.matmul(x, W) + 1.0
"""


def test_global_tensor_rebound_between_calls():
    def make(jit):
        mod = fresh_module(GLOBAL_TENSOR_SRC, jit=jit)
        mod.W = rnd((4, 2), 100)
        return SimpleNamespace(fn=mod.f, mod=mod, state=lambda: {"W": mod.W})

    def setw(seed, shape=(4, 2)):
        return lambda p: setattr(p.mod, "W", rnd(shape, seed))

    x = rnd((3, 4), 0)
    calls = [(x,), (x,), (x,), (x,), do(setw(101), x), (x,), (rnd((2, 4), 1),),
             do(setw(102), x), do(setw(103, (4, 5)), x), (x,), do(setw(104), x)]
    check(make, calls)


GLOBAL_FLAG_SRC = """
import tensorflow as tf
TRAINING = True
FACTOR = 0.5

@jit
def f(x):
    if TRAINING:
        y = x * FACTOR
    else:
        y = x
    return tf.nn.relu(y)
"""


def test_global_python_flag_flipped():
    def make(jit):
        mod = fresh_module(GLOBAL_FLAG_SRC, jit=jit)
        return SimpleNamespace(fn=mod.f, mod=mod)

    def flag(v):
        return lambda p: setattr(p.mod, "TRAINING", v)

    x = rnd((2, 3), 0)
    calls = [(x,), (x,), (x,), (x,), do(flag(False), x), (x,), (rnd((2, 3), 1),),
             do(flag(True), x), (x,), do(flag(False), x), do(flag(True), rnd((4, 3), 2))]
    check(make, calls)


def test_global_python_scalar_changing_every_call():
    def make(jit):
        mod = fresh_module(GLOBAL_FLAG_SRC, jit=jit)
        return SimpleNamespace(fn=mod.f, mod=mod)

    def factor(v):
        return lambda p: setattr(p.mod, "FACTOR", v)

    x = rnd((2, 3), 0)
    calls = [do(factor(0.1 * (i + 1)), x) for i in range(10)]
    check(make, calls)


GLOBAL_HELPER_SRC = """
import tensorflow as tf

def act(x):
    return tf.nn.relu(x)

@jit
def f(x):
    return act(x) * 2.0
"""


def test_global_function_rebound_callee_changes():
    def make(jit):
        mod = fresh_module(GLOBAL_HELPER_SRC, jit=jit)
        return SimpleNamespace(fn=mod.f, mod=mod)

    def act(fn):
        return lambda p: setattr(p.mod, "act", fn)

    x = rnd((5,), 0)
    calls = [(x,), (x,), (x,), (x,), do(act(tf.tanh), x), (x,), (rnd((5,), 1),),
             do(act(lambda t: t * 10.0), x), (x,), do(act(tf.nn.relu), x), (x,)]
    check(make, calls)


GLOBAL_LIST_SRC = """
import tensorflow as tf
LAYERS = []

@jit
def f(x):
    for w in LAYERS:
        x = tf.matmul(x, w)
    return x, len(LAYERS)
"""


def test_global_list_mutated_in_place_between_calls():
    def make(jit):
        mod = fresh_module(GLOBAL_LIST_SRC, jit=jit)
        mod.LAYERS.append(rnd((3, 3), 50))
        return SimpleNamespace(fn=mod.f, mod=mod)

    def push(seed):
        return lambda p: p.mod.LAYERS.append(rnd((3, 3), seed) * 0.5)

    def replace0(seed):
        return lambda p: p.mod.LAYERS.__setitem__(0, rnd((3, 3), seed))

    x = rnd((2, 3), 0)
    calls = [(x,), (x,), (x,), (x,), do(push(51), x), (x,), (x,), do(replace0(52), x), (x,),
             do(lambda p: p.mod.LAYERS.pop(), x), (x,)]
    check(make, calls)


def test_closure_cell_rebound_between_calls():
    def make(jit):
        scale = 2.0
        bias = tf.constant([0.5, -0.5, 1.0])

        @jit
        def f(x):
            return x * scale + bias

        def set_scale(v):
            nonlocal scale
            scale = v

        def set_bias(b):
            nonlocal bias
            bias = b

        return SimpleNamespace(fn=f, set_scale=set_scale, set_bias=set_bias,
                               state=lambda: {"scale": scale, "bias": bias})

    x = rnd((3,), 0)
    calls = [(x,), (x,), (x,), (x,), do(lambda p: p.set_scale(3.0), x), (x,),
             do(lambda p: p.set_bias(tf.constant([1.0, 1.0, 1.0])), x), (rnd((3,), 1),),
             do(lambda p: p.set_scale(-1.0), x), (x,)]
    check(make, calls)


def test_closure_over_mutable_dict_mutated_between_calls():
    def make(jit):
        cfg = {"alpha": 0.5, "use_tanh": False}

        @jit
        def f(x):
            y = x * cfg["alpha"]
            if cfg["use_tanh"]:
                y = tf.tanh(y)
            return y, cfg["alpha"]

        return SimpleNamespace(fn=f, cfg=cfg, state=lambda: dict(cfg))

    x = rnd((4,), 0)
    calls = [(x,), (x,), (x,), (x,), do(lambda p: p.cfg.update(alpha=2.0), x), (x,),
             do(lambda p: p.cfg.update(use_tanh=True), x), (x,),
             do(lambda p: p.cfg.update(alpha=0.5, use_tanh=False), x), (x,)]
    check(make, calls)


class _Scaler:
    def __init__(self, jit, scale):
        self.scale = scale
        self.training = True
        self.w = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        self.act = tf.nn.relu
        self.cfg = SimpleNamespace(shift=0.0)
        self.apply = jit(self._apply_impl)

    def _apply_impl(self, x):
        y = self.act(tf.matmul(x, self.w)) * self.scale + self.cfg.shift
        if self.training:
            y = y * 0.5
        return y


def _make_scaler_class(jit):
    class Scaler:
        def __init__(self, scale):
            self.scale = scale
            self.training = True
            self.w = tf.constant([[1.0, 2.0], [3.0, 4.0]])
            self.act = tf.nn.relu
            self.cfg = SimpleNamespace(shift=0.0)

        @jit
        def apply(self, x):
            y = self.act(tf.matmul(x, self.w)) * self.scale + self.cfg.shift
            if self.training:
                y = y * 0.5
            return y

    return Scaler


def _scaler_state(s):
    return {"scale": s.scale, "training": s.training, "w": s.w, "shift": s.cfg.shift}


def test_self_attr_python_scale_changed_between_calls():
    def make(jit):
        s = _make_scaler_class(jit)(2.0)
        return SimpleNamespace(fn=s.apply, s=s, state=lambda: _scaler_state(s))

    def scale(v):
        return lambda p: setattr(p.s, "scale", v)

    x = rnd((3, 2), 0)
    calls = [(x,), (x,), (x,), (x,), do(scale(3.0), x), (x,), (rnd((3, 2), 1),),
             do(scale(2.0), x), do(scale(0.25), rnd((5, 2), 2)), (x,)]
    check(make, calls)


def test_self_training_flag_flipped():
    def make(jit):
        s = _make_scaler_class(jit)(1.0)
        return SimpleNamespace(fn=s.apply, s=s, state=lambda: _scaler_state(s))

    def training(v):
        return lambda p: setattr(p.s, "training", v)

    x = rnd((3, 2), 0)
    calls = [(x,), (x,), (x,), (x,), do(training(False), x), (x,), (rnd((3, 2), 1),),
             do(training(True), x), (x,), do(training(False), x), do(training(True), x)]
    check(make, calls)


def test_self_tensor_attr_rebound():
    def make(jit):
        s = _make_scaler_class(jit)(1.0)
        return SimpleNamespace(fn=s.apply, s=s, state=lambda: _scaler_state(s))

    def w(seed, shape=(2, 2)):
        return lambda p: setattr(p.s, "w", rnd(shape, seed))

    x = rnd((3, 2), 0)
    calls = [(x,), (x,), (x,), (x,), do(w(10), x), (x,), do(w(11), x), do(w(12, (2, 3)), x),
             (x,), do(w(13), rnd((1, 2), 1))]
    check(make, calls)


def test_self_callable_attr_and_nested_attr_changed():
    def make(jit):
        s = _make_scaler_class(jit)(1.0)
        return SimpleNamespace(fn=s.apply, s=s, state=lambda: _scaler_state(s))

    def act(fn):
        return lambda p: setattr(p.s, "act", fn)

    def shift(v):
        return lambda p: setattr(p.s.cfg, "shift", v)

    x = rnd((3, 2), 0)
    calls = [(x,), (x,), (x,), (x,), do(act(tf.tanh), x), (x,), do(shift(1.5), x), (x,),
             do(act(tf.nn.relu), x), do(shift(0.0), x), (x,)]
    check(make, calls)


def test_jit_applied_to_bound_method_in_init():
    def make(jit):
        s = _Scaler(jit, 2.0)
        return SimpleNamespace(fn=s.apply, s=s, state=lambda: _scaler_state(s))

    x = rnd((3, 2), 0)
    calls = [(x,), (x,), (x,), (x,), do(lambda p: setattr(p.s, "scale", 5.0), x), (x,),
             do(lambda p: setattr(p.s, "training", False), x), (rnd((4, 2), 1),)]
    check(make, calls)


def test_same_method_on_two_instances_alternately():
    def make(jit):
        Scaler = _make_scaler_class(jit)
        a, b = Scaler(1.0), Scaler(3.0)
        b.training = False
        b.w = tf.constant([[0.0, 1.0], [1.0, 0.0]])
        return SimpleNamespace(fn=a.apply, a=a, b=b,
                               state=lambda: {"a": _scaler_state(a), "b": _scaler_state(b)})

    xs = [rnd((3, 2), i) for i in range(6)]
    calls = []
    for i in range(12):
        x = xs[i % 6]
        calls.append((lambda p, x=x: p.a.apply(x)) if i % 2 == 0 else (lambda p, x=x: p.b.apply(x)))
    calls.append(do(lambda p: setattr(p.a, "scale", 7.0), xs[0]))
    calls.append(lambda p: p.b.apply(xs[1]))
    check(make, calls)


def test_variable_read_and_assign_add():
    def make(jit):
        v = tf.Variable([0.0, 0.0, 0.0])
        step = tf.Variable(0, dtype=tf.int64)

        @jit
        def f(x):
            v.assign_add(x)
            step.assign_add(1)
            return v.read_value() * 2.0, v + 0.0, step * 1

        return SimpleNamespace(fn=f, state=lambda: {"v": v, "step": step})

    calls = [(rnd((3,), i),) for i in range(9)]
    check(make, calls)


def test_variable_assign_then_read_after_write():
    def make(jit):
        v = tf.Variable(tf.ones((2, 2)))

        @jit
        def f(x, decay):
            before = v.read_value()
            v.assign(v * decay + x)
            after = v.read_value()
            v.assign_sub(tf.ones_like(x) * 0.1)
            return before, after, v.value()

        return SimpleNamespace(fn=f, state=lambda: {"v": v})

    calls = [(rnd((2, 2), 0), 0.9), (rnd((2, 2), 1), 0.9), (rnd((2, 2), 2), 0.9),
             (rnd((2, 2), 3), 0.9), (rnd((2, 2), 4), 0.5), (rnd((2, 2), 5), 0.5),
             (rnd((2, 2), 6), 0.9), (rnd((2, 2), 7), 0.9)]
    check(make, calls)


def test_variable_update_before_flipping_tensor_branch_nothing_half_done():
    def make(jit):
        counter = tf.Variable(0.0)
        total = tf.Variable(tf.zeros((3,)))

        @jit
        def f(x):
            counter.assign_add(1.0)
            if tf.reduce_sum(x) > 0:
                total.assign_add(x)
                r = x * 2.0
            else:
                total.assign_sub(x)
                r = -x
            return r, counter.read_value()

        return SimpleNamespace(fn=f, state=lambda: {"counter": counter, "total": total})

    p = [tf.constant([1.0, 2.0, 3.0]) * (i + 1) for i in range(6)]
    n = [tf.constant([-1.0, -2.0, -0.5]) * (i + 1) for i in range(4)]
    calls = [(p[0],), (p[1],), (p[2],), (p[3],), (n[0],), (p[4],), (n[1],), (n[2],), (p[5],),
             (n[3],)]
    check(make, calls)


def test_variable_object_rebound_on_self():
    def make(jit):
        class Acc:
            def __init__(self):
                self.v = tf.Variable([1.0, 1.0])

            @jit
            def add(self, x):
                self.v.assign_add(x)
                return self.v * 1.0

        a = Acc()
        old = a.v
        return SimpleNamespace(fn=a.add, a=a, old=old,
                               state=lambda: {"v": a.v, "old": old})

    def newvar(vals):
        return lambda p: setattr(p.a, "v", tf.Variable(vals))

    x = tf.constant([0.5, -0.5])
    calls = [(x,), (x,), (x,), (x,), do(newvar([10.0, 10.0]), x), (x,), (x,),
             do(lambda p: setattr(p.a, "v", p.old), x), (x,)]
    check(make, calls)


def test_keras_kernel_assigned_between_calls():
    def make(jit):
        d = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.Constant(0.3),
                                  bias_initializer="zeros")
        d(tf.zeros((1, 3)))

        @jit
        def f(x):
            return d(x) * 2.0

        return SimpleNamespace(fn=f, d=d, state=lambda: {"k": tf.convert_to_tensor(d.kernel),
                                                          "b": tf.convert_to_tensor(d.bias)})

    def setk(val):
        return lambda p: p.d.kernel.assign(tf.fill((3, 2), val))

    x = rnd((4, 3), 0)
    calls = [(x,), (x,), (x,), (x,), do(setk(-1.0), x), (x,), do(setk(2.0), rnd((2, 3), 1)),
             (x,)]
    check(make, calls)


def test_returning_the_variable_object_itself():
    def make(jit):
        v = tf.Variable([0.0, 1.0])

        @jit
        def f(x):
            v.assign_add(x)
            return v, v.read_value()

        return SimpleNamespace(fn=f, state=lambda: {"v": v})

    calls = [(rnd((2,), i),) for i in range(8)]
    check(make, calls)


def test_property_and_class_attribute_reads():
    def make(jit):
        class Model:
            BASE = 1.0

            def __init__(self):
                self.factor = 2.0

            @property
            def scale(self):
                return self.factor * type(self).BASE

            @jit
            def __call__(self, x):
                return x * self.scale + self.BASE

        m = Model()
        return SimpleNamespace(fn=m, m=m, cls=Model, janus_fns=[Model.__dict__["__call__"]],
                               state=lambda: {"factor": m.factor, "BASE": Model.BASE})

    x = rnd((3,), 0)
    calls = [(x,), (x,), (x,), (x,), do(lambda p: setattr(p.m, "factor", 5.0), x), (x,),
             do(lambda p: setattr(p.cls, "BASE", 10.0), x), (x,),
             do(lambda p: setattr(p.m, "factor", 2.0), x), (x,)]
    check(make, calls)


def test_variables_passed_as_arguments_alternately():
    def make(jit):
        va = tf.Variable([1.0, 2.0])
        vb = tf.Variable([-1.0, 0.0])

        @jit
        def f(v, x):
            v.assign_add(x)
            return v * 2.0

        return SimpleNamespace(fn=f, va=va, vb=vb, state=lambda: {"va": va, "vb": vb})

    x = tf.constant([0.5, 0.25])
    calls = []
    for i in range(10):
        calls.append((lambda p: p.fn(p.va, x)) if i % 3 != 2 else (lambda p: p.fn(p.vb, x)))
    check(make, calls)


def test_argument_object_attribute_mutated_between_calls():
    def make(jit):
        cfg = SimpleNamespace(scale=2.0, mode="relu")

        @jit
        def f(x, c):
            y = x * c.scale
            if c.mode == "relu":
                y = tf.nn.relu(y)
            return y

        return SimpleNamespace(fn=f, cfg=cfg, state=lambda: dict(vars(cfg)))

    def call(x, **changes):
        def run(p):
            for k, v in changes.items():
                setattr(p.cfg, k, v)
            return p.fn(x, p.cfg)
        return run

    x = rnd((4,), 0)
    calls = [call(x), call(x), call(x), call(x), call(x, scale=-1.0), call(x),
             call(x, mode="id"), call(x), call(x, scale=2.0, mode="relu"), call(x)]
    check(make, calls)


def test_argument_dict_and_list_mutated_in_place_between_calls():
    def make(jit):
        opts = {"k": 1.0, "names": ["a"]}
        coefs = [1.0, 2.0]

        @jit
        def f(x, o, cs):
            y = x * o["k"]
            for c in cs:
                y = y + c
            return y, len(o["names"]), list(cs)

        return SimpleNamespace(fn=f, opts=opts, coefs=coefs,
                               state=lambda: {"opts": dict(opts), "coefs": list(coefs)})

    def call(x, mutate=None):
        def run(p):
            if mutate:
                mutate(p)
            return p.fn(x, p.opts, p.coefs)
        return run

    x = rnd((3,), 0)
    calls = [call(x), call(x), call(x), call(x), call(x, lambda p: p.opts.update(k=3.0)), call(x),
             call(x, lambda p: p.coefs.append(10.0)), call(x),
             call(x, lambda p: p.coefs.__setitem__(0, -5.0)), call(x),
             call(x, lambda p: p.opts["names"].append("b")), call(x)]
    check(make, calls)


def test_numpy_array_arguments_new_values_and_mutated_in_place():
    def make(jit):
        buf = np.arange(4, dtype=np.float32)

        @jit
        def f(a, x):
            return tf.reduce_sum(a * x) + tf.constant(a)[0]

        return SimpleNamespace(fn=f, buf=buf, state=lambda: {"buf": buf.copy()})

    x = rnd((4,), 0)
    calls = [(np.arange(4, dtype=np.float32), x), (np.arange(4, dtype=np.float32) * 2, x),
             (np.ones(4, dtype=np.float32), x), (np.full(4, 3.0, dtype=np.float32), x),
             (np.full(4, -1.0, dtype=np.float32), x)]
    for v in [5.0, 6.0, 7.0, 8.0]:
        def run(p, v=v):
            p.buf[:] = v
            return p.fn(p.buf, x)
        calls.append(run)
    check(make, calls)


def test_tensor_then_variable_argument():
    def make(jit):
        v = tf.Variable([1.0, 2.0, 3.0])

        @jit
        def f(x):
            if isinstance(x, tf.Variable):
                x.assign_add(tf.ones_like(x))
                kind = "variable"
            else:
                kind = "tensor"
            return x * 2.0, kind

        return SimpleNamespace(fn=f, v=v, state=lambda: {"v": v})

    t = tf.constant([1.0, 2.0, 3.0])
    calls = [(t,), (t,), (t,), (t,), (lambda p: p.fn(p.v)), (t,), (lambda p: p.fn(p.v)),
             (lambda p: p.fn(p.v)), (t,)]
    check(make, calls)


def test_variable_update_then_tf_runtime_error():
    def make(jit):
        v = tf.Variable(0.0)

        @jit
        def f(x, idx):
            v.assign_add(1.0)
            print("updated")
            g = tf.gather(x, idx)
            return g * v

        return SimpleNamespace(fn=f, state=lambda: {"v": v})

    x = rnd((4,), 0)
    calls = [(x, tf.constant([0, 1])), (x, tf.constant([2, 3])), (x, tf.constant([1, 1])),
             (x, tf.constant([3, 0])), (x, tf.constant([0, 9])), (x, tf.constant([2, 2])),
             (x, tf.constant([7, 1])), (x, tf.constant([0, 1]))]
    check(make, calls, check_message=False)
