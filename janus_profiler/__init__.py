"""janus_profiler: the bytecode-level profiler Janus speculates from.

Public interface (used by the converter in ``janus/``)::

    from janus_profiler import Profiler, ProfileData, Site, site_of
    prof = Profiler(include=None)
    result = prof.call(fn, *args, **kwargs)
    prof.data.branch_outcomes(site_of(filename, if_node))

See ``docs/profiler.md`` for the records, the queries and the ``janus-profile`` command.
"""
from .data import FunctionRecord, ProfileData, SiteRecord, func_key
from .profiler import Profiler
from .source import Site, norm_filename, site_of
from .values import TypeInfo

__all__ = ["Profiler", "ProfileData", "Site", "site_of", "TypeInfo", "FunctionRecord",
           "SiteRecord", "func_key", "norm_filename"]
