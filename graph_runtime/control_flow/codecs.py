"""GraphDef codec for the control-flow `variant` dtype (body graphs use GR's `graph` codec).

The `variant` dtype (ops.VARIANT) appears in attrs of gradient graphs: a VJP
graph captures the variant output of an If/While nested in the body it
differentiates, as a placeholder of that dtype.  It is stored as the tag
`cf_variant` (the `dtype` codec knows only user dtypes).  Save specs (the
`saves` attr, gradient ops' `saved` / `slots`) are tuples of names and need no
codec of their own.

Imports `graph_runtime.attr_codecs` and siblings.
"""
from __future__ import annotations

from ..attr_codecs import register_attr_codec
from .ops import VARIANT

register_attr_codec("cf_variant", lambda v: v is VARIANT, lambda v, ctx: "variant", lambda d, ctx: VARIANT)
