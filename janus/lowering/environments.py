"""A gymnasium environment's ``reset`` and ``step``, wrappers included, run as a Python
island inside the graph.

An episode stepped inside a tape (``state, reward, terminated, truncated, _ =
env.step(action)``) reaches gymnasium's Python, which Janus does not convert: without
this module, every ``env.step`` is a graph break, and the episode a Python loop of small
segments.  Here the graph calls the environment's own method, in Python, through
``tf.numpy_function`` where the call stood (:func:`janus.lowering.islands.island_op`), so
the loop around it can stay in the graph with eager's trajectory.  Three things keep that
all-or-nothing:

* **Vouched code.**  A user method's island is proved confined by analysing its source;
  gymnasium's ``step`` goes through wrappers, the passive environment checker, spaces and
  seeding utilities, whose effects were reviewed by hand instead: the classes in
  :data:`VOUCHED` change nothing but the attributes of the environment and its wrappers,
  the contents of what those hold, and their NumPy generators (and may warn through
  ``warnings``, which the island lets through as eager does).  The review holds for the
  source it read: every module those classes run is compared with the digest of the
  reviewed version (:data:`REVIEWED`), and a different gymnasium makes ``step`` a graph
  break again.  So does a wrapper or environment not in the list, a ``render_mode``
  (rendering draws a window), and an instance that overrides the method.
* **Undo, not a copy.**  The island runs on the program's own objects: before each graph
  run their tree is saved, and a run that aborts puts it back in place
  (:mod:`janus.commit.object_trees`).  The trace refuses to read or write the tree's
  attributes after the island (the graph was fed their values of before the run).
* **Types from the environment.**  The graph must know what ``step`` and ``reset`` return:
  the observation as the environment's observation space declares it, the reward as the
  vouched environment returns it, two bools, an empty ``info``.  Every run checks the
  results and aborts where they differ (the eager re-run returns what eager does).

Arguments are what eager would pass: numbers the graph computes
(``int(tf.random.categorical(logits, 1)[0, 0])``) become the Python numbers eager's code
computed, at run time; plain constants pass as they are.
"""
from __future__ import annotations

import hashlib
import inspect
import sys
import types
from typing import Any

import numpy as np

from janus.commit.island_copies import CommitIsland, plain
from janus.commit.object_trees import TreeChanged, TreeSnapshot, save
from janus.convert.libraries import qualified_name
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering import islands
from janus.lowering.island_specs import ArraySpec, EmptyDictSpec, ScalarSpec, SequenceSpec
from janus.trace.active import current
from janus.trace.arrays import FED_DTYPES, FedArray
from janus.trace.scalars import PyScalar

# Classes whose reset and step were reviewed (gymnasium 1.4.0): their effects stay in the
# tree of the environment, its wrappers, spaces and generators.  Environments: the kind of
# the reward their step returns.
_WRAPPERS = frozenset({
    "gymnasium.wrappers.common.TimeLimit", "gymnasium.wrappers.common.OrderEnforcing",
    "gymnasium.wrappers.common.PassiveEnvChecker",
})
_ENVIRONMENTS = {"gymnasium.envs.classic_control.cartpole.CartPoleEnv": float}
# what else the tree holds, saved and put back as any member
_HELD = frozenset({
    "gymnasium.spaces.discrete.Discrete", "gymnasium.spaces.box.Box", "gymnasium.envs.registration.EnvSpec",
    "gymnasium.envs.registration.WrapperSpec",
})
VOUCHED = _WRAPPERS | frozenset(_ENVIRONMENTS)
# sha256 (first 16 hex digits) of the reviewed source of every module the vouched code runs
REVIEWED = {
    "gymnasium.core": "2a7a1bef059c8be0",
    "gymnasium.wrappers.common": "ef31d8b3c302ba12",
    "gymnasium.utils.passive_env_checker": "b61d74c60194ca1f",
    "gymnasium.envs.classic_control.cartpole": "8c034275500ff9c6",
    "gymnasium.envs.classic_control.utils": "5077e47a6ef0e49a",
    "gymnasium.utils.seeding": "eb2a223b92604b7d",
    "gymnasium.spaces.discrete": "0db553af0be7e013",
    "gymnasium.spaces.box": "350b9c27516fd407",
    "gymnasium.spaces.space": "8c1f48ba957ae6d2",
    "gymnasium.logger": "381491c5c34b05f6",
    "gymnasium.error": "73e8eb51a2621b99",
}
_METHODS = ("step", "reset")
_digests_match: bool | None = None


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def is_environment_method(f: Any) -> bool:
    """``f`` is ``reset`` or ``step`` of a gymnasium environment or wrapper (vouched or not)."""
    if not isinstance(f, types.MethodType) or f.__name__ not in _METHODS or "gymnasium" not in sys.modules:
        return False
    core = sys.modules.get("gymnasium.core")
    return core is not None and isinstance(f.__self__, core.Env)


def _member(obj: Any) -> bool:
    """An object of the tree the snapshot saves: a vouched class's, or what they hold."""
    name = _name(type(obj))
    return name in VOUCHED or name in _HELD


