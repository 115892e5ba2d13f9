"""engine/loss.py and the API's loss report: every conversion knows whether it is exact (issue 15 §4).

"Exact" is the law A → B → A with B's native values alone (docs/lossless.md): what the envelope
carries is exactly what the way back without it would lose, so these tests check the report
against that way back, and against the envelope itself.
"""

from __future__ import annotations

import pickle

import orjson
import pytest
from conftest import FIXTURES
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import storyline_documents

import mapc
from mapc.engine import convert, loss, storyline
from mapc.engine.values import json_equal

SPEC_FORMATS = ("atif", "actf", "openai-msg")
FILES = [p for fmt in SPEC_FORMATS for p in sorted((FIXTURES / fmt).glob("*.json"))]
ATIF = FIXTURES / "atif" / "support-ticket.json"


def _bare(document, at):
    documents = loss.without_envelopes(document if type(document) is list else [document], at)
    return documents if type(document) is list else documents[0]


def _pairs():
    for path in FILES:
        for target in (*SPEC_FORMATS, "storyline", "agenticmd"):
            yield pytest.param(path, target, id=f"{path.parent.name}/{path.name}->{target}")


@pytest.mark.parametrize(("path", "target"), list(_pairs()))
def test_exact_means_the_way_back_without_the_envelope_gives_the_document(path, target):
    fmt = path.parent.name
    # the data model's document: an OpenAI row list comes back as its canonical object form (docs/formats.md)
    original = mapc.from_storyline(fmt, mapc.into_storyline(fmt, path, path=path.name))
    try:
        bare, report = mapc.convert_reported(fmt, target, path, path=path.name, envelope=False)
    except mapc.MapcError as exc:
        assert exc.problems[0].code.startswith(("export.", "agenticmd.several")), exc.problems  # refused, and says so
        return
    assert report.from_format == fmt and report.to_format == target and report.mode == loss.DROPPED
    text = bare.encode() if isinstance(bare, str) else orjson.dumps(bare)
    assert b"_storyline" not in text or target in ("storyline", "agenticmd")
    back = mapc.from_storyline(fmt, mapc.into_storyline(target, text), carry=False)
    at = convert.program_for(fmt).spec.envelope
    if target == fmt:  # into its own format: exact only if the file itself comes back (a row list too)
        original = orjson.loads(path.read_bytes())
        back = bare
    assert report.exact == json_equal(_bare(back, at), original), report.line()
    assert not report.problems


@pytest.mark.parametrize(("path", "target"), list(_pairs()))
def test_what_is_carried_is_what_the_envelope_holds_and_it_brings_the_document_back(path, target):
    fmt = path.parent.name
    try:
        document, report = mapc.convert_reported(fmt, target, path, path=path.name)
    except mapc.MapcError:
        return  # the test above checks the refusal
    documents = document if type(document) is list else [document]
    if target in SPEC_FORMATS:
        at = convert.program_for(target).spec.envelope
        entries = loss.envelope_entries(documents, at)
        assert entries == report.carried
    else:
        assert report.carried == ()  # Storyline and AgenticMD say everything natively
    text = document.encode() if isinstance(document, str) else orjson.dumps(document)
    back = mapc.from_storyline(fmt, mapc.into_storyline(target, text), carry=False)
    canonical = mapc.from_storyline(fmt, mapc.into_storyline(fmt, path, path=path.name))
    # the law, with the envelope (B's own residuals of what it read may ride in A's envelope in turn)
    at = convert.program_for(fmt).spec.envelope
    assert json_equal(_bare(back, at), canonical)


def test_a_same_format_conversion_is_exact_and_atif_to_actf_says_what_it_synthesized_and_carried():
    _, same = mapc.convert_reported("atif", "atif", ATIF)
    assert same.exact and same.carried == () and same.line().startswith("exact (atif → atif)")
    _, report = mapc.convert_reported("atif", "actf", ATIF)
    assert not report.exact
    assert mapc.Said("/agent/name", "ACTF Agent", ("support-agent",)) in report.synthesized
    assert report.carried and {c.source for c in report.carried} == {"atif"}
    line = report.at("x.json").line()
    assert line.startswith("x.json: not exact (atif → actf): ")
    assert 'synthesized: /agent/name as "ACTF Agent"' in line
    values = [c for c in report.carried if not c.absent]
    gone = len(report.carried) - len(values)
    assert f"{len(values)} values carried in _storyline" in line
    assert f"and {gone} keys the way back adds to leave out" in line


