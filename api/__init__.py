"""mapc: convert, validate and store AI-agent trajectories through the Storyline hub.

The library API (loaded on first use, so ``import mapc`` stays cheap)::

    stories = mapc.into_storyline("atif", Path("run.json"))   # bytes, str text, dict/list or a Path
    document = mapc.from_storyline("actf", stories)           # one Storyline (dict) or a list of them
    document = mapc.convert("atif", "actf", data)             # == from_storyline(to, into_storyline(from, data))
    document, report = mapc.convert_reported("atif", "actf", data)  # and its loss report (report.exact, …)
    problems = mapc.check(story)                              # [] when a Storyline is valid
    mapc.detect("run.actf.json", data)                        # "actf", or None
    mapc.formats()                                            # every format name

Format names are case-insensitive and take aliases (``"openai-messages"``).  Bad input raises
`mapc.MapcError`, whose ``.problems`` are `mapc.Problem` values (code, JSON Pointer, message);
arguments of the wrong type raise `TypeError`.  `mapc.Options` sets limits and the duplicate-key
check for one call (``options=Options(max_input_bytes=10_000_000)``); ``catalog=`` (a `mapc.Catalog`)
the formats it runs, by default `mapc.shipped_catalog()`.  The repository's docs/ say
more: docs/index.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "into_storyline": ("mapc._api", "into_storyline"),
    "from_storyline": ("mapc._api", "from_storyline"),
    "convert": ("mapc._api", "convert"),
    "convert_reported": ("mapc._api", "convert_reported"),
    "from_storyline_reported": ("mapc._api", "from_storyline_reported"),
    "Report": ("mapc.engine.loss", "Report"),
    "Carried": ("mapc.engine.loss", "Carried"),
    "Said": ("mapc.engine.loss", "Said"),
    "formats": ("mapc._api", "formats"),
    "detect": ("mapc._api", "detect"),
    "check": ("mapc._api", "check"),
    "Options": ("mapc.engine.options", "Options"),
    "Catalog": ("mapc.engine.catalog", "Catalog"),
    "MapcError": ("mapc.engine.problems", "MapcError"),
    "Problem": ("mapc.engine.problems", "Problem"),
}

__all__ = ["MapcError", "Options", "Problem", "__version__", "check", "convert", "detect", "formats"]
__all__ += ["from_storyline", "into_storyline"]
__all__ += ["Carried", "Report", "Said", "convert_reported", "from_storyline_reported"]
__all__ += ["Catalog", "shipped_catalog"]

if TYPE_CHECKING:  # what type checkers and editors see; at run time each is imported on first use
    from mapc._api import (
        check,
        convert,
        convert_reported,
        detect,
        formats,
        from_storyline,
        from_storyline_reported,
        into_storyline,
    )
    from mapc.engine.catalog import Catalog
    from mapc.engine.loss import Carried, Report, Said
    from mapc.engine.options import Options
    from mapc.engine.problems import MapcError, Problem


# The modules registering the shipped specs' functions, in the order a lookup imports them until one
# has the name it asks for (engine/catalog.py `Catalog.function`): the general ones and ATIF's first.
_SHIPPED_FUNCTIONS = (
    "mapc.mappings.functions",
    "mapc.mappings.openai_chat",
    "mapc.mappings.openai_msg",
    "mapc.mappings.codex",
    "mapc.mappings.claude_code",
    "mapc.mappings.otel_genai",
)
# The modules declaring the shipped codecs (tests/engine/test_catalog.py checks that no other module of
# `mapc.mappings` declares one): only these are imported to list the codecs, not every format's module.
_SHIPPED_CODECS = ("mapc.mappings.agenticmd",)
# The span-tree specs (engine/spans.py), each run as a codec: `mapc.mappings.traces`.


def _install_the_shipped_catalog() -> None:
    """The one place that names the shipped formats: specs, functions and codecs of
    `mapc.mappings`, given to the engine (which imports nothing of them by itself)."""
    from mapc.engine import catalog

    catalog.install(
        catalog.Catalog(
            specs="mapc.mappings", functions=_SHIPPED_FUNCTIONS, codecs=_SHIPPED_CODECS, traces="mapc.mappings.traces"
        )
    )


def shipped_catalog() -> Catalog:
    """The catalog of the shipped formats this import built: the command line takes it at the top and
    passes it down; the API functions use it when given no ``catalog=``."""
    from mapc.engine import catalog

    return catalog.installed()


_install_the_shipped_catalog()


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value  # once imported, a plain attribute
        return value
    raise AttributeError(f"module 'mapc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
