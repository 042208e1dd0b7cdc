"""Break and fallback codes: one stable code for every reason Janus gives for running
something in Python (a statement at a graph break, a call eagerly, a function for good).

Each :class:`Code` has one :class:`Entry` (title, what it means, a small example, the fix
and the knob), rendered into ``docs/breaks.md`` by :func:`markdown` and checked by
``tests/test_break_codes.py`` (every code documented, every example producing its code).
A reason travels as a :class:`Reason`: its text (a ``str``, so messages read as before)
carrying its code, never parsed back from the words.  This module imports nothing of
Janus's and no TensorFlow: the converter reads it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    """Where the code leaves the program."""

    BREAK = "graph break or fallback"  # the statement runs in Python, or the call eagerly
    WHOLE = "whole function eagerly"  # no statement of it can be a graph segment
    GIVE_UP = "give-up"  # the function (or segment) runs as written from now on
    EAGER = "eager call"  # this call ran eagerly; the graphs stay
    NOTE = "note"  # the conversion changed course; nothing ran differently


class Code(str, enum.Enum):
    """A reason's stable code (``JB012``); the member's name says it in a word."""

    GENERATOR = "JB001"
    COROUTINE = "JB002"
    STATEMENT = "JB003"
    GLOBAL_NONLOCAL = "JB004"
    BUILTIN = "JB005"
    NO_SOURCE = "JB006"
    DO_NOT_CONVERT = "JB007"
    NOT_ALLOWED = "JB012"
    CONSTRUCTS = "JB013"
    TENSOR_VALUE = "JB014"
    PY_FUNCTION = "JB015"
    UNMODELED_VALUE = "JB016"
    ATTRIBUTE_HOOK = "JB017"
    PROTOCOL = "JB018"
    CONTEXT_MANAGER = "JB019"
    EXCEPT_LIBRARY = "JB020"
    TENSOR_BRANCH = "JB021"
    TENSOR_LOOP = "JB022"
    STATE_IN_TENSOR_FLOW = "JB023"
    RANDOM = "JB024"
    DATASET = "JB025"
    GRAPH_LIST = "JB026"
    TREE_RECURSION = "JB027"
    TRACE_TOO_LARGE = "JB028"
    NOT_LOADED = "JB029"
    LIBRARY_EFFECT = "JB030"
    LEAVES_GRAPH = "JB031"
    CREATES_VARIABLE = "JB032"
    STRING_FORMAT = "JB033"
    UNKNOWN_SHAPE = "JB034"
    UNDEFINED = "JB035"
    ISLAND = "JB036"
    DISTRIBUTED = "JB037"
    TYPE_QUERY = "JB038"
    MAPPING = "JB039"
    FAILED_BEFORE = "JB040"
    TAPE_OUTSIDE = "JB041"
    NEEDS_EAGER = "JB042"
    TENSOR_ARRAY = "JB043"
    BUDGET = "JB050"
    NEVER_REUSED = "JB051"
    FAILED_TWICE = "JB052"
    ALWAYS_ABORTS = "JB053"
    TOO_MANY_BREAKS = "JB054"
    UNSPLITTABLE = "JB055"
    RESTARTS = "JB056"
    JANUS_BUG = "JB057"
    RAISES_AS_EAGER = "JB058"
    NO_PAYBACK = "JB059"
    GUARD_MISS = "JB060"
    ASSUMPTION_FAILED = "JB061"
    RUN_ABORTED = "JB062"
    IN_REPLICA = "JB063"
    BUSY = "JB064"
    OTHER_WORKER = "JB065"
    REPLANNED = "JB066"
    SEGMENT_TRIAL = "JB067"
    DISABLED = "JB070"
    NOT_RUN = "JB071"

    def __str__(self) -> str:
        return self.value


class Reason(str):
    """A reason's words with its code: equal to its words (messages and tests read them),
    its code in ``.code``.  Composing one into longer words keeps the code: :func:`derived`."""

    __slots__ = ("code",)

    def __new__(cls, text: str, code: Code) -> "Reason":
        self = super().__new__(cls, text)
        self.code = code
        return self

    def __reduce__(self):
        return Reason, (str(self), self.code)


def reason(code: Code, text: str) -> Reason:
    """``text`` carrying ``code``."""
    return Reason(text, code)


def code_of(text: object, default: Code | None = None) -> Code | None:
    """The code ``text`` carries (``default`` when it is a plain string)."""
    return getattr(text, "code", None) or default


def derived(inner: object, text: str, default: Code = Code.JANUS_BUG) -> Reason:
    """``text`` (built around ``inner``'s words) carrying ``inner``'s code."""
    return Reason(text, code_of(inner, default))


def tagged(text: object) -> str:
    """``text [JB014]``: the words with their code, as messages and ``janus.explain`` show them."""
    code = code_of(text)
    return f"{text} [{code.value}]" if code is not None else str(text)


@dataclass(frozen=True)
class Entry:
    """One code's page in ``docs/breaks.md``.  ``example``: a program (``janus``, ``tf``,
    ``np`` imported) whose run gives the code, or None when it needs what a test cannot
    make (``why_no_example``)."""

    code: Code
    kind: Kind
    title: str
    meaning: str
    fix: str
    knob: str
    example: str | None
    why_no_example: str = ""

    @property
    def anchor(self) -> str:
        return self.code.value.lower()


EAGER_SEMANTICS = "Nothing to do: this is eager's semantics."
_ALLOW = "`janus.do_not_convert(f)` on the function keeps it plain (no attempt, no message)"
_STRICT = "`strict=True` / `JANUS_STRICT=1` raises `janus.GraphBreakError` naming this code instead"
_NONE = "none: this is how Janus keeps eager's results"


def _e(code: Code, kind: Kind, title: str, meaning: str, fix: str, knob: str, example: str | None,
       why_no_example: str = "") -> Entry:
    return Entry(code, kind, title, meaning, fix, knob, example.strip("\n") if example else None, why_no_example)


ENTRIES: dict[Code, Entry] = {e.code: e for e in (
    _e(Code.GENERATOR, Kind.WHOLE, "generator function",
       "The function yields: each call returns a generator, which a graph cannot be. The whole function runs eagerly.",
       "Move the tensor work into a plain function the generator calls; that function converts.", _ALLOW, """