def _gap_actf() -> dict:
    """An ACTF document whose null ground_truth the export writes back as its default, ""."""
    doc = orjson.loads((FIXTURES / "actf" / "code-repair.actf.json").read_bytes())
    first = next(iter(doc["attempts"]))
    doc["attempts"][first]["ground_truth"] = None
    return doc


def test_a_same_format_conversion_that_writes_a_value_otherwise_says_which():
    doc = _gap_actf()
    first = next(iter(doc["attempts"]))
    out, report = mapc.convert_reported("actf", "actf", orjson.dumps(doc))
    assert out["attempts"][first]["ground_truth"] == ""  # the export's default (docs/formats.md, ACTF)
    assert not report.exact
    assert report.rewritten == (loss.Rewritten(f"/attempts/{first}/ground_truth", (None,), ("",)),)
    assert f'1 value of the input written otherwise: /attempts/{first}/ground_truth null → ""' in report.line()
    assert report.as_dict()["rewritten"] == [{"pointer": f"/attempts/{first}/ground_truth", "was": None, "now": ""}]
    with pytest.raises(mapc.MapcError) as info:
        mapc.convert_reported("actf", "actf", orjson.dumps(doc), strict=True)
    assert info.value.problems[0].code == "convert.not_exact"


SAME = [*FILES, *sorted((FIXTURES / "openai-chat").glob("*.jsonl")), *sorted((FIXTURES / "codex").glob("*.jsonl"))]


@pytest.mark.parametrize("path", SAME, ids=[f"{p.parent.name}/{p.name}" for p in SAME])
def test_a_same_format_conversion_is_exact_exactly_when_it_gives_the_document_back(path):
    fmt = path.parent.name
    lines = path.suffix == ".jsonl"
    out, report = mapc.convert_reported(fmt, fmt, path)
    data = path.read_bytes()
    source = [orjson.loads(x) for x in data.splitlines() if x.strip()] if lines else orjson.loads(data)
    written = out if not lines or type(out) is list else [out]
    assert report.exact == (not report.carried and json_equal(source, written)), report.line()
    assert bool(report.rewritten) == (not json_equal(source, written))


def test_a_storyline_input_reports_what_the_target_does_not_say():
    story = mapc.into_storyline("atif", ATIF)[0]
    story.pop("origin")  # a Storyline of the hub's own: no document of another format to carry home
    story.pop("unknown_fields", None)
    story.pop("unknown_key_counts", None)
    _, report = mapc.from_storyline_reported("actf", story)
    assert report.from_format == "storyline" and not report.exact
    users = [s for s in report.lost if s.pointer.startswith("/turns/") and s.pointer.endswith("/src")]
    assert report.lost and report.carried == ()
    assert "not said by actf" in report.line()
    assert users or any(s.pointer.startswith("/agent") for s in report.synthesized)


def test_strict_refuses_a_conversion_that_is_not_exact_and_passes_one_that_is():
    with pytest.raises(mapc.MapcError) as info:
        mapc.convert_reported("atif", "actf", ATIF, strict=True)
    assert info.value.problems[0].code == "convert.not_exact"
    assert "carried in _storyline" in info.value.problems[0].message
    document, report = mapc.convert_reported("atif", "storyline", ATIF, strict=True)
    assert report.exact and document["origin"]["format"] == "atif"


