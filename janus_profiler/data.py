"""``ProfileData``: what the profiler saw, and the queries the converter asks.

Records are counted, never sampled, so they can be merged across calls and across
runs (``merge``) and written to / read from JSON (``to_json`` / ``from_json``).
Live objects seen at call sites (``callee_objects``) are kept for the converter,
which needs the actual function to inline, but they are not serialised.

Functions are keyed by ``"<normalised filename>:<first line>:<qualname>"`` so the
key survives a round trip through JSON and a reload of the module; every query that
takes ``fn_or_code`` accepts a function, a bound method, a code object, such a key,
or a ``"module.qualname"`` name.
"""
from __future__ import annotations

import json
import types
from collections import Counter
from typing import Any, Iterable

from .source import Site, norm_filename, normalize_site
from .values import TypeInfo

__all__ = ["ProfileData", "FunctionRecord", "SiteRecord", "func_key"]

FORMAT = "janus-profile"
VERSION = 1
#: Per-call argument records kept per function (the oldest are dropped first).
MAX_HISTORY = 1000
#: Distinct live callee objects kept per call site.
MAX_CALLEE_OBJECTS = 8


def _code_of(fn_or_code: Any) -> types.CodeType | None:
    if isinstance(fn_or_code, types.CodeType):
        return fn_or_code
    if isinstance(fn_or_code, types.MethodType):
        fn_or_code = fn_or_code.__func__
    seen = 0
    while not isinstance(fn_or_code, types.FunctionType) and seen < 8:
        inner = getattr(fn_or_code, "__wrapped__", None) or getattr(fn_or_code, "__func__", None)
        if inner is None:
            break
        fn_or_code, seen = inner, seen + 1
    if isinstance(fn_or_code, types.FunctionType):
        return fn_or_code.__code__
    for klass in type(fn_or_code).__mro__:  # a callable instance: its class's __call__
        call = klass.__dict__.get("__call__")
        if call is not None:
            return call.__code__ if isinstance(call, types.FunctionType) else None
    return None


def func_key(fn_or_code: Any) -> str:
    """The key under which a function's records are stored (see module docstring)."""
    if isinstance(fn_or_code, str):
        return fn_or_code
    code = _code_of(fn_or_code)
    if code is None:
        raise TypeError(f"not a Python function or code object: {type(fn_or_code).__name__}")
    return f"{norm_filename(code.co_filename)}:{code.co_firstlineno}:{code.co_qualname}"


def _counter_json(c: Counter, key=lambda k: k) -> list:
    return [[key(k), n] for k, n in c.most_common()]


