"""graphjit's static-graph layer: Graph IR, graph building, Session, passes, GraphDef.

(Being built: see issue 3.)  Imports only `eager`.
"""
