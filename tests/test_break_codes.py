"""Break and fallback codes (issue #42): every code has its entry in docs/breaks.md, every
entry maps to a code, every reason Janus gives carries one, and each entry's example,
run as a small program, produces its code."""
import os
import re
import runpy
import sys
import textwrap

import pytest

from janus.reporting import breaks_page, codes
from janus.reporting.breaks_page import ENTRIES
from janus.reporting.codes import Code, Kind, Reason

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = "import os, sys, threading\nimport numpy as np\nimport tensorflow as tf\nimport janus\n"


def test_every_code_has_one_entry_and_docs_are_generated_from_them():
    assert set(ENTRIES) == set(Code)
    assert len({c.value for c in Code}) == len(Code)
    with open(os.path.join(ROOT, "docs", "breaks.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert text == breaks_page.markdown(), \
        "docs/breaks.md is stale: python -m janus.reporting.breaks_page > docs/breaks.md"
    documented = set(re.findall(r"^## (JB\d{3})$", text, re.M))
    assert documented == {c.value for c in Code}


def test_entries_say_what_to_do():
    for e in ENTRIES.values():
        assert e.title and e.meaning and e.fix and e.knob, e.code
        assert (e.example is None) == bool(e.why_no_example), e.code
        if e.example is not None:
            assert len(e.example.splitlines()) <= 14, e.code


def test_a_reason_is_its_words_and_carries_its_code():
    r = codes.reason(Code.TENSOR_VALUE, "reads a value")
    assert r == "reads a value" and r.code is Code.TENSOR_VALUE and codes.tagged(r) == "reads a value [JB014]"
    assert codes.derived(r, f"graph break at x.py:3: {r}").code is Code.TENSOR_VALUE
    assert codes.tagged("plain") == "plain" and codes.code_of("plain") is None


def test_every_conversion_error_raised_names_its_code():
    """No ``ConversionError(...)`` in Janus's source is raised without a code (a subclass
    or the reason it passes on may carry one)."""
    import ast

    for folder, _, files in os.walk(os.path.join(ROOT, "janus")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            tree = ast.parse(open(path, encoding="utf-8").read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ConversionError":
                    assert any(k.arg == "code" for k in node.keywords), f"{path}:{node.lineno}"


def run_example(code: Code, tmp_path) -> set:
    """Run ``code``'s example as a program; the codes its Janus functions gave."""
    from janus.driver.function import registry
    from janus.reporting.model import codes_seen

    path = tmp_path / f"example_{code.value.lower()}.py"
    path.write_text(HEADER + ENTRIES[code].example + "\n")
    before = set(map(id, registry()))
    kept = runpy.run_path(str(path), run_name=f"example_{code.value}")  # noqa: F841 - its Janus functions live on
    seen = set()
    for jf in registry():
        if id(jf) not in before and jf.segment_of is None:
            seen |= codes_seen(jf)
    return seen


RUNNABLE = [c for c, e in ENTRIES.items() if e.example is not None]


@pytest.mark.parametrize("code", RUNNABLE, ids=[c.value for c in RUNNABLE])
def test_example_produces_its_code(code, tmp_path):
    seen = run_example(code, tmp_path)
    assert code in seen, f"{code.value} example gave {sorted(c.value for c in seen)}"


def test_most_codes_have_a_runnable_example():
    assert len(RUNNABLE) >= 0.6 * len(ENTRIES)
