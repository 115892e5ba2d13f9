"""Session logs as A in the multi-hop law (issue 15 §1): claude-code (codex) → B → C → A gives
A's own round trip back (B's and C's own residuals aside), over the claude-code generator, for pairs of
the hub's document formats.  A refusal is allowed only where the single hop refuses (ACTF and
OpenAI rows: a result that answers no call of its step), with its code."""

from __future__ import annotations

from typing import Any

from claude_strategies import sessions
from codex_strategies import jsonl as codex_jsonl
from codex_strategies import rollouts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_claude_code import jsonl, plain
from test_codex import args_decoded
from test_codex import read as codex_read
from test_codex import write as codex_write
from test_hops import hop_in, hop_out, without_source

import mapc
from mapc.engine.problems import MapcError

MIDDLE = ["storyline", "atif", "actf", "agenticmd"]
PAIRS = st.tuples(st.sampled_from(MIDDLE), st.sampled_from(MIDDLE)).filter(lambda p: p[0] != p[1])


def _without_hops(doc: Any, b: str, c: str) -> Any:
    """`doc` without what it carries for B's and C's documents: their sources, and the hub's tree
    keys (`storyline`: a run and attempt key those documents need and A's format cannot say)."""
    return without_source(without_source(without_source(doc, c), b), "storyline")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), PAIRS)
def test_claude_code_as_a_survives_two_hops(recs: list[Any], pair: tuple[str, str]) -> None:
    b, c = pair
    stories = mapc.into_storyline("claude-code", jsonl(recs))
    try:
        hopped = hop_in(c, hop_out(c, hop_in(b, hop_out(b, stories))))
    except MapcError as exc:
        assert "actf" in pair, exc.problems
        assert {p.code for p in exc.problems} <= {"export.invalid", "export.unrepresentable"}
        return
    back = plain(mapc.from_storyline("claude-code", hopped))
    assert _without_hops(back, b, c) == recs


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rollouts(), PAIRS)
def test_codex_as_a_survives_two_hops(recs: list[Any], pair: tuple[str, str]) -> None:
    b, c = pair
    stories = codex_read(codex_jsonl(recs))
    direct = codex_write(stories)
    try:
        hopped = hop_in(c, hop_out(c, hop_in(b, hop_out(b, stories))))
    except MapcError as exc:  # ACTF: only agent steps with ids it can take (as the single hop)
        assert "actf" in pair, exc.problems
        assert {p.code for p in exc.problems} <= {"export.unrepresentable", "export.invalid", "fold.orphan"}
        return
    back = _without_hops(plain(mapc.from_storyline("codex", hopped)), b, c)
    if "agenticmd" in pair:  # AgenticMD writes arguments as text: compared decoded, as the single hop
        back, direct = args_decoded(back), args_decoded(direct)
    assert back == direct
