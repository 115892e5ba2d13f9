"""cli/corpus.py: output names, the walk, one file's job, unknown-field counting and the summary."""

from __future__ import annotations

import copy

import orjson
import pytest
from conftest import FIXTURES, write

from mapc.cli import corpus
from mapc.cli.output import document_bytes
from mapc.engine import convert
from mapc.engine.problems import Problem

ATIF = FIXTURES / "atif" / "dialogue_10.json"


@pytest.mark.parametrize(
    ("name", "to", "expected"),
    [
        ("run.json", "storyline", "run.storyline.json"),
        ("run.actf.json", "storyline", "run.storyline.json"),
        ("run.storyline.json", "atif", "run.json"),
        ("run.storyline.json", "actf", "run.actf.json"),
        ("runs.jsonl", "storyline", "runs.storyline.json"),
        ("runs.ndjson", "atif", "runs.json"),
        ("runs.atif.jsonl", "actf", "runs.actf.json"),  # .FORMAT.jsonl is a known compound suffix
        ("a.b.json", "storyline", "a.b.storyline.json"),  # an unknown middle part stays
        ("v1.2.json", "actf", "v1.2.actf.json"),
    ],
)
def test_output_names_swap_the_known_suffix_for_the_targets(name, to, expected):
    assert corpus.output_name(name, to) == expected


def test_the_walk_takes_json_suffixes_and_the_path_rules_extensions():
    assert corpus.walked_suffixes()[:3] == (".json", ".jsonl", ".ndjson")
    assert set(corpus.walked_suffixes("atif")) == {".json", ".jsonl", ".ndjson"}


def test_plan_orders_jobs_largest_first_and_keeps_paths_relative(tmp_path):
    src = tmp_path / "in"
    (src / "d").mkdir(parents=True)
    write(src / "small.json", b"{}")
    write(src / "d" / "big.json", b"{" + b" " * 100 + b"}")
    plan = corpus.plan(str(src), str(tmp_path / "out"), "storyline")
    assert [(j.rel, j.output, j.size) for j in plan.jobs] == [
        ("d/big.json", str(tmp_path / "out" / "d" / "big.storyline.json"), 102),
        ("small.json", str(tmp_path / "out" / "small.storyline.json"), 2),
    ]
    with pytest.raises(corpus.PlanError, match="DIR itself"):
        corpus.plan(str(src), str(src / "d" / ".."), "storyline")


def test_one_file_counts_a_source_document_and_pointer_once(tmp_path):
    actf = orjson.loads((FIXTURES / "actf" / "code-repair.actf.json").read_bytes())
    actf["attempts"]["2"] = copy.deepcopy(actf["attempts"]["1"])
    actf["attempts_tried"] = actf["k"] = 2
    actf["vendor_root"] = 1
    stories = convert.into_storyline("actf", orjson.dumps(actf))
    assert len(stories) == 2 and all(s["unknown_key_counts"] == {"actf": {"/vendor_root": 1}} for s in stories)
    assert corpus.unknown_counts(stories) == (("actf", "/vendor_root", 1),)


def test_unknown_keys_are_normalized_like_unknown_key_counts():
    atif = orjson.loads(ATIF.read_bytes())
    for i, step in enumerate(atif["steps"][:3]):
        step["vendor"] = i
    stories = convert.into_storyline("atif", orjson.dumps(atif))
    counts = corpus.unknown_counts(stories)
    assert counts == (("atif", "/steps/*/vendor", 3),)
    assert {(s, k): n for s, k, n in counts} == {
        (s, k): n for s, keys in stories[0]["unknown_key_counts"].items() for k, n in keys.items()
    }


def test_a_converted_file_reports_its_documents_and_bytes(tmp_path):
    write(tmp_path / "x.json", ATIF.read_bytes())
    (tmp_path / "out").mkdir()
    job = corpus.Job(
        str(tmp_path / "x.json"), "x.json", str(tmp_path / "out" / "x.json"), str(tmp_path / "out"), "actf"
    )
    result = corpus.convert_file(job)
    _, report = convert.from_storyline_reported("actf", convert.into_storyline("atif", ATIF.read_bytes()))
    assert result == corpus.FileResult(
        job.path, corpus.CONVERTED, input_bytes=ATIF.stat().st_size, documents=1, loss=report.at(job.path)
    )
    single = convert.convert("atif", "actf", ATIF.read_bytes())
    assert (tmp_path / "out" / "x.json").read_bytes() == document_bytes(single)


def test_the_summary_adds_up_and_sorts_what_it_reports():
    problem = Problem("json.invalid", "", "not valid JSON")
    results = [
        corpus.FileResult("b.json", corpus.CONVERTED, 10, 2, unknown=(("atif", "/x", 1), ("atif", "/y", 2))),
        corpus.FileResult("a.json", corpus.CONVERTED, 5, 1, unknown=(("atif", "/x", 3),)),
        corpus.FileResult("z.json", corpus.FAILED, 7, problem=problem, problems=4),
        corpus.FileResult("c.json", corpus.FAILED, 1, problem=problem, problems=1),
        corpus.FileResult("odd.json", corpus.SKIPPED, 3, reason="not a known format"),
    ]
    summary = corpus.summarize(results, 2.0)
    assert (summary.converted, summary.failed, summary.skipped, summary.documents) == (2, 2, 1, 3)
    assert summary.input_bytes == 26 and summary.mb_per_second == 26 / 1e6 / 2
    assert corpus.report_lines(summary) == [
        "warning: skipped odd.json: not a known format",
        "warning: unknown field source=atif key=/x occurrences=4",
        "warning: unknown field source=atif key=/y occurrences=2",
        "c.json: /: not valid JSON [json.invalid]",
        "z.json: /: not valid JSON [json.invalid]",
    ]
    assert summary.line() == (
        "converted 2 files (3 documents), 2 failed, 1 skipped; 26 input bytes in 2.00 s (0.00 MB/s)"
    )
