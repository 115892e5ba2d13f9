"""engine/provenance.py: the envelope carries what a hop lost, value by value, not A's whole document.

A hop that *adds* a key where A had none (ACTF's reading gives every step `llm_call_count: 1`, and
ATIF then writes it) used to make the whole enclosing object a residual: a key cannot be removed
by putting a value.  Now the way back is told which keys to leave out (envelope.ABSENT), and an
object is carried whole only when that takes fewer bytes (issue 15: proportional envelopes).
"""

from __future__ import annotations

import orjson
import pytest
from conftest import FIXTURES

import mapc
from mapc.cli import corpus
from mapc.engine import envelope, provenance
from mapc.engine.values import json_equal

ATIF = FIXTURES / "atif"


def _fields(document):
    env = document.get("_storyline") or (document.get("extra") or {}).get("_storyline")
    return {
        p: v
        for e in env["unknown_fields"]["by_trajectory"].values()
        for b in e["sources"].values()
        for p, v in b["fields"].items()
    }


def test_diff_names_the_keys_to_leave_out_instead_of_the_whole_object():
    want = {"a": 1, "big": {"x": "y" * 100, "k": 1}}
    have = {"a": 1, "big": {"x": "y" * 100, "k": 2, "added": 1}}
    assert dict(provenance.diff(want, have, "")) == {"/big": want["big"]}  # without removals: whole
    assert dict(provenance.diff(want, have, "", gone=True)) == {"/big/k": 1, "/big/added": provenance.GONE}
    # trailing items the hop added to an array
    assert dict(provenance.diff([1, 2], [1, 2, 3], "", gone=True)) == {"/2": provenance.GONE}
    # an object whose changes take more bytes than itself is kept whole
    small = {"p": 1, "q": 2}
    assert dict(provenance.diff({"o": small}, {"o": {"p": 0, "q": 0, "r": 0}}, "", gone=True)) == {"/o": small}


@pytest.mark.parametrize("target", ["actf", "openai-msg"])
def test_a_hop_that_adds_keys_carries_no_whole_document(target):
    path = ATIF / "support-ticket.json"
    document = mapc.convert("atif", target, path)
    fields = _fields(document)
    assert "" not in fields  # before: the whole ATIF document rode in the envelope
    assert fields.get(envelope.ABSENT)  # the keys the way back adds, to be left out
    back = mapc.convert(target, "atif", orjson.dumps(document))
    assert json_equal(back, orjson.loads(path.read_bytes()))


@pytest.mark.parametrize("via", ["storyline", "agenticmd"])
def test_the_notes_travel_through_the_hub_and_apply_at_home(via):
    # A → B → (a Storyline file, or AgenticMD) → A: the notes ride as A's own residuals meanwhile.
    # (A → B → C → A with B and C both lossy does not come back exact, before this change or after:
    # B → C carries B's losses, not A's again; docs/lossless.md, "Not done yet".)
    path = ATIF / "claude-code-harbor.json"
    actf = mapc.convert("atif", "actf", path)
    assert envelope.ABSENT in _fields(actf)
    middle = mapc.convert("actf", via, orjson.dumps(actf))
    data = middle.encode() if isinstance(middle, str) else orjson.dumps(middle)
    stories = mapc.into_storyline(via, data)
    assert envelope.ABSENT in stories[0]["unknown_fields"]["sources"]["atif"]["fields"]
    back = mapc.from_storyline("atif", stories)
    assert json_equal(back, orjson.loads(path.read_bytes()))
    assert "_storyline" not in back and "_storyline" not in back.get("extra", {})


def test_envelopes_of_the_fixtures_are_smaller_than_their_input():
    # bench/envelope_size.py prints the table; here only that no envelope outgrows what it carries for
    for path in sorted(ATIF.glob("*.json")):
        for target in ("actf", "openai-msg"):
            try:
                document = mapc.convert("atif", target, path)
            except mapc.MapcError:
                continue  # refused, and said why (OpenAI export of trailing user turns: helper "openai")
            size = len(orjson.dumps(document["_storyline"]))
            assert size < len(path.read_bytes()), (path.name, target, size)


def test_values_carried_from_another_format_are_not_unknown_keys_of_the_file():
    atif = orjson.loads((ATIF / "support-ticket.json").read_bytes())
    atif["vendor_root"] = 1
    actf = mapc.convert("atif", "actf", orjson.dumps(atif))
    actf["vendor_actf"] = 2
    stories = mapc.into_storyline("actf", orjson.dumps(actf))
    assert "atif" in stories[0]["unknown_fields"]["sources"]  # carried, for the way back to ATIF
    assert corpus.unknown_counts(stories, "actf") == (("actf", "/vendor_actf", 1),)
    assert ("atif", "/vendor_root", 1) in corpus.unknown_counts(stories)  # every source, when asked


@pytest.mark.parametrize("path", sorted(ATIF.glob("*.json")), ids=lambda p: p.name)
def test_leaving_out_what_the_hop_added_does_not_change_the_callers_storylines(path):
    # The rebuilt document shares values with the Storylines it came from: the keys the way back
    # leaves out (envelope.ABSENT) were deleted in place, so the caller's Storylines lost them too
    # (found by the loss report reusing the hop's reading, issue 15 §4).
    actf = mapc.convert("atif", "actf", path)
    stories = mapc.into_storyline("actf", orjson.dumps(actf))
    before = orjson.loads(orjson.dumps(stories))
    mapc.from_storyline("atif", stories)
    assert json_equal(stories, before)
