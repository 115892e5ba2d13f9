"""mapc: convert, validate and store AI-agent trajectories through the Storyline hub.

The library API (loaded on first use, so `import mapc` stays cheap)::

    stories = mapc.into_storyline("atif", data)        # bytes of a file -> list of Storyline dicts
    document = mapc.from_storyline("actf", stories)    # -> the document (dict, or list of them)
    document = mapc.convert("atif", "actf", data)      # == from_storyline(to, into_storyline(from, data))
    problems = mapc.check(story)                       # [] when a Storyline is valid

Bad input raises `mapc.MapcError`, whose `.problems` carry a code and a JSON Pointer each.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "into_storyline": ("mapc.engine.convert", "into_storyline"),
    "from_storyline": ("mapc.engine.convert", "from_storyline"),
    "convert": ("mapc.engine.convert", "convert"),
    "formats": ("mapc.engine.convert", "formats"),
    "detect": ("mapc.engine.detect", "detect"),
    "check": ("mapc.engine.storyline", "check"),
    "MapcError": ("mapc.engine.problems", "MapcError"),
    "Problem": ("mapc.engine.problems", "Problem"),
}

__all__ = ["__version__", *_EXPORTS]


def _install_the_shipped_catalog() -> None:
    """The one place that names the shipped formats: specs, functions and codecs of
    `mapc.mappings`, given to the engine (which imports nothing of them by itself)."""
    from mapc.engine import catalog

    catalog.install(
        catalog.Catalog(specs="mapc.mappings", functions=("mapc.mappings.functions",), codecs="mapc.mappings")
    )


_install_the_shipped_catalog()


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        module, attr = _EXPORTS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'mapc' has no attribute {name!r}")
