"""Every value a trace reads is guarded on what was read, fed, or read in Python: the kinds
of values (``janus.trace.kinds``) against eager, with the program and the caller changing
them in place between calls.

Each test was a silent wrong answer before the kinds existed: the value seen at
conversion was frozen into the graph behind an identity guard.  Each runs a call sequence
in which the caller (and often the step) changes what the trace read after the graph was
built, compares result, stdout and state after every call, and asserts that graphs ran.
Conversions are bounded where a kind is meant to keep its graph: a bound of 3 is the first
graph plus the relaxations the policy may make (a number fed, a shape relaxed).
"""
import array
import collections
import os
import types
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import case, check, fresh_module
from janus.trace import kinds
from janus.trace.kinds import Kind

X = tf.constant([1.0, 2.0, 3.0])


def graph_kept(total: dict, at_most: int) -> dict:
    """The graphs were reused: ``at_most`` conversions over the whole sequence."""
    assert total["conversions"] <= at_most, f"converted {total['conversions']} times: {total}"
    return total


def setter(name, key, values):
    """Calls that set ``p.<name>[key]`` to each of ``values`` before calling the step."""
    def call(value):
        def run(p):
            getattr(p, name)[key] = value
            return p.fn(X)
        return run
    return [call(v) for v in values]


SCHEDULE = [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.02, 0.5, 0.5]


# ------------------------------------------------------------------ standard mappings
@pytest.mark.parametrize("make_config", [
    lambda: collections.OrderedDict(lr=0.1, decay=0.5),
    lambda: collections.defaultdict(float, lr=0.1, decay=0.5),
    lambda: type("Config", (dict,), {})(lr=0.1, decay=0.5),
    lambda: collections.Counter(lr=0.1, decay=0.5),
], ids=["OrderedDict", "defaultdict", "dict subclass", "Counter"])
def test_learning_rate_read_from_a_mapping_follows_the_schedule(make_config):
    def make(jit):
        cfg = make_config()

        @jit
        def step(x):
            return x * cfg["lr"] + cfg["decay"]

        return SimpleNamespace(fn=step, cfg=cfg, state=lambda: {"cfg": (type(cfg).__name__, list(cfg.items()))})

    graph_kept(check(make, setter("cfg", "lr", SCHEDULE), min_graph_calls=4), at_most=4)


def test_ordered_dict_order_and_membership_are_guarded():
    """Iteration order (``move_to_end``) and ``in`` read the keys: both are guarded."""
    def make(jit):
        od = collections.OrderedDict(a=1.0, b=2.0)

        @jit
        def step(x):
            weights = [v * (i + 1) for i, v in enumerate(od.values())]
            bonus = 10.0 if "c" in od else 0.0
            return x * sum(weights) + bonus

        return SimpleNamespace(fn=step, od=od, state=lambda: {"od": list(od.items())})

    def move(key):
        return lambda p: (p.od.move_to_end(key), p.fn(X))[1]

    def add(key):
        return lambda p: (p.od.__setitem__(key, 3.0), p.fn(X))[1]

    check(make, [(X,), (X,), (X,), move("a"), (X,), add("c"), (X,), move("b")], min_graph_calls=3)


def test_defaultdict_missing_key_read_is_a_deferred_write():
    """``counts[k] += 1`` on a missing key: eager inserts the default, then adds."""
    def make(jit):
        counts = collections.defaultdict(int)

        @jit
        def step(x, key):
            counts[key] += 1
            seen = counts["never"]  # a read of a missing key inserts 0
            return x * counts[key] + seen

        return SimpleNamespace(fn=step, counts=counts, state=lambda: {"counts": sorted(counts.items())})

    calls = [(X, "a"), (X, "a"), (X, "a"), (X, "b"), (X, "a"), (X, "b"), (X, "c")]
    check(make, calls, min_graph_calls=2)


