"""Named functions the format specs call where a rule cannot be said as data.

Each is registered in `mapc.engine.functions` and documented, and specs name them with `call:`.
"""

from __future__ import annotations

from typing import Any

from mapc.engine.functions import effective_kind, register
from mapc.engine.values import MISSING

_IMPLIED_KINDS = {("user", "dialogue"), ("system", "internal"), ("agent", "dialogue")}


@register("atif_turn_kind", 2)
def atif_turn_kind(source: Any, tool_calls: Any) -> Any:
    """ATIF turn kind: the effective kind, written only where a reader would not assume it.

    An agent step with tool calls is written ``autonomous``; a non-standard source (``tool``)
    is written ``dialogue``; user, system and plain agent steps get no explicit kind.
    """
    kind = effective_kind(source, tool_calls)
    return MISSING if (source, kind) in _IMPLIED_KINDS else kind
