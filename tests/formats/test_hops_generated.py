"""The hop law over generators for the formats test_hops.py does not draw as A (issue 15 §1), and
the loss report's law over generators (§4): a conversion is reported exact exactly when the way
back without the envelope gives the input, and nothing it loses goes unreported.

- ACTF as A: A → B → A gives A's own round trip for every B, B's own residuals aside (as in
  test_hops.py), or fails with a clear export error.
- Storyline as A: the hub has no document of its own to carry home, so Storyline → B → Storyline
  is B's reading (§1.6); the report's `lost` entries are exactly the values that reading lacks.
- Every drawn conversion: `exact` agrees with the way back without the envelope.
"""

from __future__ import annotations

from typing import Any

import orjson
from actf_strategies import actf_documents
from atif_strategies import atif_documents, atif_segments
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import storyline_documents
from test_hops import hop_in, hop_out, plain, through, without_source

import mapc
from mapc.cli import corpus
from mapc.engine import convert, loss
from mapc.engine.problems import MapcError
from mapc.engine.values import json_equal

TARGETS = ["atif", "actf", "openai-msg", "storyline", "agenticmd", "otel-genai", "otel-openinference"]
SLOW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW
@given(
    actf_documents(max_attempts=2, max_steps=3),
    st.sampled_from(["atif", "openai-msg", "storyline", "agenticmd", "otel-genai", "otel-openinference"]),
)
def test_generated_actf_survives_every_hop(doc: Any, b: str) -> None:
    try:
        direct, back, _, _ = through("actf", b, orjson.dumps(doc))
    except MapcError as exc:  # what B cannot hold, said clearly
        assert {p.code.split(".")[0] for p in exc.problems} <= {"export", "agenticmd"}, exc.problems
        return
    assert without_source(without_source(back, b), "storyline") == direct


def keep(story: dict[str, Any]) -> dict[str, Any]:
    """A Storyline without what says where it came from (as engine/loss.py compares them)."""
    return {
        k: v for k, v in story.items() if k not in ("origin", "schema_version", "unknown_fields", "unknown_key_counts")
    }


def _bare(fmt: str, document: Any) -> Any:
    if fmt in ("storyline", "agenticmd"):
        return document
    at = convert.program_for(fmt).spec.envelope
    documents = loss.without_envelopes(document if type(document) is list else [document], at)
    return documents if type(document) is list else documents[0]


def _text(document: Any) -> bytes:
    return document.encode() if isinstance(document, str) else orjson.dumps(document)


@SLOW
@given(
    st.one_of(
        atif_documents(max_depth=1).map(lambda d: ("atif", d)),
        actf_documents(max_attempts=2, max_steps=2).map(lambda d: ("actf", d)),
    ),
    st.sampled_from(TARGETS),
)
def test_exact_is_reported_exactly_when_the_bare_way_back_gives_the_document(drawn: Any, b: str) -> None:
    a, doc = drawn
    data = orjson.dumps(doc)
    try:
        bare, report = mapc.convert_reported(a, b, data, envelope=False)
        stories = mapc.into_storyline(a, data)
        canonical = plain(mapc.from_storyline(a, stories))
        back = plain(mapc.from_storyline(a, hop_in(b, [_text(bare)]), carry=False))
    except MapcError:
        return  # refused, and said why (test_hops.py checks the codes)
    assert not report.problems, report.problems
    if a == b:  # into its own format: exact only if the document itself comes back
        assert report.exact == json_equal(plain(bare), doc), report.line()
        assert report.exact or report.rewritten  # each value written otherwise is named, by pointer
        return
    assert report.exact == json_equal(_bare(a, back), canonical), report.line()
    if not report.exact:
        assert report.carried and report.mode == loss.DROPPED  # what was lost is named, by pointer


