"""Converters: one AST rewrite per module, each with a before/after docstring.

The order in which they run is the explicit list in `impl/pipeline.py`.
`jumps` is the shared helper of the break/continue/return converters.
"""