def test_mapping_proxy_sees_the_dict_behind_it():
    def make(jit):
        backing = {"lr": 0.1}
        view = types.MappingProxyType(backing)

        @jit
        def step(x):
            return x * view["lr"] + len(view)

        return SimpleNamespace(fn=step, cfg=backing, state=lambda: {"backing": dict(backing)})

    calls = setter("cfg", "lr", SCHEDULE) + setter("cfg", "extra", [1.0, 2.0])
    check(make, calls, min_graph_calls=4)


@pytest.mark.parametrize("kind", ["ChainMap", "UserDict"])
def test_pure_python_mappings_read_through_the_trace_copies(kind):
    """A ChainMap's maps (a UserDict's data) are read in turn into copies, which its own
    code reads: a change to any map behind it is seen; the step's own write fails the trace."""
    def make(jit):
        first, second = {}, {"lr": 0.1, "decay": 0.5}
        cm = collections.ChainMap(first, second) if kind == "ChainMap" else collections.UserDict(second)

        @jit
        def step(x):
            return x * cm["lr"] + len(cm) + (1.0 if "extra" in cm else 0.0)

        return SimpleNamespace(fn=step, cm=cm, first=first, state=lambda: {"cm": sorted(dict(cm).items())})

    def shadow(p):  # a value in the first map hides the second's
        (p.first if kind == "ChainMap" else p.cm)["lr"] = 0.7
        return p.fn(X)

    def extra(p):
        p.cm["extra"] = 1.0
        return p.fn(X)

    calls = setter("cm", "lr", SCHEDULE[:5]) + [shadow, (X,), extra, (X,)]
    check(make, calls, min_graph_calls=4)


def test_a_step_changing_a_chain_map_runs_eagerly():
    def make(jit):
        cm = collections.ChainMap({}, {"lr": 0.1})

        @jit
        def step(x):
            cm["seen"] = cm.get("seen", 0) + 1
            return x * cm["lr"]

        return SimpleNamespace(fn=step, cm=cm, state=lambda: {"cm": [dict(m) for m in cm.maps]})

    check(make, [(X,)] * 6, eager_only=True)


# ------------------------------------------------------------------ sequences
def test_deque_replay_buffer_appended_by_caller_and_evicted_by_step():
    """A replay buffer: the caller appends transitions; the step appends too, and the deque's
    maxlen evicts the oldest; the step reads items, the length, and iterates."""
    def make(jit):
        buf = collections.deque([1.0, 2.0], maxlen=4)

        @jit
        def step(x):
            total = 0.0
            for item in buf:
                total += item
            out = x * (total + buf[0] - buf[-1]) / len(buf) + sum(buf)
            buf.append(float(len(buf)))
            return out

        return SimpleNamespace(fn=step, buf=buf, state=lambda: {"buf": (list(buf), buf.maxlen)})

    def push(v):
        return lambda p: (p.buf.append(v), p.fn(X))[1]

    check(make, [(X,), (X,), (X,), push(7.0), (X,), push(-1.0), push(3.0), (X,)], min_graph_calls=1)


def test_deque_of_tensors_is_fed_by_position():
    def make(jit):
        buf = collections.deque([tf.constant(1.0), tf.constant(2.0)], maxlen=3)

        @jit
        def step(x):
            return x * buf[0] + buf[1]

        return SimpleNamespace(fn=step, buf=buf, state=lambda: {"buf": list(buf)})

    def push(v):
        return lambda p: (p.buf.append(tf.constant(v)), p.fn(X))[1]

    graph_kept(check(make, [(X,), (X,), push(5.0), push(6.0), (X,), push(7.0)], min_graph_calls=3), at_most=3)


def test_array_module_array_is_guarded_by_elements():
    def make(jit):
        arr = array.array("d", [0.1, 0.2])

        @jit
        def step(x):
            return x * arr[0] + arr[1]

        return SimpleNamespace(fn=step, arr=arr, state=lambda: {"arr": arr.tolist()})

    check(make, setter("arr", 0, SCHEDULE), min_graph_calls=4)


