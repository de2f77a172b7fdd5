"""graphjit's `@function`: signatures, trace cache, concrete functions, retrace log.

(Being built: see issue 6.)  Imports `autograph`, `graph_runtime` and `eager`.
"""
