"""Run a script the way ``python script.py args`` does: the one runner of ``janus-profile``
and ``python -m janus``.

:func:`read` loads the file (a missing or unreadable script is one line on stderr and
exit status 2); :func:`run` installs ``__main__``, ``sys.argv`` and ``sys.path[0]`` as the
interpreter does, executes the compiled code between the caller's ``start``/``stop``
hooks (the profiler, the GradientTape hook), and maps the ending to an exit status as
the interpreter would: ``sys.exit(code)`` to its code, Ctrl-C to 130, an exception (printed
through ``sys.excepthook``, without the runner's frames) to 1.
"""
from __future__ import annotations

import builtins
import importlib.machinery
import os
import sys
import traceback
import types
from dataclasses import dataclass
from typing import Callable


@dataclass
class Ending:
    """How a script ended: its exit status and a phrase for reports."""

    status: int
    phrase: str


def read(script: str, prog: str) -> bytes | None:
    """The script's bytes, or None after printing one line (exit status 2)."""
    try:
        with open(os.path.abspath(script), "rb") as fh:
            return fh.read()
    except OSError as e:
        print(f"{prog}: error: can't open file '{script}': {e.strerror or e}", file=sys.stderr)
        return None


def run(code: types.CodeType, script: str, args: list[str], *, start: Callable[[], None] | None = None,
        stop: Callable[[], None] | None = None,
        clean: Callable[[BaseException], BaseException] | None = None,
        spec: importlib.machinery.ModuleSpec | None = None) -> Ending:
    """Execute ``code`` (compiled from ``script``) as ``__main__`` with ``args``.

    ``spec``: the code is module ``spec.name``'s, run as ``python -m`` runs it (its spec and
    package on ``__main__``, ``sys.argv[0]`` its file, ``sys.path`` left as it is: the
    current directory first, as ``python -m`` put it)."""
    path = os.path.abspath(script)
    sys.argv = [script] + list(args)
    if spec is None and not getattr(sys.flags, "safe_path", False):  # python -P (or -I) puts no directory first
        sys.path[0:1] = [os.path.dirname(os.path.realpath(path))]
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = builtins
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__spec__ = spec
    main.__package__ = spec.parent if spec is not None else None
    main.__cached__ = spec.cached if spec is not None else None
    if spec is not None and spec.loader is not None:
        main.__loader__ = spec.loader
    sys.modules["__main__"] = main
    stopped = [stop is None]

    def stop_once() -> None:  # before an exception is printed, so the hook does not see it
        if not stopped[0]:
            stopped[0] = True
            stop()

    if start is not None:
        start()
    try:
        exec(code, main.__dict__)  # noqa: S102 - the user's own script
        ending = Ending(0, "finished normally")
    except SystemExit as e:
        stop_once()
        ending = Ending(exit_status(e.code), f"called sys.exit({e.code!r})")
    except KeyboardInterrupt as e:
        stop_once()
        traceback.print_exception(_without_runner(e, clean))
        ending = Ending(130, "interrupted (Ctrl-C)")
    except BaseException as e:  # noqa: BLE001 - the script's exception: printed as Python prints it
        stop_once()
        e = _without_runner(e, clean)
        sys.excepthook(type(e), e, e.__traceback__)
        ending = Ending(1, f"raised {type(e).__name__}")
    finally:
        stop_once()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or replaced stream
            pass
    return ending


def exit_status(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives (a non-integer code is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _without_runner(e: BaseException, clean: Callable[[BaseException], BaseException] | None) -> BaseException:
    if e.__traceback__ is not None and e.__traceback__.tb_frame.f_code is run.__code__:
        e.__traceback__ = e.__traceback__.tb_next
    return clean(e) if clean is not None else e