def test_user_list_is_read_through_the_trace_copy():
    def make(jit):
        items = collections.UserList([0.1, 0.2])

        @jit
        def step(x):
            return x * items[0] + sum(items) + len(items)

        return SimpleNamespace(fn=step, items=items, state=lambda: {"items": list(items)})

    check(make, setter("items", 0, SCHEDULE), min_graph_calls=4)


def test_a_users_list_subclass_is_read_in_python():
    """A user's list subclass keeps its items where Janus does not model them (its inherited
    ``__getitem__`` is list's, on the caller's object): eager's numbers, no graph."""
    def make(jit):
        items = type("Items", (list,), {})([0.1])

        @jit
        def step(x):
            return x * items[0]

        return SimpleNamespace(fn=step, items=items, state=lambda: {"items": list(items)})

    total = check(make, setter("items", 0, SCHEDULE), eager_only=True)
    assert total["calls"] == len(SCHEDULE)


# ------------------------------------------------------------------ modules and the environment
def test_module_attribute_rebound_by_the_caller():
    cfg = fresh_module("LR = 0.1\nSCALE = 2.0\n")

    def make(jit):
        cfg.LR = 0.1

        @jit
        def step(x):
            return x * cfg.LR * cfg.SCALE

        return SimpleNamespace(fn=step, state=lambda: {"lr": cfg.LR})

    def rebind(v):
        return lambda p: (setattr(cfg, "LR", v), p.fn(X))[1]

    check(make, [rebind(v) for v in SCHEDULE], min_graph_calls=4)


def test_environment_variables_are_guarded_per_variable():
    key, other = "JANUS_TEST_KINDS_LR", "JANUS_TEST_KINDS_FLAG"

    def make(jit):
        os.environ[key] = "0.1"
        os.environ.pop(other, None)

        @jit
        def step(x):
            lr = float(os.environ[key])
            flag = 1.0 if other in os.environ else 0.0
            default = float(os.getenv("JANUS_TEST_KINDS_UNSET", "3.0"))
            return x * lr + flag + default

        return SimpleNamespace(fn=step, state=lambda: {"env": (os.environ.get(key), os.environ.get(other))})

    def env(name, value):
        return lambda p: (os.environ.__setitem__(name, value), p.fn(X))[1]

    try:
        calls = [(X,), (X,), (X,), env(key, "0.1"), env(key, "0.05"), (X,), env(other, "1"), env(key, "0.5")]
        graph_kept(check(make, calls, min_graph_calls=3), at_most=5)
    finally:
        os.environ.pop(key, None)
        os.environ.pop(other, None)