def test_a_report_is_plain_data_that_pickles_and_writes_as_json():
    _, report = mapc.convert_reported("atif", "openai-msg", FIXTURES / "atif" / "claude-code-harbor.json")
    assert pickle.loads(pickle.dumps(report)) == report  # to a worker process and back
    data = orjson.loads(orjson.dumps(report.as_dict()))
    assert data["exact"] is False and data["envelope"] is True
    assert len(data["carried"]) == len(report.carried)
    assert all(set(c) - {"absent"} == {"source", "pointer", "carrier", "bytes"} for c in data["carried"])
    with pytest.raises(AttributeError):
        report.mode = "x"  # type: ignore[misc]


def test_the_envelope_is_proportional_to_what_was_lost_not_to_the_rows():
    # issue 15: an OpenAI story's residuals ride once (under its first row), not once per row
    path = FIXTURES / "atif" / "claude-code-harbor.json"
    document, report = mapc.convert_reported("atif", "openai-msg", path)
    size = len(orjson.dumps(document["_storyline"]))
    assert len(document["session_steps"]) > 5
    assert size < len(path.read_bytes())  # before: 220,007 bytes for a 24,858-byte input
    assert len({c.carrier for c in report.carried}) == 1


def test_several_documents_one_by_one_combine_under_their_positions():
    one = mapc.convert_reported("atif", "actf", ATIF)[1]
    both = loss.combined([one, one], "atif", "actf")
    assert len(both.carried) == 2 * len(one.carried)
    assert {c.carrier.split("/")[1] for c in both.carried} == {"0", "1"}
    assert loss.combined([one], "atif", "actf") is one


def test_the_report_of_an_output_its_format_cannot_read_says_so(monkeypatch):
    def unreadable(fmt, data, **kwargs):
        raise mapc.MapcError.single("json.invalid", "/x", "bad")

    stories = mapc.into_storyline("atif", ATIF)
    monkeypatch.setattr(convert, "into_storyline", unreadable)
    _, report = convert.from_storyline_reported("atif", stories)
    assert not report.exact and report.problems[0].code == "json.invalid"
    assert "not assessed" in report.line()


@pytest.mark.parametrize(("path", "target"), list(_pairs()))
def test_the_report_reusing_the_hops_reading_is_the_report_reading_the_output_again(path, target, monkeypatch):
    # The report reuses what the conversion already read (a Storyline output; provenance's hop
    # back); reading the output once more must give the very same report.
    fmt = path.parent.name
    stories = mapc.into_storyline(fmt, path, path=path.name)
    try:
        _, reused = convert.from_storyline_reported(target, stories, from_format=fmt)
    except mapc.MapcError:
        return
    calls = []
    real = convert.into_storyline
    monkeypatch.setattr(convert, "_known_reading", lambda *a: calls.append(a) and None)
    monkeypatch.setattr(convert, "into_storyline", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    _, again = convert.from_storyline_reported(target, stories, from_format=fmt)
    assert target in calls  # this one did read the output back
    assert reused == again, (reused.line(), again.line())


@settings(max_examples=100, deadline=None)
@given(st.lists(storyline_documents(), min_size=1, max_size=3))
def test_parsed_storylines_written_as_storyline_report_what_the_read_back_reports(stories):
    # The export's shortcut (engine/convert.py): parsed Storylines written unchanged are not read back;
    # the report must be the one the read-back gives, and a document canonical form changes still is.
    stories = orjson.loads(orjson.dumps(stories))  # as a parser gives them
    for i, story in enumerate(stories):
        story["session"] = f"{story['session']}-{i}"
    assume(not storyline.check_all(stories, prefix=True))
    output, report = convert.from_storyline_reported("storyline", stories)
    fast, shortcut = convert.from_storyline_reported("storyline", stories, parsed=True)
    assert orjson.dumps(fast) == orjson.dumps(output)
    assert shortcut == report


def test_parsed_storylines_that_canonical_form_changes_are_read_back():
    stories = orjson.loads(orjson.dumps(mapc.into_storyline("atif", ATIF)))
    stories[0]["prompt"] = {"system": "", "user": "hello"}  # the empty system prompt is dropped when written
    output, report = convert.from_storyline_reported("storyline", stories, parsed=True)
    assert not convert._unchanged(stories[0], output)
    assert "system" not in output["prompt"]
    assert report == convert.from_storyline_reported("storyline", stories)[1]
