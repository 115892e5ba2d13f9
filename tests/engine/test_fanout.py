"""Fan-out (engine/fanout.py): rows ⇄ turns as data, each construct with a toy spec that is not OpenAI.

The toy format: rows `{"chat", "n", "hist": [...], "ask": {...}, "say": {...}}`; the first row's
history before its question is context, then a question turn and an answer turn per row, with
ids from `n`; the reverse writes every row with the full history again.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mapc.engine import run
from mapc.engine.compile import compile_spec
from mapc.engine.problems import MapcError
from mapc.engine.spec import load_spec
from mapc.engine.table import mapping_rows

SPEC = """
name: toy-fan
source: toy
document: {rows: /rows, group_by: /chat, order_by: /n}
objects:
  "": [rows]
  "/rows/{r}": [chat, n, hist, say, at, note]
  "/rows/{r}/hist/{h}": [who, text, ref]
  "/rows/{r}/say": [who, text]
select:
  ask: {last: /hist, where: {/who: me}}
  say: [{at: /say, has: nonempty}]
group:
  - {to: /session, first_of: [/chat]}
  - {to: [/agent/id], first_of: [{const: toy}]}
ids:
  ask: {times: 2, plus: -1}
  say: {times: 2}
fanout:
  turns:
    - name: context
      rows: first
      each: "/hist/{h}"
      before: {select: ask, has: text}
      id: count
      needs: /src
      fields:
        - {from: "{h}/who", map: {me: user, bot: agent}, to: /src}
        - {from: "{h}/text", to: /msg, keep_null: true, default: null}
        - {const: true, to: /copied}
    - name: ask
      select: ask
      has: text
      id: ask
      fields:
        - {const: user, to: /src}
        - {from: "{ask}/text", to: /msg, keep_null: true}
        - {from: /at, to: /ts}
    - name: say
      select: say
      missing: {problem: toy.silent, message: the row says nothing}
      id: say
      back_const: {/who: bot}
      fields:
        - {const: agent, to: /src}
        - first_of: [{from: "{say}/text", when: text}, {const: "…", if: /note}]
          keep: ["{say}/text"]
          to: /msg
        - {from: /note, to: /reason}
  results:
    each: /hist
    where: {/who: tool}
    key: {from: /ref, when: text}
    value: {source_call_id: /ref, content: /text}
    to: /observation/results
    match: /tool_calls/{c}/tcid
  summary:
    - {from: "{last}/reason", to: /notes}
  back:
    context: {any: [{/copied: true}]}
    row: {turn: say, where: {/src: agent}}
    request: {where: {/src: user}}
    message: context
    history: /hist
    steps: say
    order: [/ts, history, say, /reason]
"""

PROGRAM = compile_spec(load_spec("toy-fan.yaml", SPEC))


def forward(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m.story for m in run.forward(PROGRAM, {"rows": rows}, path="toy.json")]


def back(stories: list[dict[str, Any]]) -> Any:
    return run.reverse(PROGRAM, stories)[0].document


ROWS = [
    {
        "chat": "c",
        "n": 1,
        "hist": [{"who": "bot", "text": "hello"}, {"who": "me", "text": "q1"}],
        "say": {"who": "bot", "text": "a1"},
        "at": 5,
    },
    {
        "chat": "c",
        "n": 2,
        "hist": [
            {"who": "bot", "text": "hello"},
            {"who": "me", "text": "q1"},
            {"who": "bot", "text": "a1"},
            {"who": "me", "text": "q2"},
        ],
        "say": {"who": "bot", "text": "a2"},
        "note": "why",
    },
]


def test_a_row_becomes_context_then_a_request_and_a_response_with_ids_from_the_order_key():
    (story,) = forward(ROWS)
    assert [(t["id"], t["src"], t["msg"]) for t in story["turns"]] == [
        (1, "agent", "hello"),
        (2, "user", "q1"),
        (3, "agent", "a1"),
        (4, "user", "q2"),
        (5, "agent", "a2"),
    ]
    assert story["turns"][0]["copied"] is True and "copied" not in story["turns"][1]
    assert story["turns"][1]["ts"] == 5 and story["turns"][4]["reason"] == "why"
    assert story["notes"] == "why"  # summary: from the last turn


def test_the_reverse_writes_every_row_with_its_full_history():
    assert back(forward(ROWS)) == {"rows": ROWS}


def test_a_constant_candidate_and_a_kept_source():
    rows = [dict(ROWS[0], say={"who": "bot", "text": ""}, note="n")]
    (story,) = forward(rows)
    assert story["turns"][-1]["msg"] == "…"  # {const, if}: the note is there
    fields = story["unknown_fields"]["sources"]["toy"]["fields"]
    assert fields["/rows/0/say/text"] == ""  # kept: present, not the one taken


def test_results_attach_to_the_turn_that_holds_their_key_and_other_elements_are_kept():
    rows = [dict(ROWS[0], hist=[{"who": "x", "text": "odd"}, {"who": "me", "text": "q"}, {"who": "tool", "ref": "r"}])]
    (story,) = forward(rows)
    assert story["turns"][-1]["observation"] == {"results": [{"source_call_id": "r", "content": None}]}
    # The odd element is no turn: the way back writes the history without it, so the history is
    # kept whole (kept at its index, it was put back over the element written there instead).
    assert story["unknown_fields"]["sources"]["toy"]["fields"]["/rows/0/hist"] == rows[0]["hist"]
    assert back([story]) == {"rows": rows}


def test_a_missing_selection_is_the_kinds_problem_at_its_row():
    with pytest.raises(MapcError) as caught:
        forward([dict(ROWS[0], say={})])
    assert [(p.code, p.pointer) for p in caught.value.problems] == [("toy.silent", "/rows/0")]


def test_a_storyline_without_a_row_turn_is_unrepresentable():
    (story,) = forward(ROWS)
    story["turns"] = [t for t in story["turns"] if t["src"] != "agent"]
    with pytest.raises(MapcError) as caught:
        back([story])
    assert caught.value.problems[0].code == "export.unrepresentable"


def test_the_table_lists_every_field_source_at_each_place_its_selection_looks():
    table = {r.sources: r.targets for r in mapping_rows(PROGRAM.spec)}
    assert table[("/rows/{r}/hist/{h}/who",)] == ("/turns/{t}/src",)
    assert table[("/rows/{r}/say/text",)] == ("/turns/{t}/msg",)
    assert table[("/rows/{r}/at",)] == ("/turns/{t}/ts",)
    assert table[("/rows/{r}/hist/{m}/ref",)] == ("/turns/{t}/observation/results/{k}/source_call_id",)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (("    - name: ask\n", "    - name: ask\n      frobnicate: 1\n"), "/fanout/turns/1"),
        (("{const: agent, to: /src}", "{const: agent, to: /src, call: no_such_function}"), "/fanout/turns/2"),
        (("      id: ask\n", "      id: nowhere\n"), "/fanout/turns/1/id"),
        (("    message: context\n", "    message: nobody\n"), "/fanout/back"),
    ],
)
def test_a_wrong_fan_out_is_a_located_spec_problem(change: tuple[str, str], where: str):
    with pytest.raises(MapcError) as caught:
        load_spec("toy-fan.yaml", SPEC.replace(*change))
    assert any(p.pointer.startswith(where) or where in p.message for p in caught.value.problems), [
        str(p) for p in caught.value.problems
    ]


def test_storylines_of_the_toy_are_json():
    assert orjson.loads(orjson.dumps(forward(ROWS))) == forward(ROWS)