# ------------------------------------------------------------------ user dunders and properties
class Loader:
    """A ``keras.utils.Sequence``-style loader: ``__len__`` and ``__getitem__`` over NumPy
    arrays, reshuffled in place at each epoch end; it counts its dunder calls."""

    def __init__(self, n=6, batch=2):
        rs = np.random.RandomState(0)
        self.x = rs.randn(n, 3).astype(np.float32)
        self.order = list(range(n // batch))
        self.batch = batch
        self.calls = 0

    def __len__(self):
        self.calls += 1
        return len(self.order)

    def __getitem__(self, i):
        self.calls += 1
        j = self.order[i] * self.batch
        return self.x[j:j + self.batch]

    def on_epoch_end(self):
        self.order.reverse()


def test_sequence_loader_indexed_in_the_step_and_reshuffled_each_epoch():
    def make(jit):
        loader = Loader()
        w = tf.Variable(tf.ones([3, 1]))

        @jit
        def step(i):
            batch = loader[i]
            loss = tf.reduce_sum(tf.matmul(batch, w)) / len(loader)
            w.assign_sub(0.01 * loss * tf.ones([3, 1]))
            return loss

        return SimpleNamespace(fn=step, loader=loader, state=lambda: {"w": w, "calls": loader.calls,
                                                                       "order": list(loader.order)})

    def epoch_end(p):
        p.loader.on_epoch_end()

    calls = []
    for _ in range(3):
        calls += [(0,), (1,), (2,), epoch_end]
    check(make, calls, min_graph_calls=3)


def test_len_of_a_batch_object_normalizes_the_loss_after_the_batch_is_relaxed():
    class Batch:
        def __init__(self, x):
            self.x = x

        def __len__(self):
            return self.x.shape[0]

    @case
    def step(batch):
        return tf.reduce_sum(batch.x) / len(batch)

    calls = [(Batch(tf.ones([n, 2]) * n),) for n in (4, 4, 4, 3, 5, 2, 4)]
    check(step, calls, min_graph_calls=3)


class Counted:
    """An argument whose protocols the step relies on; every dunder call is counted."""

    def __init__(self, values):
        self.values = list(values)
        self.calls = collections.Counter()

    def __len__(self):
        self.calls["len"] += 1
        return len(self.values)

    def __bool__(self):
        self.calls["bool"] += 1
        return len(self.values) > 1

    def __iter__(self):
        self.calls["iter"] += 1
        return iter(self.values)

    def __contains__(self, v):
        self.calls["contains"] += 1
        return v in self.values

    def __float__(self):
        self.calls["float"] += 1
        return float(sum(self.values))


def test_argument_protocols_run_as_eager_runs_them_and_are_counted():
    def make(jit):
        seen = []

        @jit
        def step(x, c):
            out = x * float(c) + len(c)
            if c:
                out = out + 1.0
            for v in c:
                out = out + v
            if 2.0 in c:
                out = out * 2.0
            return out

        def call(values):
            def run(p):
                c = Counted(values)
                seen.append(c)
                return p.fn(X, c)
            return run

        return SimpleNamespace(fn=step, call=call, state=lambda: {"calls": [sorted(c.calls.items()) for c in seen]})

    sequences = [[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [3.0, 4.0], [2.0, 5.0], [1.0], [1.0, 2.0]]
    calls = [lambda p, v=v: p.call(v)(p) for v in sequences]
    check(make, calls, min_graph_calls=2)


def test_property_over_an_ordered_dict():
    def make(jit):
        class Schedule:
            def __init__(self):
                self.table = collections.OrderedDict(lr=0.1)

            @property
            def lr(self):
                return self.table["lr"]

            @jit
            def step(self, x):
                return x * self.lr

        s = Schedule()
        return SimpleNamespace(fn=s.step, table=s.table, state=lambda: {"table": list(s.table.items())})

    check(make, setter("table", "lr", SCHEDULE), min_graph_calls=4)


# ------------------------------------------------------------------ mutable defaults, mutated arguments
def test_mutable_default_argument_appended_and_read():
    """``acc=[]`` grows at every call, eagerly and through Janus; a dict argument is mutated
    in place by ``setdefault`` and ``+=``."""
    def make(jit):
        def step(x, out, acc=[]):  # noqa: B006 - the program under test relies on it
            acc.append(1.0)
            out.setdefault("n", 0.0)
            out["n"] += float(len(acc))
            return x * len(acc)

        log = {}
        return SimpleNamespace(fn=jit(step), log=log, state=lambda: {"acc": list(step.__defaults__[0]),
                                                                      "log": dict(log)})

    calls = [lambda p: p.fn(X, p.log)] * 6
    check(make, calls, min_graph_calls=2)


# ------------------------------------------------------------------ what janus.explain says
def test_explain_names_what_a_guard_reads():
    od = collections.OrderedDict(lr=0.1)
    buf = collections.deque([1.0, 2.0], maxlen=5)

    @janus.function(profile_calls=1)
    def step(x):
        return x * od["lr"] * buf[0] * len(buf)

    janus.reset()
    for _ in range(3):
        step(X)
    text = str(janus.explain(step))
    assert "is an OrderedDict with keys ['lr']" in text, text
    assert "is a deque (maxlen 5) of items [1.0, 2.0]" in text, text
    assert janus.stats(step)["graph_calls"] >= 1, \
        f"profile_calls=1: the graph built at call 2, whose guards explain describes, ran: {janus.stats(step)}"


def test_unpacking_a_user_iterable_runs_its_iter():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b
            self.iterated = 0

        def __iter__(self):
            self.iterated += 1
            return iter([self.a, self.b])

    def make(jit):
        pair = Pair(1.0, 2.0)

        @jit
        def step(x):
            a, b = pair
            return tf.add_n([x * a, x * b]) + max(*pair)

        return SimpleNamespace(fn=step, pair=pair, state=lambda: {"pair": (pair.a, pair.b, pair.iterated)})

    def change(p):
        p.pair.b = p.pair.b + 1.0
        return p.fn(X)

    check(make, [(X,), (X,), (X,), change, (X,), change], min_graph_calls=2)


def test_a_list_inside_a_list_read_by_value_is_changed_on_commit_only():
    """``self.rows[0].append(v)``: the inner list of a list of scalars read by value was the
    caller's own object in the trace, so tracing appended to it (found by the value-kind
    generator: eager 2, 3, 4 items, Janus 2, 4, 6)."""
    def make(jit):
        class Prog:
            def __init__(self):
                self.rows = [[1.0], [2.0]]
                self.pairs = ([1.0], 2.0)

            @jit
            def step(self, x):
                self.rows[0].append(1.0)
                self.pairs[0].append(float(len(self.rows[0])))
                return x * len(self.rows[0]) + self.rows[1][0] + sum(self.pairs[0])

        p = Prog()
        return SimpleNamespace(fn=p.step, p=p, state=lambda: {"rows": p.rows, "pairs": p.pairs})

    def trimmed(p):  # the caller trims the lists back, so the graph's guards hold again
        del p.p.rows[0][1:]
        del p.p.pairs[0][1:]
        return p.fn(X)

    check(make, [(X,), trimmed, trimmed, trimmed, (X,), trimmed], min_graph_calls=2)


def test_a_guard_on_a_defaultdict_item_never_inserts_the_key():
    """The trace read ``d['k2']``; the caller then removes ``k2``: checking (and explaining)
    the graph's guards on the next call must not make ``d['k2']`` exist with the default, as
    ``d['k2']`` in a guard would (found by the value-kind generator, seed 109)."""
    def make(jit):
        d = collections.defaultdict(float, k1=tf.constant(0.75))

        @jit
        def step(x):
            d.setdefault("k2", 0.75)
            return x + d["k1"] * d["k2"]

        return SimpleNamespace(fn=step, d=d, state=lambda: {"d": sorted(d.items())})

    def removed(p):
        p.d.pop("k2", None)
        return p.fn(X)

    check(make, [(X,), (X,), (X,), (X,), (X,), removed, (X,), removed, (X,)], min_graph_calls=2)


class Vec:
    """A user number type: its operators read its fields and count their calls."""

    calls = collections.Counter()

    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        Vec.calls["add"] += 1
        return Vec(self.v + (other.v if isinstance(other, Vec) else other))

    def __radd__(self, other):
        Vec.calls["radd"] += 1
        return Vec(other + self.v)

    def __mul__(self, other):
        Vec.calls["mul"] += 1
        return self.v * other

    def __lt__(self, other):
        Vec.calls["lt"] += 1
        return self.v < (other.v if isinstance(other, Vec) else other)

    def __eq__(self, other):
        Vec.calls["eq"] += 1
        return isinstance(other, Vec) and self.v == other.v

    def __neg__(self):
        Vec.calls["neg"] += 1
        return Vec(-self.v)

    def __iadd__(self, other):
        Vec.calls["iadd"] += 1
        self.v = self.v + other
        return self


def test_operators_of_a_user_class_run_converted_and_counted():
    """``a + b``, ``1 + a``, ``a * t``, ``a < b``, ``a == b``, ``-a`` and ``a += v`` on objects
    of the caller's state, whose fields the caller changes between calls."""
    def make(jit):
        state = SimpleNamespace(a=Vec(0.5), b=Vec(2.0))
        Vec.calls.clear()

        @jit
        def step(x):
            s = state.a + state.b
            t = 1.0 + state.a
            y = state.a * x + (-state.b).v
            if state.a < state.b:
                y = y + s.v
            if state.a == Vec(0.5):
                y = y * t.v
            acc = Vec(0.0)
            acc += 2.0
            return y + acc.v

        return SimpleNamespace(fn=step, state_=state,
                               state=lambda: {"a": state.a.v, "b": state.b.v, "calls": sorted(Vec.calls.items())})

    def change(a, b):
        def run(p):
            p.state_.a.v, p.state_.b.v = a, b
            return p.fn(X)
        return run

    check(make, [(X,), (X,), (X,), change(0.5, 3.0), change(4.0, 3.0), (X,), change(0.25, 0.5)], min_graph_calls=2)


# ------------------------------------------------------------------ every kind, one rule
def _ds(values):
    return tf.data.Dataset.from_tensor_slices(np.array(values, np.float32))


def _in_place(change):
    """A call that changes ``p.holder.value`` in place (``change(value)``), then calls the step."""
    return lambda p: (change(p.holder.value), p.fn(X))[1]


def _renamed(factory, value):
    """A call that rebinds ``p.holder.value`` to ``factory(value)``, then calls the step."""
    return lambda p: (setattr(p.holder, "value", factory(value)), p.fn(X))[1]


def _f1():
    return 1.0


def _f2():
    return 2.0


class _Plain:
    def __init__(self, a):
        self.a = a


_ENV = "JANUS_TEST_KINDS_EVERY"
# kind: (the value, how the step reads it, the changes the caller makes, whether a graph may read it)
KIND_SAMPLES = {
    Kind.TENSOR: (lambda: tf.constant(0.5), "v", [_renamed(tf.constant, 2.0)], True),
    Kind.COMPOSITE: (lambda: tf.ragged.constant([[0.5], [1.0, 2.0]]), "tf.reduce_sum(v.flat_values)",
                     [_renamed(tf.ragged.constant, [[3.0, 1.0]])], True),
    Kind.CONSTANT: (lambda: True, "2.0 if v else 1.0", [_renamed(bool, 0)], True),
    Kind.SCALAR: (lambda: 0.5, "v", [_renamed(float, 3.0)], True),
    Kind.SEQUENCE: (lambda: [0.5, 1.0], "v[0] + len(v)", [_in_place(lambda v: v.__setitem__(0, 2.0)),
                                                         _in_place(lambda v: v.append(1.0))], True),
    Kind.MAPPING: (lambda: collections.OrderedDict(a=0.5), "v['a']",
                   [_in_place(lambda v: v.__setitem__("a", 2.0))], True),
    Kind.DEQUE: (lambda: collections.deque([0.5], maxlen=2), "v[-1] + len(v)",
                 [_in_place(lambda v: v.append(3.0)), _in_place(lambda v: v.append(4.0))], True),
    Kind.SET: (lambda: {1, 2}, "len(v) + (3 in v)", [_in_place(lambda v: v.add(3))], True),
    Kind.TYPED_ARRAY: (lambda: array.array("d", [0.5]), "v[0]", [_in_place(lambda v: v.__setitem__(0, 2.0))], True),
    Kind.MAPPING_PROXY: (lambda: types.MappingProxyType(_PROXIED), "v['a']",
                         [lambda p: (_PROXIED.__setitem__("a", 2.0), p.fn(X))[1]], True),
    Kind.ENVIRON: (lambda: os.environ, f"float(v['{_ENV}'])",
                   [lambda p: (os.environ.__setitem__(_ENV, "2.0"), p.fn(X))[1]], True),
    Kind.WRAPPER: (lambda: collections.UserDict(a=0.5), "v['a']", [_in_place(lambda v: v.__setitem__("a", 2.0))],
                   True),
    Kind.DATASET: (lambda: _ds([0.5, 1.0]), "_sum_of(v)", [_renamed(_ds, [2.0, 3.0])], True),
    Kind.DATA_ITERATOR: (lambda: iter(_ds([0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])), "v.get_next()", [], True),
    Kind.PY_ITERATOR: (lambda: iter([0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]), "next(v)", [], False),
    Kind.NUMPY: (lambda: np.array([0.5], np.float32), "v[0]", [_in_place(lambda v: v.__setitem__(0, 2.0))], True),
    Kind.NAMED: (lambda: _f1, "v()", [_renamed(lambda f: f, _f2)], True),
    Kind.IMMUTABLE: (lambda: range(2), "len(v)", [_renamed(range, 5)], True),
    Kind.FRAMEWORK: (lambda: tf.Variable(0.5), "v", [_in_place(lambda v: v.assign(2.0))], True),
    Kind.USER_OBJECT: (lambda: _Plain(0.5), "v.a", [_in_place(lambda v: setattr(v, "a", 2.0))], True),
    Kind.TRACKED_OBJECT: (lambda: SimpleNamespace(a=0.5), "v.a", [_in_place(lambda v: setattr(v, "a", 2.0))],
                          True),
    Kind.TENSOR_ARRAY: (lambda: tf.TensorArray(tf.float32, size=1).write(0, 0.5), "v.read(0)", [], False),
    Kind.UNKNOWN: (lambda: bytearray(b"\x01"), "float(v[0])", [_in_place(lambda v: v.__setitem__(0, 2))], False),
}
_PROXIED = {"a": 0.5}
# UNDEF is no value a program holds: a segment's input not bound yet (tests/test_graph_breaks.py).
NOT_SAMPLED = {Kind.UNDEF}


def _sum_of(ds):
    total = 0.0
    for e in ds:
        total += e
    return total


def test_every_kind_has_a_sample():
    assert set(KIND_SAMPLES) | NOT_SAMPLED == set(Kind), set(Kind) - set(KIND_SAMPLES) - NOT_SAMPLED


@pytest.mark.parametrize("kind", list(KIND_SAMPLES), ids=lambda k: k.name)
def test_every_kind_is_guarded_on_what_was_read(kind):
    """The rule every kind keeps: a value the step reads, changed in place or rebound by the
    caller after the graph was built, gives eager's result; a kind that cannot be guarded
    never runs a graph."""
    value, read, changes, graphs = KIND_SAMPLES[kind]
    assert kinds.classify(value()) is kind
    mod = fresh_module(f"""
def step(holder, x):
    v = holder.value
    return x * ({read})
""", tf=tf, _sum_of=_sum_of)

    def make(jit):
        _PROXIED["a"] = 0.5
        os.environ[_ENV] = "0.5"
        holder = SimpleNamespace(value=value())
        fn = jit(mod.step)
        return SimpleNamespace(fn=lambda x: fn(holder, x), janus_fns=[fn], holder=holder)

    calls = [(X,)] * 4 + [c for change in changes for c in (change, (X,))]
    try:
        if graphs:
            check(make, calls, min_graph_calls=1)
        else:
            check(make, calls, eager_only=True)
    finally:
        os.environ.pop(_ENV, None)


def test_formatting_or_vars_of_a_user_object_never_freezes_its_text():
    """``f"{obj}"``, ``str(obj)`` of an object whose ``__str__`` reads its state, and
    ``vars(obj)[k]``: each read past the guards while tracing, so each fails the trace."""
    class Tag:
        def __init__(self):
            self.name = "a"

        def __str__(self):
            return self.name

    def make(jit):
        tag, conf = Tag(), SimpleNamespace(lr=0.5)

        @jit
        def step(x, how):
            if how == "f":
                label = f"{tag}"
            elif how == "str":
                label = str(tag)
            else:
                label = "a" if vars(conf)["lr"] < 1.0 else "b"
            return x * (2.0 if label == "a" else 3.0)

        return SimpleNamespace(fn=step, tag=tag, conf=conf, state=lambda: {"tag": tag.name, "lr": conf.lr})

    def renamed(how):
        def run(p):
            p.tag.name = "b" if p.tag.name == "a" else "a"
            p.conf.lr = 2.0 if p.conf.lr < 1.0 else 0.5
            return p.fn(X, how)
        return run

    for how in ("f", "str", "vars"):
        check(make, [(X, how)] * 4 + [renamed(how), (X, how), renamed(how)], eager_only=True)