def _reviewed() -> bool:
    """The installed gymnasium's source is the reviewed one (computed once)."""
    global _digests_match
    if _digests_match is None:
        def digest(module: str) -> str | None:
            path = getattr(sys.modules.get(module), "__file__", None)
            if path is None:
                return None
            with open(path, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()[:16]
        _digests_match = all(digest(m) == d for m, d in REVIEWED.items())
    return _digests_match


def unvouched(root: Any, method: str) -> str | None:
    """Why Janus cannot vouch for ``root.method`` (None: it can): a wrapper or environment
    it did not review, another gymnasium, rendering, an instance overriding the method."""
    obj, chain = root, []
    while True:
        name = _name(type(obj))
        chain.append(name)
        if name not in VOUCHED:
            return f"{name} is not among the wrappers and environments Janus vouches for"
        if method in vars(obj) or inspect.getattr_static(type(obj), method, None) is None:
            return f"{name}.{method} is overridden on the instance"
        if name in _ENVIRONMENTS:
            break
        obj = vars(obj).get("env")
        if obj is None:
            return f"{name} wraps no environment"
    if vars(obj).get("render_mode") is not None:
        return f"{chain[-1]} renders (render_mode={vars(obj)['render_mode']!r})"
    if not _reviewed():
        return "the installed gymnasium's source differs from the version Janus reviewed"
    return None


def _unwrapped(root: Any) -> Any:
    while _name(type(root)) not in _ENVIRONMENTS:
        root = vars(root)["env"]
    return root


def _result_spec(env: Any, method: str) -> Any:
    """What ``method`` of the vouched environment ``env`` returns, as an island's spec; or why
    the graph cannot carry it."""
    space = vars(env).get("observation_space")
    if _name(type(space)) != "gymnasium.spaces.box.Box" or np.dtype(space.dtype) not in FED_DTYPES:
        return f"its observation space is a {type(space).__name__}"
    obs = ArraySpec(np.dtype(space.dtype), tuple(space.shape), new=True)  # the vouched code makes a new one
    if method == "reset":
        return SequenceSpec(tuple, (obs, EmptyDictSpec()))
    reward = ScalarSpec(_ENVIRONMENTS[_name(type(env))])
    return SequenceSpec(tuple, (obs, reward, ScalarSpec(bool), ScalarSpec(bool), EmptyDictSpec()))


def island(f: types.MethodType, args: tuple, kwargs: dict) -> Any:
    """``f(*args, **kwargs)`` for ``reset``/``step`` of a gymnasium environment, as a Python
    island; raises the ConversionError of a callee Janus does not convert (a graph break)
    when it cannot be one."""
    ctx = current()
    root, fn = f.__self__, f.__func__
    why = _refusal(ctx, f, args, kwargs)
    if why is None and ctx.checks.speculator is not None and fn in ctx.checks.speculator.no_islands:
        why = "its observations are used as NumPy"
    spec = _result_spec(_unwrapped(root), f.__name__) if why is None else why
    if isinstance(spec, str):
        raise ConversionError(f"callee not allow-listed: {qualified_name(f)} (not a Python island: {spec})",
                              permanent=True, code=Code.NOT_ALLOWED)
    record = ctx.heap.islands.get(id(root))
    if record is None:
        source = ctx.source_of(root)
        snapshot = TreeSnapshot(source.label, ctx.getter(source), _member, kind="gymnasium environment",
                                check=lambda env: unvouched(env, "step") or unvouched(env, "reset"))
        record = islands.Island(snapshot, frozenset())
        for member in _tree(root):  # the trace may read none of the tree's attributes after it
            ctx.heap.islands[member] = record
        ctx.log.effects.append(CommitIsland(snapshot))
    method = f"{type(root).__name__}.{f.__name__}"
    if method not in record.copy.methods:
        record.copy.methods.append(method)
    label = record.copy.label

    def run(*python_args: Any, **python_kwargs: Any) -> Any:
        if record.copy.saved is None:
            raise islands.IslandRunFailed(f"{label} was not saved before this run")
        return f(*python_args, **python_kwargs)

    return islands.island_op(run, args, kwargs, spec, f"janus_env_{f.__name__}", fn, ctx.heap.islands_misused)


def _tree(root: Any) -> set[int] | str:
    """The ids of the objects of ``root``'s tree whose attributes the island may change; or
    why the tree could not be put back if a run aborted."""
    try:
        return {id(obj) for obj, before in save(root, _member, "the environment") if hasattr(obj, "__dict__")
                and not isinstance(obj, (dict, list, np.ndarray))}
    except TreeChanged as error:
        return str(error)


def _refusal(ctx: Any, f: types.MethodType, args: tuple, kwargs: dict) -> str | None:
    """Why ``f`` cannot be an island in this trace (None: it can)."""
    root = f.__self__
    why = unvouched(root, f.__name__)
    if why is not None:
        return why
    why = islands.where_refused(ctx)
    if why is not None:
        return why
    if ctx.source_of(root) is None:
        return "the environment is not Python state the function reads"
    tree = _tree(root)
    if isinstance(tree, str):
        return tree
    if any(key[0] in tree for key in ctx.heap.overlay):
        return "the function changes the environment before it"
    values = (*args, *kwargs.values())
    if not all(isinstance(v, PyScalar) or isinstance(v, FedArray) and None not in v.dims
               or plain(v) and not isinstance(v, np.ndarray) for v in values):
        return "an argument is neither a Python number, an array of a fixed shape nor a plain constant"
    return None
