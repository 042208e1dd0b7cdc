"""``janus-profile script.py [args]``: run a script under the profiler and report.

The script runs as ``__main__`` with the same ``sys.argv``, ``sys.path[0]`` and
module semantics as ``python script.py``.  Only functions defined in the user's
own files are profiled: by default every file under the script's directory, minus
installed packages (``site-packages``/``dist-packages``, the interpreter's own
library); ``--include``/``--exclude`` globs change that.  Module bodies are not
profiled (they run once and are not what Janus converts).

The report is printed when the script ends -- normally, by an exception, by
``sys.exit`` or by Ctrl-C -- and the exit status is the script's.  Errors of the
tool itself (missing script, syntax error in it, bad option) print one line and
exit non-zero.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import types
from typing import Any, Callable, Sequence

from . import script as script_runner
from .profiler import Profiler, _use_monitoring
from .report import render
from .usercode import is_user_file

PROG = "janus-profile"
EPILOG = """\
The report lists the hottest profiled functions (calls, inclusive time) and, for
each, its branch sites with outcome counts, loops with trip-count histograms,
call sites with their callees, argument types/shapes, and the speculation Janus
would make at each site (prune a branch, unroll a loop, inline a callee, relax a
shape, keep dynamic control flow), with the function's conversion verdict.

Options must come before the script; everything after the script is passed to
it unchanged.  GLOB patterns match absolute file paths (fnmatch, '*' crosses
directories), e.g. --include '*/mypkg/*' --exclude '*/tests/*'.

Exit status: the script's own (1 if it raised, 130 on Ctrl-C), 2 for a usage
error of janus-profile, 1 for a syntax error in the script.
"""


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line instead of usage + traceback
        raise _UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Run a Python script under the Janus bytecode profiler and report "
                                       "what Janus would speculate on.",
                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("script", help="the script to run, as with 'python script.py'")
    p.add_argument("args", nargs="*", metavar="ARG", help="arguments passed to the script")
    p.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="also profile functions in files matching GLOB (repeatable)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="do not profile functions in files matching GLOB (repeatable; wins over --include)")
    p.add_argument("--json", metavar="FILE", help="write the full profile as JSON to FILE")
    p.add_argument("--html", metavar="FILE", help="write the report as a page (one self-contained HTML file) to FILE")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="report the N hottest functions (default 10; 0 = all)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--no-verdict", action="store_true",
                   help="skip the conversion verdicts")
    return p


_VALUE_OPTS = {"--include", "--exclude", "--json", "--html", "--top", "-o", "--output"}


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Options of janus-profile | script and its arguments (which may look like options)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return list(argv[:i]) + [argv[i + 1]] if i + 1 < len(argv) else list(argv[:i]), list(argv[i + 2:])
        if a in _VALUE_OPTS:
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return list(argv[: i + 1]), list(argv[i + 1:])
    return list(argv), []


def make_include(root: str, include: list[str], exclude: list[str]) -> Callable[[types.CodeType], bool]:
    """The predicate choosing user code: files under ``root`` (or matching ``include``), never libraries."""
    root = os.path.realpath(root)
    cache: dict[str, bool] = {}

    def by_file(filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        path = os.path.realpath(filename)
        if any(fnmatch.fnmatch(path, g) or fnmatch.fnmatch(filename, g) for g in exclude):
            return False
        if any(fnmatch.fnmatch(path, g) or fnmatch.fnmatch(filename, g) for g in include):
            return True
        return is_user_file(filename) and path.startswith(root + os.sep)

    def wants(code: types.CodeType) -> bool:
        if code.co_name == "<module>":
            return False
        fn = code.co_filename
        hit = cache.get(fn)
        if hit is None:
            hit = cache[fn] = by_file(fn)
        return hit

    return wants


def run(argv: Sequence[str] | None = None) -> int:
    """The command; returns the exit status (see module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    opts, script_args = _split(argv)
    try:
        ns = parser.parse_args(opts)
    except _UsageError as e:
        print(f"{PROG}: error: {e} (see {PROG} --help)", file=sys.stderr)
        return 2
    ns.args = list(ns.args) + script_args
    if ns.top < 0:
        print(f"{PROG}: error: --top must be >= 0", file=sys.stderr)
        return 2

    script = ns.script
    path = os.path.abspath(script)
    source = script_runner.read(script, PROG)
    if source is None:
        return 2
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        print(f"{PROG}: error: syntax error in {script}, line {e.lineno}: {e.msg}", file=sys.stderr)
        return 1
    except ValueError as e:  # e.g. null bytes
        print(f"{PROG}: error: cannot compile {script}: {e}", file=sys.stderr)
        return 1
    root = os.path.dirname(path)
    prof = Profiler(include=make_include(root, ns.include, ns.exclude))
    ending = script_runner.run(code, script, ns.args, start=prof.start, stop=prof.stop)
    _finish(prof, ns, script, ending.status, ending.phrase, root)
    return ending.status


def _finish(prof: Profiler, ns: argparse.Namespace, script: str, status: int, ending: str, root: str) -> None:
    data = prof.data
    title = f"janus-profile report: {script} ({ending}, exit status {status})"
    try:
        text = render(data, top=ns.top, root=root, verdicts=not ns.no_verdict, title=title)
    except Exception as e:  # noqa: BLE001 - never lose the script's status to a report bug
        text = f"{title}\nreport failed: {type(e).__name__}: {e}\n"
    if ns.output:
        try:
            with open(ns.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            print(f"{PROG}: error: cannot write report to {ns.output}: {e.strerror or e}", file=sys.stderr)
    else:
        sys.stdout.write("\n" + text)
        sys.stdout.flush()
    if ns.html:
        _write_page(data, ns, title, root)
    if ns.json:
        doc = json.loads(data.to_json())
        doc["meta"] = {"script": script, "argv": sys.argv, "exit_status": status, "ending": ending,
                       "python": sys.version.split()[0],
                       "backend": "sys.monitoring" if hasattr(sys, "monitoring") and _use_monitoring()
                       else "sys.settrace"}
        try:
            with open(ns.json, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=1, default=repr)
        except OSError as e:
            print(f"{PROG}: error: cannot write {ns.json}: {e.strerror or e}", file=sys.stderr)


def _write_page(data: Any, ns: argparse.Namespace, title: str, root: str) -> None:
    """``--html FILE``: the page of what the profiler saw (``janus_profiler.page``)."""
    from .page import render as render_page

    try:
        text = render_page(data, top=ns.top, root=root, title=title, verdicts=not ns.no_verdict)
        with open(ns.html, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        print(f"{PROG}: error: cannot write {ns.html}: {e.strerror or e}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``janus-profile``)."""
    sys.exit(run(argv))
