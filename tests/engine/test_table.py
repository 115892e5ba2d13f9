"""engine/table.py: the printed ATIF table lists the pointer rows of the format's published mapping table."""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path

import pytest

from mapc.engine.spec import load_spec
from mapc.engine.table import constants, mapping_rows, markdown

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "specs" / "seeds"
_TICKED = re.compile(r"`([^`]*)`")
_UNMAPPED = re.compile(r"\{unmapped-[^}]*\}")

Row = tuple[frozenset[str], frozenset[str]]


def _norm(pointers: list[str]) -> frozenset[str]:
    return frozenset(_UNMAPPED.sub("{unmapped}", p) for p in pointers)


def rfc_rows(text: str) -> set[Row]:
    """The RFC table: lines with backticked pointers, source and target cells split by a tab."""
    rows = set()
    for line in text.splitlines():
        if "\t" not in line:
            continue
        left, right = line.split("\t", 1)
        sources, targets = _TICKED.findall(left), _TICKED.findall(right)
        if sources and targets and all(s.startswith("/") for s in sources):
            rows.add((_norm(sources), _norm(targets)))
    return rows


def printed_rows(table: str) -> set[Row]:
    """The rows of the Markdown table `mapc spec table` prints (constants are not rows)."""
    rows = set()
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        left, right = line.strip("|").split(" | ")
        rows.add((_norm(_TICKED.findall(left)), _norm(_TICKED.findall(right))))
    return rows


def _atif():
    text = importlib.resources.files("mapc.mappings").joinpath("atif.yaml").read_text(encoding="utf-8")
    return load_spec("atif.yaml", text)


def _seed(number: str) -> str:
    found = sorted(SEEDS.glob(f"{number}_*.txt")) if SEEDS.is_dir() else []
    if not found:
        pytest.skip(f"the RFC seeds are not at {SEEDS}")
    return found[0].read_text(encoding="utf-8")


# Rows mapc adds to that table, each a decision written down in docs/lossless.md: ATIF that mapc writes from
# another format keeps latency and TTFT in `metrics.extra` (Harbor's Metrics forbids other keys), and reads
# them back from there.
MAPC_EXTENSIONS = {
    (
        frozenset({f"/steps/{{s}}/metrics/extra/{key}"}),
        frozenset({f"/turns/{{t}}/{key}", f"/turns/{{t}}/metrics/extra/{key}"}),
    )
    for key in ("latency_ms", "ttft_ms")
}


def test_the_atif_table_lists_the_rows_of_rfc_0008():
    expected = rfc_rows(_seed("002"))
    assert len(expected) >= 40
    printed = printed_rows(markdown(_atif()))
    assert printed - expected == MAPC_EXTENSIONS, "rows the RFC does not have"
    assert expected - printed == set(), "RFC rows the spec does not print"


def test_the_parser_reads_known_rfc_rows():
    rows = rfc_rows(_seed("002"))
    assert (frozenset({"/agent/name"}), frozenset({"/agent/id", "/agent/name"})) in rows
    assert (frozenset({"/session_id", "/trajectory_id"}), frozenset({"/parent/psid"})) in rows
    assert (frozenset({"/subagent_trajectories/{c}"}), frozenset({'""'})) in rows


def test_rows_of_a_small_spec():
    spec = load_spec(
        "toy.yaml",
        """\
name: toy
title: Toy
arrays:
  "/items/{i}": "/turns/{t}"
objects:
  "": [items, name, meta]
  "/items/{i}": [id, text]
rules:
  - {const: storyline/v1, to: /schema_version}
  - {first_of: [/name, /meta/name], to: /session}
  - {from: /meta, to: /extra}
  - {from: "/items/{i}/id", to: "/turns/{t}/id"}
  - {call: int_ms, args: ["/items/{i}/ms"], to: "/turns/{t}/latency_ms", derived: true}
""",
    )
    rows = {r.sources: r.targets for r in mapping_rows(spec)}
    assert rows[("/name",)] == ("/session",)
    assert rows[("/meta/name",)] == ("/session", "/extra/name")  # also reached through the whole copy
    assert rows[("/items/{i}/ms",)] == ("/turns/{t}/latency_ms",)
    assert rows[("/{unmapped-root}", "/items/{i}/{unmapped-item}")] == ("/unknown_fields/sources/toy/fields/{E(P)}",)
    assert constants(spec) == [("/schema_version", "storyline/v1")]
    text = markdown(spec)
    assert text.startswith("| Toy pointer | Storyline pointer(s) |\n|---|---|\n")
    assert '- `/schema_version` = `"storyline/v1"`' in text


def _actf():
    text = importlib.resources.files("mapc.mappings").joinpath("actf.yaml").read_text(encoding="utf-8")
    return load_spec("actf.yaml", text)


def test_the_actf_table_members_variables_and_fallback_arrays():
    rows = {r.sources: r.targets for r in mapping_rows(_actf())}
    step = "/attempts/{a}/trajectory/steps/{s}"
    assert rows[("/attempts/{a}",)] == ('""',)  # document.each: one Storyline per attempt
    assert "/attempt_id" in rows[("{a}",)]  # the attempt key
    assert rows[("{c}",)] == ("/turns/{t}/tool_calls/{c}/tcid",)  # a tool's position
    assert rows[("/task_id",)] == ("/run", "/session", "/unknown_fields/sources/actf/source_document_id")
    # a tool's keys are read in `tools`, else in `assistant_content.tool_calls`: one row each
    name = (f"{step}/tools/{{c}}/name", f"{step}/assistant_content/tool_calls/{{c}}/name")
    assert rows[name] == ("/turns/{t}/tool_calls/{c}/fn",)
    assert not any(s == (f"{step}/assistant_content/tool_calls/{{c}}/name",) for s in rows)
    assert "/turns/{t}/tool_calls" in rows[(f"{step}/tools",)]
    assert "/turns/{t}/tool_calls" in rows[(f"{step}/assistant_content/tool_calls",)]
    # computed candidates and Storyline-side arguments: the pointers they read, not {story: …}
    assert rows[(f"{step}/tools/{{c}}/command", f"{step}/assistant_content/tool_calls/{{c}}/command")] == (
        "/turns/{t}/tool_calls/{c}/args",
    )
    assert rows[(f"{step}/system_prompt",)] == ("/turns/{t}/prompt",)
    assert rows[(f"{step}/observation/{{o}}",)] == ("/turns/{t}/observation/results/{o}",)
    assert ("/turns/{t}/nllm", 1) in constants(_actf())
    text = markdown(_actf())
    assert text.startswith('| ACTF v1.0 pointer | Storyline pointer(s) |\n|---|---|\n| `/attempts/{a}` | `""` |\n')
    assert "`{a}`, `{c}`: the key or position the variable is bound to." in text
