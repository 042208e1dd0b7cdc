"""Function objects found by their code: a walk of the whole heap, made safe on Python 3.11.

Used where no frame names the function (``janus-profile``'s verdicts, the take-over of a
function Janus cannot read from a frame, ``janus.takeover.redirect``).
"""
from __future__ import annotations

import gc
import types


def functions_with(code: types.CodeType) -> list[types.FunctionType]:
    """The function objects whose ``__code__`` is ``code``.

    Automatic garbage collection is off during the walk.  ``gc.get_referrers`` calls
    every object's ``tp_traverse``, and on Python 3.11 TensorFlow's
    ``EagerTensor_traverse`` calls ``_PyObject_GetDictPtr``, which turns an instance's
    inline attribute values into a new dict: an allocation that can start a collection
    in the middle of the walk.  The collection merges the generation being walked into
    the next one, the walk runs on into that generation's list head, takes it for an
    object and calls its type's NULL ``tp_traverse``: the SIGSEGV of issue #24 item 12
    (gdb: ``gc_referrers_for`` -> ``EagerTensor_traverse`` ->
    ``_PyObject_MakeDictFromInstanceAttributes``, then a jump to 0 from the walk of
    generation 0).  With collection off the new dict is only appended to generation 0
    and the walk stays on its list.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        referrers = gc.get_referrers(code)
    finally:
        if was_enabled:
            gc.enable()
    return [r for r in referrers if type(r) is types.FunctionType and r.__code__ is code]
