"""Runtime operators called by converted code (reachable as `ag__`).

Every operator first checks whether its condition/iterable is a *symbolic*
tensor (`eager.is_symbolic`); only then does it stage a graph construct
(`cond`, `while_loop`, a runtime assert...).  Otherwise it runs plain Python
with exactly Python's semantics, so converted code on Python values (and on
eager tensors) gives the same results as the original.  `staging` holds the
graph-building paths and their error checks.  Imports `eager` (autograph sits
above it) and nothing else from the project.
"""