class SiteRecord:
    """Everything recorded at one site; only the counters that apply are non-empty."""

    __slots__ = ("site", "function", "branches", "trips", "breaks", "callees", "recursive",
                 "callee_objs", "heap", "locals")

    def __init__(self, site: Site, function: str):
        self.site = site
        self.function = function
        self.branches: Counter = Counter()   # If/While/IfExp/Assert/comprehension-if: truth of the test;
        #                                      BoolOp: True if the short-circuit fired
        self.trips: Counter = Counter()      # For/While/comprehension: trip count -> times
        self.breaks = 0                      # loops that ended through ``break``
        self.callees: Counter = Counter()    # Call: callee key -> times
        self.recursive = 0                   # Call: calls that re-entered an active profiled function
        self.callee_objs: list = []          # Call: live callee objects (not serialised)
        self.heap: Counter = Counter()       # Attribute/Subscript/Name(global, cell): TypeInfo -> times
        self.locals: dict[str, Counter] = {}  # statements: local name -> TypeInfo -> times

    def merge(self, other: "SiteRecord") -> None:
        self.branches.update(other.branches)
        self.trips.update(other.trips)
        self.breaks += other.breaks
        self.callees.update(other.callees)
        self.recursive += other.recursive
        for o in other.callee_objs:
            self.add_callee_object(o)
        self.heap.update(other.heap)
        for name, c in other.locals.items():
            self.locals.setdefault(name, Counter()).update(c)

    def add_callee_object(self, obj: Any) -> None:
        if len(self.callee_objs) < MAX_CALLEE_OBJECTS and not any(o is obj for o in self.callee_objs):
            self.callee_objs.append(obj)

    def to_json(self) -> dict:
        d: dict = {"site": list(self.site), "function": self.function}
        if self.branches:
            d["branches"] = _counter_json(self.branches)
        if self.trips:
            d["trips"] = _counter_json(self.trips)
        if self.breaks:
            d["breaks"] = self.breaks
        if self.callees:
            d["callees"] = _counter_json(self.callees)
        if self.recursive:
            d["recursive"] = self.recursive
        if self.heap:
            d["heap"] = _counter_json(self.heap, TypeInfo.to_json)
        if self.locals:
            d["locals"] = {n: _counter_json(c, TypeInfo.to_json) for n, c in self.locals.items()}
        return d

    @classmethod
    def from_json(cls, d: dict) -> "SiteRecord":
        r = cls(Site(*d["site"]), d["function"])
        r.branches = Counter({bool(k): n for k, n in d.get("branches", [])})
        r.trips = Counter({int(k): n for k, n in d.get("trips", [])})
        r.breaks = d.get("breaks", 0)
        r.callees = Counter({k: n for k, n in d.get("callees", [])})
        r.recursive = d.get("recursive", 0)
        r.heap = Counter({TypeInfo.from_json(k): n for k, n in d.get("heap", [])})
        r.locals = {name: Counter({TypeInfo.from_json(k): n for k, n in c})
                    for name, c in d.get("locals", {}).items()}
        return r


class FunctionRecord:
    """Per-function records: calls, time, argument/return/exception history, its sites."""

    __slots__ = ("key", "qualname", "module", "filename", "firstlineno", "calls", "total_time",
                 "args", "args_dropped", "returns", "raised", "caught", "yields",
                 "is_generator", "is_coroutine", "sites", "code")

    def __init__(self, key: str, qualname: str, module: str | None, filename: str, firstlineno: int):
        self.key, self.qualname, self.module = key, qualname, module
        self.filename, self.firstlineno = filename, firstlineno
        self.calls = 0
        self.total_time = 0.0          # inclusive wall time of outermost activations, seconds
        self.args: list[dict[str, TypeInfo]] = []
        self.args_dropped = 0
        self.returns: Counter = Counter()
        self.raised: Counter = Counter()   # exception type name -> times it left the function
        self.caught: Counter = Counter()   # exception type name -> times it was handled inside
        self.yields = 0
        self.is_generator = False
        self.is_coroutine = False
        self.sites: list[Site] = []
        self.code: types.CodeType | None = None  # live code object, not serialised

    @property
    def name(self) -> str:
        return f"{self.module}.{self.qualname}" if self.module else self.qualname

    def add_args(self, args: dict[str, TypeInfo], limit: int = MAX_HISTORY) -> None:
        self.args.append(args)
        if len(self.args) > limit:
            drop = len(self.args) - limit
            del self.args[:drop]
            self.args_dropped += drop

    def merge(self, other: "FunctionRecord") -> None:
        self.calls += other.calls
        self.total_time += other.total_time
        self.args_dropped += other.args_dropped
        for a in other.args:
            self.add_args(dict(a))
        self.returns.update(other.returns)
        self.raised.update(other.raised)
        self.caught.update(other.caught)
        self.yields += other.yields
        self.is_generator |= other.is_generator
        self.is_coroutine |= other.is_coroutine
        for s in other.sites:
            if s not in self.sites:
                self.sites.append(s)
        self.code = self.code or other.code

    def to_json(self) -> dict:
        return {
            "key": self.key, "qualname": self.qualname, "module": self.module,
            "filename": self.filename, "firstlineno": self.firstlineno,
            "calls": self.calls, "total_time": self.total_time,
            "args": [{n: t.to_json() for n, t in a.items()} for a in self.args],
            "args_dropped": self.args_dropped,
            "returns": _counter_json(self.returns, TypeInfo.to_json),
            "raised": dict(self.raised), "caught": dict(self.caught), "yields": self.yields,
            "generator": self.is_generator, "coroutine": self.is_coroutine,
            "sites": [list(s) for s in self.sites],
        }

    @classmethod
    def from_json(cls, d: dict) -> "FunctionRecord":
        r = cls(d["key"], d["qualname"], d.get("module"), d["filename"], d["firstlineno"])
        r.calls, r.total_time = d["calls"], d["total_time"]
        r.args = [{n: TypeInfo.from_json(t) for n, t in a.items()} for a in d.get("args", [])]
        r.args_dropped = d.get("args_dropped", 0)
        r.returns = Counter({TypeInfo.from_json(k): n for k, n in d.get("returns", [])})
        r.raised, r.caught = Counter(d.get("raised", {})), Counter(d.get("caught", {}))
        r.yields = d.get("yields", 0)
        r.is_generator, r.is_coroutine = d.get("generator", False), d.get("coroutine", False)
        r.sites = [Site(*s) for s in d.get("sites", [])]
        return r


