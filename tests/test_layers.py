"""The layering promises: the engine knows no format and never reaches up into the CLI."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = sorted((ROOT / "engine").glob("*.py"))
FORMAT_WORDS = re.compile(r"\b(atif|actf|openai|agenticmd)\b", re.IGNORECASE)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", ENGINE, ids=lambda p: p.name)
def test_engine_never_imports_the_formats(path: Path):
    """The formats (`mapc.mappings`) are named once, by the catalog built at the top (api/__init__.py)
    and installed into engine/catalog.py: no engine module imports them, nor names them in code."""
    bad = {n for n in _imports(path) if n.startswith("mapc.mappings")}
    assert not bad, f"{path.name} imports {bad}"
    named = [s for s in _code_strings_and_names(path) if "mapc.mappings" in s]
    assert not named, f"{path.name} names the formats' package in code: {named}"


def test_the_catalog_is_built_at_the_top():
    import mapc
    from mapc.engine import catalog

    assert catalog.installed().specs == "mapc.mappings"
    assert "mapc.mappings" in (ROOT / "api" / "__init__.py").read_text(encoding="utf-8")
    assert mapc.__name__ == "mapc"


def test_the_conformance_runner_is_not_in_the_engine():
    assert not (ROOT / "engine" / "suite.py").exists()
    assert (ROOT / "cli" / "suite.py").exists()


@pytest.mark.parametrize("path", ENGINE, ids=lambda p: p.name)
def test_engine_never_imports_the_cli_or_click(path: Path):
    bad = {n for n in _imports(path) if n.startswith(("mapc.cli", "click", "mapc.store"))}
    assert not bad, f"{path.name} imports {bad}"


def _code_strings_and_names(path: Path) -> list[str]:
    """Identifiers and string constants that are not docstrings: where format logic would hide."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            out.append(node.value)
        elif isinstance(node, ast.Name):
            out.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.append(node.name)
    return out


@pytest.mark.parametrize("path", ENGINE, ids=lambda p: p.name)
def test_engine_code_names_no_format(path: Path):
    hits = [s for s in _code_strings_and_names(path) if FORMAT_WORDS.search(s)]
    assert not hits, f"{path.name} mentions a format in code: {hits[:5]}"


def test_format_functions_live_with_the_specs():
    assert (ROOT / "mappings" / "functions.py").is_file()
    assert not FORMAT_WORDS.search(" ".join(_code_strings_and_names(ROOT / "engine" / "functions.py")))
