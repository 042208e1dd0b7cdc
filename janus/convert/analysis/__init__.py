"""Static analyses of function ASTs; they only read the tree (and annotate it through
:mod:`janus.convert.anno`), the passes transform.

* :mod:`.scopes` — names bound and read, cells;
* :mod:`.liveness` — live variables around each ``if``/``while``/``for``;
* :mod:`.definedness` — variables passed to a block before they are bound;
* :mod:`.own_lists` — local lists nothing else can see (blocks may change copies);
* :mod:`.breaks` — whether a function can be split at graph breaks, and what its
  statements read, bind, return and exit (for :mod:`janus.convert.splitting`).
"""
from janus.convert.analysis.definedness import possibly_unbound
from janus.convert.analysis.liveness import annotate_liveness
from janus.convert.analysis.own_lists import own_lists
from janus.convert.analysis.scopes import assigned, cell_vars, declared, local_names, params, scope_nodes, used

__all__ = ["assigned", "used", "params", "local_names", "declared", "scope_nodes", "cell_vars", "annotate_liveness", "possibly_unbound",
           "own_lists"]
