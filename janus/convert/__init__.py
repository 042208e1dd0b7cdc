"""The AST converter: user function -> specialized, graph-traceable Python.

``parse`` reads the source, ``support`` rejects what cannot be converted,
``libraries`` is the allow-list the converter and the lowering both read,
``analysis`` computes scopes and liveness, ``passes`` holds one transformation per
module, and ``pipeline`` composes them and compiles the result, whose code objects
``registry`` records.
"""
