"""The AST converter: user function -> specialized, graph-traceable Python.

``parse`` reads the source, ``support`` rejects what cannot be converted,
``analysis`` computes scopes and liveness, ``passes`` holds one transformation per
module, and ``pipeline`` composes them and compiles the result.
"""
