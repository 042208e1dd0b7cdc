"""The package layout keeps its promises: no import cycles, a converter without TensorFlow,
and a profiler that knows nothing of Janus."""
import ast
import os
import subprocess
import sys

import janus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("janus", "janus_profiler")


def _modules() -> dict[str, str]:
    """Dotted module name -> file, for every module of Janus and its profiler."""
    found = {}
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                found[".".join(rel)] = os.path.join(folder, name)
    return found


def _imports(module: str, path: str, modules: dict) -> set[str]:
    """Modules of ours that ``module`` imports anywhere in its file (module or function level),
    at run time: an ``if TYPE_CHECKING:`` block names types for readers and type checkers only."""
    is_package = path.endswith("__init__.py")
    out = set()
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _is_type_checking(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                anchor = parts if is_package else parts[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in modules else base)
    if module == "janus":  # the public names are imported lazily, on first use
        out |= set(janus._LAZY.values())
    return {m for m in out if m in modules and m != module}


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return result


def test_no_import_cycles():
    modules = _modules()
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    assert len(graph) > 40
    assert _cycles(graph) == []


def test_profiler_imports_nothing_from_janus():
    modules = _modules()
    for m, p in modules.items():
        if m.startswith("janus_profiler"):
            bad = {i for i in _imports(m, p, modules) if i == "janus" or i.startswith("janus.")}
            assert not bad, f"{m} imports {bad}"


# A module a reader takes in at one sitting (issue #41): the profiler's were 642 and 529 lines,
# the registry of break codes 676.
MAX_MODULE_LINES = 450


def test_every_module_stays_readable_in_one_sitting():
    for m, p in _modules().items():
        if m.startswith(("janus_profiler", "janus.")):
            with open(p, encoding="utf-8") as fh:
                n = sum(1 for _ in fh)
            assert n <= MAX_MODULE_LINES, f"{m} has {n} lines (at most {MAX_MODULE_LINES})"


def test_the_architecture_map_names_every_module():
    """docs/architecture.md's map of the tree names every module (issue #41): a reader finds a
    file's job there before opening it."""
    import re

    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as fh:
        doc = fh.read()
    start = doc.index("```\njanus/\n")
    words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", doc[start:doc.index("```", start + 4)]))
    unnamed = sorted(p for m, p in _modules().items() if not p.endswith("__init__.py")
                     and os.path.basename(p)[:-3] not in words)
    assert not unnamed, f"not in docs/architecture.md's map: {unnamed}"


def test_profiler_finds_the_conversion_checker_without_importing_janus():
    code = ("import sys, janus_profiler.report as r\n"
            "checker = r.find_checker()\n"
            "assert checker is not None and checker.__module__ == 'janus.convert.support', checker\n"
            "assert 'tensorflow' not in sys.modules\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_stages_depend_one_way():
    """convert <- trace <- commit <- lowering <- graphs <- driver <- takeover: no stage imports a later one."""
    order = ["convert", "trace", "commit", "lowering", "graphs", "driver", "takeover"]
    modules = _modules()
    for m, p in modules.items():
        parts = m.split(".")
        if parts[0] != "janus" or len(parts) < 2 or parts[1] not in order:
            continue
        rank = order.index(parts[1])
        for imported in _imports(m, p, modules):
            ip = imported.split(".")
            if ip[0] == "janus" and len(ip) > 1 and ip[1] in order:
                assert order.index(ip[1]) <= rank, f"{m} (stage {parts[1]}) imports {imported}"


def test_converter_imports_no_tensorflow():
    code = ("import sys, janus.convert.pipeline, janus.convert.support, janus.convert.analysis\n"
            "assert 'tensorflow' not in sys.modules, sorted(m for m in sys.modules if 'tensorflow' in m)[:5]\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_converter_annotations_go_through_the_registry():
    """No pass or analysis sets or reads a loose ``jn_*`` attribute on AST nodes."""
    import re

    for m, p in _modules().items():
        if m.startswith("janus.convert") and m != "janus.convert.anno":
            with open(p, encoding="utf-8") as fh:
                text = fh.read()
            assert not re.search(r"\.jn_[a-z]|[\"']jn_[a-z]", text), f"{m} uses a loose jn_ annotation"


def test_one_user_code_predicate():
    """janus_profiler.usercode decides for the profiler, janus-profile, the hook and the lowering
    (through the allow-list, janus.convert.libraries)."""
    import json as stdlib_module

    import numpy

    from janus.convert import libraries
    from janus.takeover import hook
    from janus_profiler import usercode

    assert usercode.is_user_file(__file__)
    assert usercode.is_user_file("<ipython-input-1-abc>")
    for library in (stdlib_module.__file__, numpy.__file__, janus.__file__, usercode.__file__, "<frozen os>"):
        assert not usercode.is_user_file(library), library
        assert not libraries.is_user_code_file(library), library
        assert not hook.is_user_file(library), library
    assert libraries.is_user_code_file(__file__) and hook.is_user_file(__file__)


def test_every_restart_signal_is_defined_in_errors_and_revises_a_plan():
    """A trace's restart says what the next trace changes (``revise(plan)``), and every kind
    is found in one place: ``janus/errors.py``."""
    from janus import errors

    defined_elsewhere = []
    for module, path in _modules().items():
        if module == "janus.errors" or not module.startswith("janus"):
            continue
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    (b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)) in _restart_names(errors)
                    for b in node.bases):
                defined_elsewhere.append(f"{module}.{node.name}")
    assert not defined_elsewhere, defined_elsewhere
    for signal in _subclasses(errors.Restart):
        assert signal.revise is not errors.Restart.revise, f"{signal.__name__} does not say how it revises a plan"


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _restart_names(errors) -> set[str]:
    return {"Restart"} | {c.__name__ for c in _subclasses(errors.Restart)}


def test_no_module_shadows_the_standard_library():
    """A module named like the standard library's (``random``, ``builtins``, ``html``) reads as
    that module at its import sites and in tracebacks.  (The ``janus.trace`` package is named
    for the pipeline's stage; none of its modules is a stand-in for ``trace``.)"""
    modules = _modules()
    shadowing = [m for m, path in modules.items() if m.split(".")[-1] in sys.stdlib_module_names and m.count(".")
                 and not path.endswith("__init__.py")]
    assert not shadowing, shadowing


def test_no_file_name_twice_in_janus():
    """A file name says what the file does, once: ``calls.py`` in two folders made a reader
    ask which one a traceback meant.  (The profiler is a package of its own.)"""
    seen: dict[str, str] = {}
    twice = []
    for module, path in _modules().items():
        name = os.path.basename(path)
        if not module.startswith("janus.") or name in ("__init__.py", "__main__.py"):
            continue
        if name in seen:
            twice.append((seen[name], path))
        seen[name] = path
    assert not twice, twice


def test_only_tf_private_imports_tensorflow_internals():
    """``tensorflow.python`` is TensorFlow's private API: every use goes through
    ``janus/_tf_private.py``, with a comment saying why, so that a TensorFlow upgrade breaks
    in one file."""
    modules = _modules()
    found = []
    for module, path in modules.items():
        if module == "janus._tf_private":
            continue
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [(module, name) for name in names if name.startswith("tensorflow.python")]
    assert not found, found


def test_no_module_is_hidden_by_gitignore():
    """A package named like a build folder (``build/``) was ignored by ``.gitignore``: its new
    modules never reached a commit, and a fresh clone could not import Janus."""
    paths = [os.path.relpath(p, ROOT) for p in _modules().values()]
    out = subprocess.run(["git", "check-ignore", "--no-index", *paths], capture_output=True, text=True, cwd=ROOT,
                         timeout=60)
    assert out.returncode in (0, 1), out.stderr  # 1: nothing ignored
    assert not out.stdout.strip(), f"ignored by .gitignore: {out.stdout.split()}"


_LIMIT_PREFIXES = ("MAX_", "MIN_", "DEFAULT_")
_LIMIT_SUFFIXES = ("_RUNS", "_CALLS", "_KEPT", "_SAMPLES")


def _is_number(node: ast.expr) -> bool:
    """A number written in the source: a literal int or float (not a bool), or arithmetic
    on such (``1 << 16``, ``-1``, ``2 ** 31 - 1``)."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return False


def test_every_limit_is_a_field_of_config_limits():
    """Limits live in one frozen record, ``janus.config.LIMITS`` (read at use, so a test swaps
    it with ``dataclasses.replace``): no other module of ``janus`` defines a module-level
    number named like a limit (``MAX_``, ``MIN_``, ``DEFAULT_`` ..., ``_RUNS``, ``_CALLS``,
    ``_KEPT``, ``_SAMPLES``; a leading underscore does not hide one)."""
    found = []
    for module, path in _modules().items():
        if not module.startswith("janus.") or module == "janus.config":
            continue
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            for name in names:
                bare = name.lstrip("_")
                if bare.isupper() and _is_number(node.value) and \
                        (bare.startswith(_LIMIT_PREFIXES) or bare.endswith(_LIMIT_SUFFIXES)):
                    found.append(f"{module}.{name}")
    assert not found, f"limits outside janus.config.Limits: {found}"


_BOUNDS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def test_every_bound_on_a_stats_counter_says_why():
    """A test that bounds a ``janus.stats`` counter (``<``, ``<=``, ``>``, ``>=``) says why the
    bound is what it is (issue #41 item 5): a comment on or just above the assert, or a message
    that is a string or an f-string, not only the stats dict."""
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, "tests"))):
        if not (name.startswith("test_") and name.endswith(".py")):
            continue
        with open(os.path.join(ROOT, "tests", name), encoding="utf-8") as fh:
            src = fh.read()
        lines = src.split("\n")
        for node in ast.walk(ast.parse(src, name)):
            if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
                    and any(isinstance(op, _BOUNDS) for op in node.test.ops)):
                continue
            test = ast.unparse(node.test)
            if not any(word in test for word in ("stats", "conversions", "graph_calls")):
                continue
            if node.msg is None or isinstance(node.msg, (ast.Constant, ast.JoinedStr)):
                continue
            if "#" in lines[node.lineno - 1] or lines[node.lineno - 2].strip().startswith("#"):
                continue  # a comment says why
            found.append(f"tests/{name}:{node.lineno}: {ast.unparse(node)[:100]}")
    assert not found, "bounds whose message is only the stats: say why the bound holds\n" + "\n".join(found)
