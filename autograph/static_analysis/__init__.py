"""Static analyses over one function's gast tree, one analysis per module.

`activity` answers "which names does this code read / write" (scope-aware),
`liveness` annotates control-flow statements with the names live after them
(and at loop heads), `definitions` annotates them with the names definitely
defined before them (a must-reach simplification of reaching definitions).
All three are structured (they walk the AST, not a CFG): they run after the
break/continue/return converters, so the only jumps left are loop exits.
"""
