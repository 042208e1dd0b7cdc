"""``python -m janus [--report] script.py [args ...]``: run an unmodified TF2 script through Janus.

``python -m janus [--report] -m module [args ...]`` runs a module as ``__main__`` the way
``python -m module`` does (a package: its ``__main__``), rewritten the same way.
``python -m janus --version`` prints ``janus-tf <version>``.

The script runs as ``__main__`` with the same ``sys.argv[1:]`` it would get from
``python script.py args ...``, and with the GradientTape hook enabled:

* functions and methods of the script whose body records a ``tf.GradientTape`` run
  through ``janus.function`` (the script's AST is rewritten in memory, the file is
  not modified);
* a module-level training loop (``for``/``while`` whose body records a tape) has its
  body run as a Janus function, once per iteration, when the body is simple enough
  (assigns plain names; no break/continue/return/yield/def/try/del/global);
* user modules the script imports get the same treatment (``janus.enable()``).

``--report`` (or ``JANUS_REPORT=1``) prints to stderr at exit one line per Janus
function: calls and graph_calls; ``--html path`` (or ``JANUS_REPORT_HTML``) writes the
report page there at exit (``janus.reporting.report_page``).  The script's exit status and exceptions are its
own; a missing script gives status 2.
"""
from __future__ import annotations

import os
import sys


def _script_directory_first(argv: list[str]) -> None:
    """``sys.path[0]`` is the script's directory, as with ``python script.py``, before
    anything else is imported: ``python -m`` put the current directory there, where a
    ``numpy.py`` would otherwise shadow the real one."""
    args = list(argv)
    while args and args[0].startswith("-") and args[0] != "--":
        if args[0] == "-m" or args[0].startswith("-m"):  # a module: the current directory stays first
            return
        args.pop(0)
    if args and args[0] == "--":
        args.pop(0)
    if not args or not sys.path or os.path.abspath(sys.path[0] or os.curdir) != os.getcwd():
        return
    sys.path[0] = os.path.dirname(os.path.realpath(os.path.abspath(args[0])))


if __name__ == "__main__":
    _script_directory_first(sys.argv[1:])

import dataclasses  # noqa: E402 - after the path is the script's
import traceback  # noqa: E402
import types  # noqa: E402

from janus import config  # noqa: E402
from janus.takeover.detect import is_trampoline  # noqa: E402
from janus_profiler import script as script_runner  # noqa: E402

USAGE = f"""usage: python -m janus [--report] [--tapes-only] script.py [args ...]
       python -m janus [--report] [--tapes-only] -m module [args ...]
       python -m janus --version

Run an unmodified eager TensorFlow 2 script with Janus: every function or method
that records a tf.GradientTape (and every module-level training loop whose body
records one), and every other function using TensorFlow once it has been called
{config.LIMITS.hot_calls} times (a hot loop's sample_action or update_target), runs as specialized
TensorFlow graphs whenever that is safe, and eagerly otherwise. Results, printed
output and exceptions are eager's.

options:
  -h, --help   show this help and exit
  --version    print janus-tf and its version, and exit
  -m module    run the module as __main__, as python -m module does
  --report     at exit, print to stderr one line per Janus function:
               calls and how many ran as graphs (same as JANUS_REPORT=1)
  --html PATH  at exit, write the report page to PATH (same as JANUS_REPORT_HTML=PATH)
  --tapes-only take over only functions that record a tape, not hot TensorFlow
               functions without one (same as JANUS_HOT_FUNCTIONS=0)

environment (switches take 1/0, true/false, yes/no or on/off; a bad value is an
error, exit status 2):
  JANUS_REPORT=1         print the report
  JANUS_REPORT_HTML=PATH write the report page (HTML) at exit
  JANUS_TRACE=PATH       write the timeline (Chrome trace-event JSON) at exit
  JANUS_DISABLE=1        run everything eagerly (Janus stays out of the way)
  JANUS_PROFILE_CALLS=N  eager (profiled) calls before the first conversion (N >= 0)
  JANUS_TAKEOVER_SAMPLE_MS=MS  how often running training steps are looked for (3.11)
  JANUS_HOT_FUNCTIONS=0  take over only functions that record a tape
  JANUS_STRICT=1         a call that cannot run as a graph raises janus.GraphBreakError
  JANUS_LOG=info|debug   log conversions and give-ups (debug: every note) to stderr
"""


def _report(stream) -> None:
    """One line per Janus function the hook installed (never raises: the exit status is the script's)."""
    try:
        _report_lines(stream)
    except Exception as e:  # noqa: BLE001 - a report bug must not change the script's ending
        print(f"janus: the report failed: {type(e).__name__}: {e}", file=stream)


def _report_lines(stream) -> None:
    import janus
    from janus.takeover import hook
    if config.disabled():
        print("janus: disabled (JANUS_DISABLE); everything ran eagerly", file=stream)
        return
    seen = set()
    for name, jf in zip(hook.taken_over(), hook.taken_over_functions()):
        if id(jf) in seen or getattr(jf, "__janus_function__", None) is None:
            continue
        seen.add(id(jf))
        s = janus.stats(jf)
        split = f" breaks={s['breaks']} segment_graph_calls={s['segment_graph_calls']}" if s["breaks"] else ""
        print(f"janus: {name}: calls={s['calls']} graph_calls={s['graph_calls']} "
              f"eager_calls={s['eager_calls']} conversions={s['conversions']}{split} "
              f"seconds={s['seconds']:.2f} converting={s['conversion_seconds']:.2f} "
              f"eager_estimate={s['eager_estimate_seconds']:.2f}", file=stream)
    if not seen:
        print("janus: no function recorded a GradientTape or became hot; nothing was taken over", file=stream)


