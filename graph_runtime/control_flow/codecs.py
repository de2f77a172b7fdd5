"""GraphDef codecs for control-flow attrs: `GradState`, the `variant` dtype (body graphs use GR's `graph` codec).

The `variant` dtype (ops.VARIANT) appears in attrs of gradient graphs: a VJP
graph captures the variant output of an If/While nested in the body it
differentiates, as a placeholder of that dtype.  It is stored as the tag
`cf_variant` (the `dtype` codec knows only user dtypes).

A `GradState` is stored as `{"active": bool, "saves": [[tensor name, ...] per body]}`;
decoding keeps the names, which `GradState.tensors` resolves in the (decoded)
body graph on first use, since attrs decode before, or independently of, the
bodies they refer to.

Imports `graph_runtime.attr_codecs` and siblings.
"""
from __future__ import annotations

from ..attr_codecs import register_attr_codec
from .grad_state import GradState
from .ops import VARIANT


def _encode(state: GradState, ctx) -> dict:
    return {"active": bool(state.active),
            "saves": [[t if isinstance(t, str) else t.name for t in lst] for lst in state.saves]}


def _decode(data, ctx) -> GradState:
    saves = [[str(n) for n in lst] for lst in data["saves"]]
    return GradState(saves, bool(data["active"]))


register_attr_codec("cf_grad_state", GradState, _encode, _decode)
register_attr_codec("cf_variant", lambda v: v is VARIANT, lambda v, ctx: "variant", lambda d, ctx: VARIANT)
