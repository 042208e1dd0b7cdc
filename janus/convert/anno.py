"""The annotations converter passes attach to AST nodes, declared in one registry.

Analyses and passes communicate through these (and only these) annotations; each says
what it holds, who sets it and who reads it.  They live in one dictionary per node
(copied with the node), never as loose attributes.
"""
from __future__ import annotations

import enum
from typing import Any

import gast

_FIELD = "_janus_anno"


class Anno(enum.Enum):
    """An annotation: its value is ``(meaning, set by, read by)``."""

    SITE = ("the speculable site (SiteInfo) of a user-written if/while/for/conditional expression",
            "pipeline._TagSites", "templates.site_ref")
    CELLVARS = ("locals of a function that a closure of it reads (cells)",
                "pipeline._TagSites (analysis.scopes.cell_vars)", "passes.control_flow")
    OWN_LISTS = ("local lists of a function nothing else can see (analysis.own_lists)",
                 "pipeline._TagSites", "passes.control_flow")
    LIVE_OUT = ("variables live after an if/while/for", "analysis.liveness", "passes.control_flow")
    LIVE_BODY = ("variables live on entry to its body", "analysis.liveness", "passes.control_flow")
    LIVE_ORELSE = ("variables live on entry to an if's else block", "analysis.liveness", "passes.control_flow")
    LIVE_HEAD = ("variables live at a loop's head (before the test or the next item)",
                 "analysis.liveness", "passes.control_flow")
    EXTRA_TEST = ("the exit test a for loop checks before each item (a lowered break)",
                  "passes.break_continue", "analysis.liveness, passes.expressions, passes.control_flow")

    @property
    def meaning(self) -> str:
        return self.value[0]


def setanno(node: gast.AST, key: Anno, value: Any) -> None:
    annos = node.__dict__.setdefault(_FIELD, {})
    annos[key] = value


def getanno(node: gast.AST, key: Anno, default: Any = None) -> Any:
    return node.__dict__.get(_FIELD, {}).get(key, default)


def hasanno(node: gast.AST, key: Anno) -> bool:
    return key in node.__dict__.get(_FIELD, {})