def _janus_dirs() -> list[str]:
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    try:
        import janus_profiler
        dirs.append(os.path.dirname(os.path.abspath(janus_profiler.__file__)))
    except ImportError:
        pass
    return dirs


def _is_janus_frame(filename: str) -> bool:
    if filename.startswith("<janus "):
        return not filename.startswith("<janus loop ")   # loop bodies are the user's own lines
    path = os.path.abspath(filename)
    return any(path.startswith(d + os.sep) for d in _janus_dirs())


def _user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without Janus's own frames (the runner, the graph driver), as python shows it."""
    kept = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_janus_frame(code.co_filename) and not is_trampoline(code):   # the take-over's trampolines
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _strip_janus_frames(exc: BaseException) -> BaseException:
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = _user_traceback(e.__traceback__)
        e = e.__cause__ or e.__context__
    return exc


@dataclasses.dataclass
class _Options:
    """What the command line asks for: the arguments left after the options are the script's
    (or, with ``-m``, the module's)."""

    argv: list[str]
    report: bool = False
    module: str | None = None
    page: str | None = None
    tapes_only: bool = False


def _usage_error(message: str) -> int:
    print(f"janus: {message}", file=sys.stderr)
    return 2


def _options(argv: list[str]) -> _Options | int:
    """The options before the script, or the exit status of ``--help``, ``--version`` or a bad option."""
    opts = _Options(argv)
    while argv and argv[0].startswith("-"):
        opt = argv.pop(0)
        if opt in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if opt == "--version":
            print(f"janus-tf {_version()}")
            return 0
        if opt == "--report":
            opts.report = True
        elif opt == "--tapes-only":
            opts.tapes_only = True
        elif opt == "--html":
            opts.page = argv.pop(0) if argv else ""
            if not opts.page:
                return _usage_error("--html expects a file path (usage: python -m janus --html report.html script.py)")
        elif opt == "-m" or opt.startswith("-m"):  # python -m's own spelling: -mmodule too
            opts.module = opt[2:] or (argv.pop(0) if argv else "")
            if not opts.module:
                return _usage_error("argument -m expects a module name (usage: python -m janus -m module [args ...])")
            break
        elif opt == "--":
            break
        else:
            return _usage_error(f"unknown option {opt!r} (see python -m janus --help)")
    return opts


def _script(opts: _Options) -> tuple | int:
    """``(script, spec, source, args)`` of what to run, or an exit status after one line."""
    if opts.module is not None:
        found = _module_source(opts.module)
        if isinstance(found, int):
            return found
        script, spec, source = found
        return script, spec, source, opts.argv
    if not opts.argv:
        return _usage_error("no script given (usage: python -m janus [--report] script.py [args ...])")
    script, args = opts.argv[0], opts.argv[1:]
    raw = script_runner.read(script, "janus")
    if raw is None:
        return 2
    import importlib.util
    return script, None, importlib.util.decode_source(raw), args


def main(argv: list[str] | None = None) -> int:
    opts = _options(list(sys.argv[1:] if argv is None else argv))
    if isinstance(opts, int):
        return opts
    try:  # every JANUS_* setting, once, before the script runs: a bad value is one line
        config.check()
        report = opts.report or config.report()
        hot_functions = not opts.tapes_only and config.hot_functions()
    except config.ConfigError as e:
        return _usage_error(f"error: {e}")
    found = _script(opts)
    if isinstance(found, int):
        return found
    script, spec, source, args = found
    if opts.page is not None:  # written at exit, as JANUS_REPORT_HTML asks
        from janus.reporting import session
        session.start_from_environment(opts.page)
    from janus.takeover import hook

    try:
        plan = hook.prepare_script(source, script, hot_functions)
    except SyntaxError:
        exc_type, exc, tb = sys.exc_info()
        traceback.print_exception(exc_type, exc, None)
        return 1
    try:
        ending = script_runner.run(plan.code, script, args, start=lambda: hook.enable(hot_functions),
                                   clean=_strip_janus_frames, spec=spec)
    finally:
        if report:
            sys.stdout.flush()
            _report(sys.stderr)
    return ending.status


def _version() -> str:
    import janus
    return janus.__version__


def _module_source(name: str):
    """``(file, spec, source)`` of the module ``python -m name`` would run (a package's
    ``__main__``), or an exit status after printing one line, as ``python -m`` does."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            if name == "__main__" or name.endswith(".__main__"):
                print(f"janus: error: cannot use package as __main__ module ({name})", file=sys.stderr)
                return 1
            name = name + ".__main__"
            spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as e:
        print(f"janus: error: error while finding module specification for {name!r} ({type(e).__name__}: {e})",
              file=sys.stderr)
        return 1
    if spec is None:
        print(f"janus: error: No module named {name}", file=sys.stderr)
        return 1
    try:
        source = spec.loader.get_source(name) if spec.loader is not None else None
    except (ImportError, OSError) as e:
        source, error = None, e
    else:
        error = None
    if source is None or not spec.origin or not os.path.isfile(spec.origin):
        why = f" ({error})" if error else " (no Python source)"
        print(f"janus: error: cannot run module {name!r}{why}", file=sys.stderr)
        return 1
    return spec.origin, spec, source


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.exit(status)