@janus.function
def f(x):
    yield x * 2.0
for _ in range(4): list(f(tf.ones(2)))
"""),
    _e(Code.COROUTINE, Kind.WHOLE, "coroutine (async)",
       "`async def`, `await`, `async for` or `async with`: the function runs eagerly.",
       "Keep the tensor work in a plain function the coroutine awaits around.", _ALLOW, """
@janus.function
async def f(x):
    return x * 2.0
for _ in range(4): f(tf.ones(2)).close()
"""),
    _e(Code.STATEMENT, Kind.BREAK, "statement Janus does not convert",
       "A `class` definition, `:=`, `match`, `except*`, or `del` of a global name in the function. The statement "
       "runs in Python at a graph break; the rest of the function runs in graph segments.",
       "Write it another way (an `if` chain for `match`, the class defined outside), or leave it: a break costs one "
       "hand-over between Python and graphs.", _STRICT, """
@janus.function
def f(x):
    class Box: pass
    return x * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.GLOBAL_NONLOCAL, Kind.BREAK, "global or nonlocal Janus cannot defer",
       "A name declared `global`/`nonlocal` is bound other than by an assignment (a `for` target, a `def`), or is "
       "declared in a nested function: Janus cannot defer that write.",
       "Bind it with a plain assignment (`N = i` after the loop).", _STRICT, """
N = 0
@janus.function
def f(x):
    global N
    for N in range(2): pass
    return x * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.BUILTIN, Kind.BREAK, "builtin that never runs in a graph",
       "A call of a builtin such as `open()` or `input()`: it runs in Python at a graph break.",
       "Do the I/O outside the step, or leave it (the break keeps eager's behaviour).", _STRICT, """
