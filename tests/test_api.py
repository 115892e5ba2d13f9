"""The Python API (`mapc`, api/_api.py): what it accepts, what it refuses, and how it presents itself."""

from __future__ import annotations

import pydoc
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES

import mapc

SUPPORT = FIXTURES / "atif" / "support-ticket.json"
API = Path(__file__).parent.parent / "api"


def _expected() -> list[dict]:
    return mapc.into_storyline("atif", SUPPORT.read_bytes())


@pytest.mark.parametrize(
    "data",
    [
        SUPPORT.read_bytes(),
        bytearray(SUPPORT.read_bytes()),
        SUPPORT.read_text(encoding="utf-8"),
        orjson.loads(SUPPORT.read_bytes()),
        SUPPORT,
    ],
    ids=["bytes", "bytearray", "str", "dict", "Path"],
)
def test_into_storyline_takes_bytes_text_parsed_json_or_a_path(data):
    stories = mapc.into_storyline("atif", data)
    assert len(stories) == 1
    assert stories[0]["session"] == _expected()[0]["session"]
    assert stories == _expected() or data is SUPPORT  # a Path names the document by its path, nothing else differs
    assert {k: v for k, v in stories[0].items() if k != "document_id"} == {
        k: v for k, v in _expected()[0].items() if k != "document_id"
    }


def test_a_list_of_documents_is_parsed_json_too():
    doc = orjson.loads(SUPPORT.read_bytes())
    other = {**doc, "session_id": "other"}
    stories = mapc.into_storyline("atif", [doc, other])
    assert [s["session"] for s in stories] == ["support-001", "other"]


def test_a_file_name_given_as_str_is_not_read_and_says_how(tmp_path, monkeypatch):
    monkeypatch.chdir(SUPPORT.parent)
    with pytest.raises(TypeError, match=r"reads as the file's text, not as a file name; .*pathlib\.Path\('support"):
        mapc.into_storyline("atif", "support-ticket.json")


def test_text_that_is_not_json_is_a_mapc_error_with_the_place():
    with pytest.raises(mapc.MapcError) as caught:
        mapc.into_storyline("atif", '{"a": ')
    assert caught.value.problems[0].code == "json.invalid"
    assert "line 1" in caught.value.problems[0].message


@pytest.mark.parametrize("name", ["ATIF", "Atif", " atif "])
def test_format_names_any_case(name):
    assert mapc.into_storyline(name, SUPPORT.read_bytes()) == _expected()


def test_aliases():
    stories = _expected()
    assert mapc.from_storyline("OpenAI-Messages", stories[:1]) == mapc.from_storyline("openai-msg", stories[:1])


def test_from_storyline_takes_one_dict_or_a_list():
    story = _expected()[0]
    assert mapc.from_storyline("actf", story) == mapc.from_storyline("actf", [story])


def test_convert_with_a_path():
    assert mapc.convert("atif", "ACTF", SUPPORT) == mapc.convert("atif", "actf", SUPPORT.read_bytes(), path="x")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mapc.into_storyline("atif", 42), "data must be bytes, str .* not int"),
        (lambda: mapc.into_storyline("atif", None), "data must be bytes, str .* not NoneType"),
        (lambda: mapc.into_storyline(["atif"], b"{}"), r"fmt must be a format name \(str\), such as 'atif', not list"),
        (lambda: mapc.into_storyline("atif", {"a": {1, 2}}), "data is not a JSON value"),
        (lambda: mapc.into_storyline("atif", b"{}", path=Path("x")), "path must be a str"),
        (lambda: mapc.into_storyline("atif", b"{}", options={"max_input_bytes": 1}), "options must be a mapc.Options"),
        (lambda: mapc.from_storyline("actf", "story"), r"stories must be a Storyline \(dict\) or a list"),
        (lambda: mapc.from_storyline({"f": 1}, {}), "fmt must be a format name"),
        (lambda: mapc.detect(["x.json"]), "path must be a str or a pathlib.Path, not list"),
        (lambda: mapc.detect("x.json", {"a": 1}), "data must be bytes or str, not dict"),
        (lambda: mapc.convert("atif", 3, b"{}"), "to_fmt must be a format name"),
    ],
)
def test_wrong_types_are_type_errors_with_plain_messages(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_what_a_list_of_storylines_holds_is_data():
    with pytest.raises(mapc.MapcError) as caught:
        mapc.from_storyline("actf", [_expected()[0], "x"])
    assert caught.value.problems[0].pointer.startswith("/1")
    assert mapc.check([])  # not a Storyline: problems, not an exception


def test_options_apply_to_one_call():
    doc = {**orjson.loads(SUPPORT.read_bytes()), "x_one": 1, "x_two": 2}
    assert mapc.into_storyline("atif", doc)[0]["unknown_fields"]
    with pytest.raises(mapc.MapcError) as caught:
        mapc.into_storyline("atif", doc, options=mapc.Options(max_unknown_fields=1))
    assert [p.code for p in caught.value.problems] == ["unknown_fields.limit"]
    dup = b'{"schema_version":"storyline/v1","session":"a","session":"b"}'
    with pytest.raises(mapc.MapcError) as caught:
        mapc.into_storyline("storyline", dup)  # refused by default
    assert caught.value.problems[0].code == "json.duplicate_key"
    with pytest.raises(mapc.MapcError) as caught:
        mapc.into_storyline("storyline", dup, options=mapc.Options(allow_duplicate_keys=True))
    assert caught.value.problems[0].code != "json.duplicate_key"  # let through, then not a valid Storyline


def test_detect_takes_a_path_and_text():
    assert mapc.detect(SUPPORT) == "atif"
    assert mapc.detect("x.json", SUPPORT.read_text(encoding="utf-8")) == "atif"


def test_the_api_presents_itself():
    assert set(mapc.__all__) <= set(dir(mapc))
    for name in mapc.__all__:
        value = getattr(mapc, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"mapc.{name} has no docstring"
    text = pydoc.render_doc(mapc, renderer=pydoc.plaintext)
    for name in ("into_storyline", "from_storyline", "convert", "detect", "check", "formats", "Options"):
        assert name in text
    assert (API / "py.typed").is_file()


def test_import_mapc_stays_cheap():
    code = "import sys, mapc; print(sorted(m for m in sys.modules if m.startswith(('mapc.', 'yaml', 'pyarrow'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(orjson.loads(out.replace("'", '"')))
    assert loaded <= {"mapc.engine", "mapc.engine.catalog"}, loaded  # the catalog is named; nothing is loaded


def test_the_public_surface_is_mypy_clean(tmp_path):
    # mypy in its own process: in this one it raises the recursion limit for good (to 16,384), and
    # the depth checks of later tests then pass values they must refuse.
    use = tmp_path / "use.py"
    use.write_text(
        "from pathlib import Path\nimport mapc\n"
        "stories: list[dict[str, object]] = mapc.into_storyline('atif', Path('x.json'))\n"
        "doc = mapc.from_storyline('actf', stories[0])\n"
        "fmt: str | None = mapc.detect('x.json')\n"
        "problems: list[mapc.Problem] = mapc.check(stories[0])\n"
        "options = mapc.Options(max_input_bytes=10)\n"
    )
    argv = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(
        [*argv, str(API / "__init__.py"), str(API / "_api.py"), str(use)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