class ProfileData:
    """All records of a profiler; mergeable and JSON-serialisable.  See module docstring."""

    def __init__(self) -> None:
        self.functions: dict[str, FunctionRecord] = {}
        self.sites: dict[Site, SiteRecord] = {}

    # -- building (used by the profiler) ---------------------------------------------------
    def function_record(self, code: types.CodeType, module: str | None) -> FunctionRecord:
        key = func_key(code)
        r = self.functions.get(key)
        if r is None:
            r = self.functions[key] = FunctionRecord(key, code.co_qualname, module,
                                                     norm_filename(code.co_filename), code.co_firstlineno)
            r.code = code
        elif r.module is None:
            r.module = module
        return r

    def site_record(self, site: Site, function: str | None = None) -> SiteRecord | None:
        """The record of ``site``; created (for ``function``) if ``function`` is given."""
        site = normalize_site(site)
        r = self.sites.get(site)
        if r is None and function is not None:
            r = self.sites[site] = SiteRecord(site, function)
            f = self.functions.get(function)
            if f is not None:
                f.sites.append(site)
        return r

    # -- queries (used by the converter and the report) --------------------------------------
    def function(self, fn_or_code: Any) -> FunctionRecord | None:
        """The record of a function, or None if it never ran under the profiler."""
        if isinstance(fn_or_code, str) and fn_or_code not in self.functions:
            return next((f for f in self.functions.values() if f.name == fn_or_code), None)
        return self.functions.get(func_key(fn_or_code))

    def calls(self, fn_or_code: Any) -> int:
        f = self.function(fn_or_code)
        return f.calls if f else 0

    def arg_history(self, fn_or_code: Any) -> list[dict[str, TypeInfo]]:
        """One ``{param: TypeInfo}`` per profiled call, oldest first (at most MAX_HISTORY)."""
        f = self.function(fn_or_code)
        return list(f.args) if f else []

    def return_types(self, fn_or_code: Any) -> Counter:
        f = self.function(fn_or_code)
        return Counter(f.returns) if f else Counter()

    def sites_of(self, fn_or_code: Any) -> list[Site]:
        f = self.function(fn_or_code)
        return list(f.sites) if f else []

    def _site(self, site: Site) -> SiteRecord | None:
        return self.sites.get(normalize_site(site))

    def branch_outcomes(self, site: Site) -> Counter:
        """``{True: n, False: m}``: truth of the test; for a BoolOp, whether it short-circuited."""
        r = self._site(site)
        return Counter(r.branches) if r else Counter()

    def trip_counts(self, site: Site) -> Counter:
        """``{trip_count: times}`` of a ``for``/``while`` loop (or single-``for`` comprehension)."""
        r = self._site(site)
        return Counter(r.trips) if r else Counter()

    def break_count(self, site: Site) -> int:
        r = self._site(site)
        return r.breaks if r else 0

    def callees(self, site: Site) -> Counter:
        """``{callee_key: times}`` at a call site; keys are ``module.qualname`` strings."""
        r = self._site(site)
        return Counter(r.callees) if r else Counter()

    def callee_objects(self, site: Site) -> list:
        """Live callee objects seen at a call site (functions for methods; not serialised)."""
        r = self._site(site)
        return list(r.callee_objs) if r else []

    def recursive_calls(self, site: Site) -> int:
        r = self._site(site)
        return r.recursive if r else 0

    def heap_reads(self, site: Site) -> Counter:
        """``{TypeInfo: times}`` of the values read at an Attribute/Subscript/global or cell Name site."""
        r = self._site(site)
        return Counter(r.heap) if r else Counter()

    def local_types(self, site: Site) -> dict[str, Counter]:
        """At a statement site: ``{local name: {TypeInfo: times}}`` of the locals it reads."""
        r = self._site(site)
        return {n: Counter(c) for n, c in r.locals.items()} if r else {}

    def is_stable(self, site_or_fn: Any) -> bool:
        """True if the site always behaved the same way (and was seen at least once).

        For a site: one branch outcome, one trip count (and ``break`` either always or
        never), one callee, one heap value summary, one type per local.  For a
        function: identical argument summaries on every call and one return summary.
        """
        if isinstance(site_or_fn, Site):
            r = self._site(site_or_fn)
            if r is None:
                return False
            counters = [r.branches, r.trips, r.callees, r.heap, *r.locals.values()]
            seen = [c for c in counters if c]
            if not seen or any(len(c) > 1 for c in seen):
                return False
            return r.breaks in (0, sum(r.trips.values()))
        f = self.function(site_or_fn)
        if f is None or not f.args:
            return False
        return all(a == f.args[0] for a in f.args) and len(f.returns) <= 1

    # -- combining and storing -------------------------------------------------------------------
    def merge(self, other: "ProfileData") -> "ProfileData":
        """Add ``other``'s records to this one (in place); returns self."""
        for key, f in other.functions.items():
            mine = self.functions.get(key)
            if mine is None:
                mine = self.functions[key] = FunctionRecord(key, f.qualname, f.module, f.filename, f.firstlineno)
            mine.merge(f)
        for site, s in other.sites.items():
            mine_s = self.sites.get(site)
            if mine_s is None:
                mine_s = self.sites[site] = SiteRecord(site, s.function)
            mine_s.merge(s)
        return self

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps({
            "format": FORMAT, "version": VERSION,
            "functions": [f.to_json() for f in self.functions.values()],
            "sites": [s.to_json() for s in self.sites.values()],
        }, indent=indent, default=repr)

    @classmethod
    def from_json(cls, s: str) -> "ProfileData":
        d = json.loads(s)
        if d.get("format") != FORMAT:
            raise ValueError("not a janus profile (missing format marker)")
        if d.get("version") != VERSION:
            raise ValueError(f"unsupported janus profile version {d.get('version')}")
        data = cls()
        for f in d["functions"]:
            r = FunctionRecord.from_json(f)
            data.functions[r.key] = r
        for s_ in d["sites"]:
            r2 = SiteRecord.from_json(s_)
            data.sites[r2.site] = r2
        return data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProfileData) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"<ProfileData {len(self.functions)} functions, {len(self.sites)} sites>"

    def functions_by_time(self) -> Iterable[FunctionRecord]:
        return sorted(self.functions.values(), key=lambda f: (-f.total_time, -f.calls, f.key))