@janus.function
def f(x):
    open(os.devnull).close()
    return x * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.NO_SOURCE, Kind.WHOLE, "source not available",
       "Janus converts from source: a function made by `eval`/`exec`, in a REPL without source, or whose source "
       "file changed since it was loaded runs eagerly.",
       "Define the function in a file (and reload it after editing).", _ALLOW, """
f = janus.function(eval("lambda x: x * 2.0"))
for _ in range(4): f(tf.ones(2))
"""),
    _e(Code.DO_NOT_CONVERT, Kind.BREAK, "callee marked janus.do_not_convert",
       "The function calls one marked `janus.do_not_convert`: that call runs in Python at a graph break (a function "
       "marked itself runs plainly).",
       "Nothing to do if you marked it on purpose; remove the mark to convert it.", "`janus.do_not_convert`", """
@janus.do_not_convert
def g(x): return x + 1.0
@janus.function
def f(x): return g(x) * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.NOT_ALLOWED, Kind.BREAK, "callee not allow-listed",
       "A call into an installed package's Python (not TensorFlow, Keras, NumPy, `math`): Janus does not convert "
       "third-party code unless allowed, so the statement runs in Python at a graph break.",
       "`janus.allow(module)` (or the function) if its Python is plain tensor code; otherwise leave it.",
       "`janus.allow(module_or_function)`", """
import textwrap
@janus.function
def f(x):
    return x * float(len(textwrap.dedent("ab")))
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.CONSTRUCTS, Kind.BREAK, "constructs a library object",
       "The function constructs an object of a class Janus does not model (a lock, a `Fraction`, a library class): "
       "its constructor runs in Python at a graph break.",
       "Construct it once outside the step and keep it in state.", "`janus.allow(module)` for a library class", """
import fractions
@janus.function
def f(x):
    return x * float(fractions.Fraction(1, 2))
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.TENSOR_VALUE, Kind.BREAK, "Python needs a tensor's value",
       "`.numpy()`, `float(t)`, `int(t)`, a NumPy call on a tensor the graph computes: Python needs the value "
       "before the graph has it. The statement runs in Python at a graph break.",
       "Keep it in TensorFlow (`tf.reduce_sum(x)` instead of `np.sum(x.numpy())`), or leave the break.", _STRICT, """
@janus.function
def f(x):
    s = np.sum(x.numpy())
    return x * s
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.PY_FUNCTION, Kind.BREAK, "Python run while the graph runs",
       "`tf.py_function`/`tf.numpy_function` would run Python inside the graph, where an aborted run could not take "
       "its effects back: the statement runs in Python at a graph break.",
       "Use TensorFlow ops, or leave the break.", _STRICT, """
@janus.function
def f(x):
    return tf.numpy_function(np.sin, [x], tf.float32) * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.UNMODELED_VALUE, Kind.BREAK, "a value Janus does not model",
       "The step reads a value whose contents Janus cannot guard or feed (a `bytearray`, an iterator, a list "
       "subclass, a container of non-scalars): the statement reading it runs in Python.",
       "Keep tensors, numbers, lists, dicts or NumPy arrays in the state the step reads.", _STRICT, """
BUF = bytearray(b"ab")
@janus.function
def f(x):
    return x * float(BUF[0])
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.ATTRIBUTE_HOOK, Kind.BREAK, "attribute behind __getattr__, __setattr__ or a descriptor",
       "An attribute comes from `__getattr__`, a data descriptor or a class defining `__setattr__`: Janus cannot "
       "guard or defer it, so the statement runs in Python.",
       "Store the value as a plain attribute.", _STRICT, """
class C:
    def __getattr__(self, name): return 2.0
c = C()
@janus.function
def f(x): return x * c.scale
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.PROTOCOL, Kind.BREAK, "an operator or protocol Janus does not model",
       "An implicit protocol (`len`, `in`, `[]`, an operator) of a library object whose method is C or library "
       "code reading what it holds: it runs in Python.",
       "Use plain containers, or leave the break.", _STRICT, """
import weakref
class K: pass
S = weakref.WeakSet([K])
@janus.function
def f(x): return x * float(len(S))
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.CONTEXT_MANAGER, Kind.BREAK, "a context manager that is not TensorFlow's",
       "`with lock:` or another Python context manager: entering it while tracing would not be eager's entering at "
       "each call, so the `with` runs in Python at a graph break.",
       "Nothing to do for a lock (eager's semantics); move other managers out of the step.", _STRICT, """
LOCK = threading.Lock()
@janus.function
def f(x):
    with LOCK: y = x * 2.0
    return y
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.EXCEPT_LIBRARY, Kind.BREAK, "except clause catching a library error while tracing",
       "An `except` caught an error library code raised while building the graph; eager may raise another one at "
       "run time, so the `try` runs in Python.",
       "Check the condition instead of catching (`if x.shape[0] == 3:`).", _STRICT, """
@janus.function
def f(x):
    try: y = tf.reshape(x, (3,))
    except Exception: y = x
    return y * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.TENSOR_BRANCH, Kind.BREAK, "tensor branch whose sides disagree",
       "A branch on a tensor whose two sides leave a variable with different structures, kinds or Python values: "
       "one `tf.cond` cannot carry both. The statement runs in Python.",
       "Give both sides the same structure (a tensor on both), or leave the break.", _STRICT, """
@janus.function(speculate=False)
def f(x):
    y = (x, x) if tf.reduce_sum(x) > 0 else x
    return y
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.TENSOR_LOOP, Kind.BREAK, "tensor loop Janus cannot carry",
       "A loop on a tensor condition whose carried variables change structure or kind, or hold Python values: "
       "one `tf.while_loop` cannot carry them. The loop runs in Python.",
       "Carry tensors of one shape (a `tf.TensorArray` for what grows).", _STRICT, """
@janus.function(speculate=False)
def f(x):
    s = "a"
    while tf.reduce_sum(x) < 5.0: x, s = x + 1.0, s + "a"
    return x
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.STATE_IN_TENSOR_FLOW, Kind.BREAK, "Python state changed under a tensor condition",
       "An item added to a dict, or a write Janus cannot carry out of a `tf.cond` or a `tf.while_loop`: the "
       "statement runs in Python.",
       "Write the value unconditionally (`d[k] = tf.where(c, new, old)`).", _STRICT, """
L = []
@janus.function(speculate=False)
def f(x):
    while tf.reduce_sum(x) < 5.0: x = x + 1.0; L.append(1)
    return x
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.RANDOM, Kind.BREAK, "random numbers a graph cannot draw as eager does",
       "A random op whose eager stream a graph cannot reproduce bit for bit (some parameters, op seeds, library "
       "draws): it runs in Python.",
       "Use `tf.random.Generator` or the stateless ops; or leave the break.", _STRICT, """
@janus.function
def f(x):
    return x * tf.random.gamma([2], alpha=[1.0, 2.0])
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.DATASET, Kind.BREAK, "dataset or iterator used other than by a for loop",
       "A `tf.data.Dataset` iterated by `list()`/`zip()`/`next()`, or an iterator a trace would consume: it runs in "
       "Python.",
       "Iterate the dataset with a `for` loop inside the step, or outside it.", _STRICT, """
@janus.function
def f(x):
    return x * float(len(list(tf.data.Dataset.range(3))))
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.GRAPH_LIST, Kind.BREAK, "a list or TensorArray the graph computes, used as Python",
       "A list whose length the graph computes (or a `TensorArray`) used where Python needs a number or an order: "
       "the statement runs in Python.",
       "Keep such lists inside TensorFlow (`tf.TensorArray`, `tf.stack`).", _STRICT, None,
       "needs a shift-reduce program; tests/test_graph_lists.py covers it"),
    _e(Code.TREE_RECURSION, Kind.BREAK, "recursion over trees Janus cannot batch",
       "A recursion over Python trees whose cases Janus cannot batch (a cycle, too many node kinds, a tree changed "
       "during the recursion): the call runs eagerly.",
       "Keep trees unchanged during the step; see docs/recursion.md.", _STRICT, None,
       "needs a tree model; tests/test_recursion.py covers it"),
    _e(Code.TRACE_TOO_LARGE, Kind.BREAK, "trace too large",
       "The trace inlined calls too deep, built more ops than `JANUS_MAX_TRACE_OPS`, or ran a Python loop 1,000 "
       "times: it is abandoned and the call runs eagerly (another call may fit).",
       "Loop with a tensor (`tf.range`) instead of unrolling; raise `JANUS_MAX_TRACE_OPS` if the graph is worth it.",
       "`JANUS_MAX_TRACE_OPS`", """
@janus.function
def f(x):
    for i in range(1500): x = x + 1.0
    return x
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.NOT_LOADED, Kind.EAGER, "imports a module not loaded yet",
       "An `import` inside the step of a module eager loads at this call: the call runs eagerly and a later call "
       "converts.", EAGER_SEMANTICS, _NONE, """
@janus.function(profile_calls=0)
def f(x):
    import wave
    return x * 2.0
for _ in range(3): f(tf.ones(2))
"""),
    _e(Code.LIBRARY_EFFECT, Kind.BREAK, "library code with effects while tracing",
       "Library code printed, built a layer or changed a variable in a graph of its own while tracing: done once "
       "in a trace, it would not be done at each call as eager does.",
       "Build layers before the step (call the model once); otherwise leave it.", _STRICT, None,
       "needs library code that prints or builds a layer while tracing"),
    _e(Code.LEAVES_GRAPH, Kind.BREAK, "a value made during the call leaves the graph",
       "The step returns or stores an object it created (a user object holding tensors, a graph op, a dataset): "
       "eager's caller would get a new Python object; the statement runs in Python.",
       "Return tensors (or tuples, lists, dicts of them).", _STRICT, """
@janus.function
def f(x):
    return tf.data.Dataset.from_tensors(x * 2.0)
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.CREATES_VARIABLE, Kind.BREAK, "creates a tf.Variable",
       "Eager creates a new `tf.Variable` at every call; a graph would create one once. The statement runs in "
       "Python.", "Create variables once, outside the step.", _STRICT, """
@janus.function
def f(x):
    v = tf.Variable(x)
    return v * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.STRING_FORMAT, Kind.BREAK, "a string of values the graph computes",
       "`str(t)`, `print(t, file=f)`, a format spec from the graph: the string needs the value. The statement runs "
       "in Python (`print(t)` to stdout and f-strings are deferred and need nothing).",
       "Print to stdout, or format after the step.", _STRICT, """
@janus.function
def f(x):
    print("%s" % x)
    return x * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.UNKNOWN_SHAPE, Kind.BREAK, "a shape the graph computes, needed by Python",
       "After shapes varied, the graph's shape is symbolic; Python needing a dimension's value (`range(x.shape[0])`, "
       "`len(x)`) cannot have it.",
       "Use `tf.shape(x)[0]` and tensor loops.", _STRICT, None,
       "Janus specializes the shapes Python reads, so a small program does not reach it"),
    _e(Code.UNDEFINED, Kind.EAGER, "a variable read before it is assigned",
       "Converted code touched a variable eager would not have bound: the call runs eagerly, which raises what it "
       "raises (`UnboundLocalError`), or not.", EAGER_SEMANTICS, _NONE, None,
       "eager raises the same error first; tests/test_definedness.py covers it"),
    _e(Code.ISLAND, Kind.BREAK, "a method that cannot run as a Python island",
       "A method drawing from a NumPy generator was not run inside the graph (it changes other state, or its "
       "arrays are used as NumPy): it runs in Python at a break.",
       "Keep the environment's `step` to its own object and generator.", _STRICT, None,
       "needs an environment class; tests/test_islands.py covers it"),
    _e(Code.DISTRIBUTED, Kind.BREAK, "distribution Janus cannot run as one graph",
       "A multi-worker step needing assertions, a `ParameterServerStrategy`, random datasets across workers: "
       "the call runs eagerly.", "See docs/distributed.md.", _STRICT, None, "needs a multi-worker cluster"),
    _e(Code.TYPE_QUERY, Kind.BREAK, "type(), isinstance() or hasattr() Janus cannot answer ahead",
       "The answer depends on the path (a number or a tensor) or on Python state (`hasattr`): the statement runs "
       "in Python.", "Decide outside the step, or keep one kind on every path.", _STRICT, """
class C: pass
c = C()
@janus.function
def f(x): return x * (2.0 if hasattr(c, "w") else 1.0)
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.MAPPING, Kind.BREAK, "a mapping read or changed as Janus cannot defer",
       "A `defaultdict` missing key read other than by `[]`, a key of another type, or `os.environ` changed inside "
       "the step: the statement runs in Python.", "Change the environment outside the step.", _STRICT, """
@janus.function
def f(x):
    os.environ.pop("JANUS_EXAMPLE", None)
    return x * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.FAILED_BEFORE, Kind.BREAK, "a run-time check that failed before",
       "A check (a raising side taken, an int32 overflow, a list index out of range) failed in a graph before, so "
       "the statement runs in Python rather than in a graph that would abort again.", EAGER_SEMANTICS, _STRICT, None,
       "needs a check to fail more often than it holds; tests/test_speculation.py covers it"),
    _e(Code.TAPE_OUTSIDE, Kind.BREAK, "a GradientTape recorded outside the step",
       "The step uses a tape the caller recorded: what it recorded is not in the graph. The statement runs in "
       "Python.", "Open the tape inside the step.", _STRICT, """
w = tf.Variable(1.0)
with tf.GradientTape(persistent=True) as T: loss = w * 2.0
@janus.function
def f(x): return T.gradient(loss, w) * x
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.NEEDS_EAGER, Kind.BREAK, "the trace raised where eager does not",
       "Tracing a statement raised an exception that eager, running the same call, did not (a library call that "
       "needs eager values, as Keras's `get_weights()` does, or code that asks `tf.executing_eagerly()`): from the "
       "next call on the statement runs in Python, the rest in graph segments.",
       "Move the statement out of the step (read weights once before it), or keep it: it runs as written.",
       _STRICT, """
@janus.function
def f(x):
    if not tf.executing_eagerly(): raise RuntimeError("eager only")
    return x * 2.0
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.TENSOR_ARRAY, Kind.BREAK, "a TensorArray used as the trace cannot follow eager's",
       "Eager's `TensorArray` is one object: a write changes it in place, a read clears the item (a second read "
       "raises, `stack` gives zeros there). The trace follows that in straight-line code; an array read or written "
       "inside a tensor loop or conditional and used after it, or read again at indices the graph computes, is not "
       "followed: the statement runs in Python.",
       "Read a TensorArray once per item, with `clear_after_read=False` if you read it again, and keep what a loop "
       "reads out of later `stack` calls.", _STRICT, """
@janus.function
def f(x, n):
    ta = tf.TensorArray(tf.float32, size=3, element_shape=(2,)).unstack(tf.stack([x, x, x]))
    for i in tf.range(n): x = x + ta.read(i)
    return x, ta.stack()
for n in (1, 2, 3, 1, 2, 3, 1, 2): f(tf.ones(2), tf.constant(n))
"""),
    _e(Code.BUDGET, Kind.GIVE_UP, "conversion budget used",
       "The function used its conversions (misses and failed traces): it runs eagerly from now on.",
       "Pass a value that changes at every call as a tensor.", _ALLOW, None,
       "needs MAX_CONVERSIONS failing conversions; tests/test_policy.py covers it"),
    _e(Code.NEVER_REUSED, Kind.GIVE_UP, "graphs never reused",
       "The last graphs each served only the call that built them (a value they specialize on changes at every "
       "call): the function runs eagerly from now on.",
       "Pass the changing value as a tensor (a string or object: keep it out of the step).", _ALLOW, """
@janus.function
def f(x, s):
    return x * float(len(s))
for i in range(14): f(tf.ones(2), "a" * i)
"""),
    _e(Code.FAILED_TWICE, Kind.GIVE_UP, "conversion failed twice the same way",
       "Two conversions failed alike where no graph break could be made: the function runs eagerly from now on.",
       "See the failure's own code in `janus.explain(f)`.", _ALLOW, """
@janus.function(strict=False)
def f(x, n):
    return tf.reshape(x, (n,))
for _ in range(8):
    try: f(tf.ones(2), 3)
    except Exception: pass
"""),
    _e(Code.ALWAYS_ABORTS, Kind.GIVE_UP, "graph failed on each of its runs",
       "A graph's op failed at every run while eager succeeded: the graph, not the input, is wrong; the function "
       "runs eagerly.", "Report it (a bug in Janus or TensorFlow); `janus.do_not_convert` meanwhile.", _ALLOW, None,
       "needs a graph TensorFlow cannot run; tests/test_budget_bugs.py covers it"),
    _e(Code.TOO_MANY_BREAKS, Kind.GIVE_UP, "too many graph breaks",
       "More than 8 graph breaks in a function and its segments: it runs eagerly as a whole.",
       "Fix the breaks `janus.explain(f)` lists (each has its own code).", _ALLOW, """
@janus.function
def f(x):
    a = x.numpy().sum(); x = x * a
    b = x.numpy().sum(); x = x * b
    c = x.numpy().sum(); x = x * c
    d = x.numpy().sum(); x = x * d
    e = x.numpy().sum(); x = x * e
    g = x.numpy().sum(); x = x * g
    h = x.numpy().sum(); x = x * h
    i = x.numpy().sum(); x = x * i
    j = x.numpy().sum(); x = x * j
    return x
for _ in range(40): f(tf.ones(2))
"""),
    _e(Code.UNSPLITTABLE, Kind.BREAK, "cannot split at a graph break",
       "A statement could not run in a graph but the function cannot be split there (strict mode, a multi-worker "
       "step, a break inside a loop body Janus cannot cut): the call runs eagerly.",
       "Move the statement out of the construct, or into a function of its own.", _STRICT, None,
       "depends on the function's shape; tests/test_graph_breaks.py covers it"),
    _e(Code.NO_PAYBACK, Kind.GIVE_UP, "conversions cost more than they saved",
       "Over the whole run so far, the function's conversions (failed traces included) cost more than its graphs "
       "saved: its time is more than 10% over eager's estimate, by more than one conversion, after three "
       "conversions, and the next would be made like the last ones. It stops converting and runs eagerly, "
       "unprofiled (graphs that were reused stay unless slower than eager). `janus.explain(f)` shows the seconds.",
       "Pass values that change between calls as tensors, so that one graph serves them.",
       "`config.WHOLE_RUN_SLACK` (None: off)", None,
       "depends on measured time; tests/test_whole_run.py forces it with a fake clock"),
    _e(Code.RESTARTS, Kind.EAGER, "trace kept restarting",
       "The trace restarted more than its bound (each time learning what to feed or check): the call runs eagerly.",
       "Report it with `janus.explain(f)`.", _NONE, None, "a bound that tests reach by monkeypatching"),
    _e(Code.JANUS_BUG, Kind.EAGER, "failure inside Janus",
       "Janus itself failed converting or checking: the call runs eagerly and correctly.",
       "Report it, with `janus.explain(f)`.", _ALLOW, None, "a bug has no example"),
    _e(Code.RAISES_AS_EAGER, Kind.EAGER, "the call raises, as eager does",
       "The trace raised the user's own exception; eager raised it too: such calls run eagerly (and raise), the "
       "graphs stay for the others.", EAGER_SEMANTICS, _NONE, """
@janus.function
def f(x):
    if x.shape[0] > 2: raise ValueError("too long")
    return x * 2.0
for n in (2, 2, 2, 3, 3, 3, 3):
    try: f(tf.ones(n))
    except ValueError: pass
"""),
    _e(Code.GUARD_MISS, Kind.EAGER, "no cached graph's guards held",
       "The call differed from every cached graph's assumptions (a Python value, a shape, a type): it ran eagerly, "
       "profiled, and a new graph may follow.", "Pass values that change as tensors.", _NONE, """
@janus.function
def f(x, flag):
    return x * 2.0 if flag else x
for i in range(8): f(tf.ones(2), i > 4)
"""),
    _e(Code.ASSUMPTION_FAILED, Kind.EAGER, "an assumption failed in the graph",
       "A speculation (a branch that always went one way, a loop's trip count) failed while the graph ran: nothing "
       "was committed, the call re-ran eagerly, and the next graph no longer assumes it.", EAGER_SEMANTICS,
       "`speculate=False` assumes nothing", """
@janus.function
def f(x):
    if tf.reduce_sum(x) > 0: return x
    return -x
for v in (1, 1, 1, 1, 1, -1): f(tf.fill([2], float(v)))
"""),
    _e(Code.RUN_ABORTED, Kind.EAGER, "a graph run aborted",
       "The user's `assert`, an op (a bad index, a NaN check) or a taken raising side failed in the graph: nothing "
       "was committed and the call re-ran eagerly (the graph stays).", EAGER_SEMANTICS, _NONE, """
@janus.function
def f(x):
    assert tf.reduce_sum(x) > 0
    return x * 2.0
for v in (1, 1, 1, 1, 1, -1):
    try: f(tf.fill([2], float(v)))
    except AssertionError: pass
"""),
    _e(Code.IN_REPLICA, Kind.EAGER, "called inside strategy.run",
       "Inside a replica context the function runs as written: the strategy traces it itself.", EAGER_SEMANTICS,
       _NONE, None, "needs a tf.distribute strategy; tests/test_distribute.py covers it"),
    _e(Code.BUSY, Kind.EAGER, "another thread was converting",
       "Another thread was profiling or converting the function: this call ran as written rather than wait.",
       EAGER_SEMANTICS, _NONE, None, "needs two threads racing; tests/test_threads_signals.py covers it"),
    _e(Code.OTHER_WORKER, Kind.EAGER, "another worker could not run a graph",
       "Workers of a multi-worker strategy take one path: one could not run a graph, so every worker ran eagerly.",
       EAGER_SEMANTICS, _NONE, None, "needs a multi-worker cluster"),
    _e(Code.REPLANNED, Kind.NOTE, "retraced with a revised plan",
       "A trace learned what not to assume (a NumPy array read as NumPy, a value Python needs, a check after a "
       "state update) and traced again; nothing ran differently.", EAGER_SEMANTICS, _NONE, """
A = np.ones(2)
@janus.function
def f(x):
    return x * float(A.sum())
for _ in range(6): f(tf.ones(2))
"""),
    _e(Code.SEGMENT_TRIAL, Kind.NOTE, "a graph segment's trial against eager",
       "A graph segment was timed as a graph and as written; it stays a graph only if faster (whole calls decide "
       "under a tape). 'runs as written' means eager was faster.", EAGER_SEMANTICS, _NONE, """
@janus.function
def f(x):
    y = x * 2.0
    s = np.sum(y.numpy())
    return y * s
for _ in range(30): f(tf.ones(2))
"""),
    _e(Code.DISABLED, Kind.EAGER, "Janus is disabled",
       "`JANUS_DISABLE=1`: every function runs plainly.", "Unset `JANUS_DISABLE`.", "`JANUS_DISABLE`", None,
       "needs the process started with JANUS_DISABLE=1; tests/test_introspection_rules.py covers it"),
    _e(Code.NOT_RUN, Kind.EAGER, "Janus has not run it",
       "The function is not decorated, not taken over by `janus.enable()`/`python -m janus`, or not called since.",
       "Decorate it with `@janus.function`, or record a tape in it under `janus.enable()`.", "`janus.function`",
       None, "the absence of a run has no example; tests/test_introspection_rules.py covers it"),
)}


def entry(code: Code) -> Entry:
    return ENTRIES[code]


def markdown() -> str:
    """``docs/breaks.md``: every code's entry (the file is this text; a test compares them)."""
    lines = ["# Break and fallback codes", "",
             "Every reason Janus gives for running something in Python has a code: a statement at a graph",
             "break, a call run eagerly, a function given up on. `janus.explain(f)`, the log, strict mode's",
             "`janus.GraphBreakError` and the report page (`JANUS_REPORT_HTML`) name it as `[JB014]`.",
             "This page is generated from `janus/reporting/codes.py` (`python -m janus.reporting.codes > docs/breaks.md`);",
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