@SLOW
@given(
    storyline_documents(),
    st.sampled_from(["atif", "actf", "openai-msg", "agenticmd", "otel-genai", "otel-openinference"]),
)
def test_what_a_storyline_loses_through_b_is_reported_as_lost(story: Any, b: str) -> None:
    story = {k: v for k, v in story.items() if k != "origin"}  # the hub's own: nothing to carry home
    try:
        stories = mapc.into_storyline("storyline", orjson.dumps(story))
        _, report = mapc.from_storyline_reported(b, stories)
        again = hop_in(b, hop_out(b, stories))
    except MapcError:
        return
    same = len(again) == len(stories) and all(json_equal(keep(x), keep(y)) for x, y in zip(stories, again, strict=True))
    assert (not report.lost and not report.synthesized) == same, report.line()
    if b == "agenticmd":
        assert same and report.exact  # AgenticMD says every Storyline natively


@SLOW
@given(atif_documents(max_depth=1), st.sampled_from(["actf", "openai-msg"]))
def test_what_a_hop_carries_for_atif_is_never_an_unknown_key_of_b(doc, b):
    # issue 15 §4/§7: what B's envelope carries for A (even values of keys A defines) is "carried",
    # and reading B's file reports only B's own unknown keys
    try:
        written = mapc.convert("atif", b, orjson.dumps(doc))
    except mapc.MapcError:
        return  # refused, and said why (tests/formats/test_hops.py)
    stories = mapc.into_storyline(b, orjson.dumps(written))
    counted = {source for source, _, _ in corpus.unknown_counts(stories, b)}
    assert counted <= {b}
    _, report = mapc.convert_reported(b, "storyline", orjson.dumps(written))
    assert report.exact  # Storyline says it all, the carried values included


# A → B → C → A with B and C both lossy (issue 15 §1): what C cannot say of A's document rides in
# C's envelope too, not only what it cannot say of B's (engine/provenance.py carries every source
# format a Storyline holds residuals of, not only its origin).
CHAINS = [("actf", "openai-msg"), ("openai-msg", "actf"), ("actf", "agenticmd"), ("openai-msg", "storyline")]


def _chain(a: str, hops: tuple[str, ...], data: bytes) -> tuple[Any, Any]:
    """(A → A, A → hops… → A), each hop written and read back as files."""
    stories = mapc.into_storyline(a, data, path="x.json")
    direct = plain(mapc.from_storyline(a, stories))
    for b in hops:
        stories = hop_in(b, hop_out(b, stories))
    return direct, plain(mapc.from_storyline(a, stories))


@SLOW
@given(atif_documents(max_depth=1, max_steps=3), st.sampled_from(CHAINS))
def test_generated_atif_survives_two_lossy_hops(doc: Any, hops: tuple[str, str]) -> None:
    try:
        direct, back = _chain("atif", hops, orjson.dumps(doc))
    except MapcError as exc:  # what B or C cannot hold, said clearly
        assert {p.code.split(".")[0] for p in exc.problems} <= {"export", "tree"}, exc.problems
        return
    for b in hops:
        back = without_source(back, b)
    assert without_source(back, "storyline") == direct


@SLOW
@given(actf_documents(max_attempts=2, max_steps=3), st.sampled_from([("atif", "openai-msg"), ("openai-msg", "atif")]))
def test_generated_actf_survives_two_lossy_hops(doc: Any, hops: tuple[str, str]) -> None:
    try:
        direct, back = _chain("actf", hops, orjson.dumps(doc))
    except MapcError as exc:
        assert {p.code.split(".")[0] for p in exc.problems} <= {"export", "tree"}, exc.problems
        return
    for b in hops:
        back = without_source(back, b)
    assert without_source(back, "storyline") == direct


@SLOW
@given(atif_segments(), st.sampled_from(["actf", "openai-msg", "storyline", "agenticmd"]))
def test_continuation_segments_sharing_a_session_survive_every_hop(docs: list[Any], b: str) -> None:
    # One file of a run's segments (ATIF v1.7: one session_id, a trajectory_id each): A → B → A
    # gives the file back, B's residuals and the tree keys carried for B's documents aside.
    try:
        direct, back, _, _ = through("atif", b, orjson.dumps(docs))
    except MapcError as exc:
        assert {p.code.split(".")[0] for p in exc.problems} <= {"export", "agenticmd"}, exc.problems
        return
    assert without_source(without_source(back, b), "storyline") == direct
