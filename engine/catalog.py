"""The catalog: which specs, functions and codecs the engine runs, named by the layer above it.

The engine knows no format.  A `Catalog` says where the shipped specs are (a package holding
``NAME.yaml`` files), which modules register spec functions (engine/functions.py) and which
package's modules declare codecs (engine/codecs.py).  It is built at the top, by ``mapc``
(api/__init__.py) for the shipped formats, and passed down: `compile_spec`, `functions.lookup`,
`codecs.lookup` and the Storyline validator's count trees take it as an argument.  The catalog
``import mapc`` builds is also *installed* as the default for callers that pass none; the CLI
takes it once at its root command, the API and engine/convert.py resolve a missing argument once at
their entry, and all pass it down from there.  A second catalog can be built and passed to any of
them without installing it; it pickles as its description, so a worker process gets the same one.
The engine imports what a catalog names, and nothing of
`mapc.mappings` by itself (tests/test_layers.py).

A catalog holds what it compiled: each shipped spec once, and only when it is run (a small
conversion pays for its own spec, not for every format), and a spec given by path once per text
(an edited file is compiled again, so a long-lived process never runs a stale copy).  The count
trees of its specs and codecs tell the Storyline validator how to normalize `unknown_key_counts`
of each source (docs/envelope.md); they are found source by source, as a document names them
(`count_trees`), and aliases are read from the specs' data without compiling them.  This module
is imported by ``import mapc``: it imports nothing heavy itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mapc.engine.codecs import Codec
    from mapc.engine.compile import Program
    from mapc.engine.formats import Format
    from mapc.engine.functions import Function
    from mapc.engine.residual import Tree


@dataclass(frozen=True)
class Catalog:
    """The formats the engine runs: `specs`, a package holding the shipped ``NAME.yaml`` specs;
    `functions`, modules whose import registers the functions specs may call; `codecs`, the
    modules that each declare a ``CODEC``, or a package whose modules may (all imported to find
    them; None: no codecs); `traces`, a package holding span-tree specs (``NAME.yaml`` of kind
    ``document: {spans: …}``, engine/spans.py), each run as a codec (None: none).  What it loads
    and compiles it keeps (not part of its value: two catalogs naming the same packages are equal)."""

    specs: str
    functions: tuple[str, ...] = ()
    codecs: str | tuple[str, ...] | None = None
    traces: str | None = None
    _held: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __reduce__(self) -> tuple[type[Catalog], tuple[Any, ...]]:
        """Pickled as its description (the packages it names), not what it compiled: a worker
        process or Ray task gets the same catalog and compiles what it runs itself."""
        return (Catalog, (self.specs, self.functions, self.codecs, self.traces))

    # -- functions and codecs --

    def load_functions(self) -> None:
        """Import the function modules (each registers its functions on import), once."""
        if "functions" not in self._held:
            for module in self.functions:
                importlib.import_module(module)
            self._held["functions"] = True

    def function(self, name: str) -> Function | None:
        """The registered function called `name`: the function modules are imported in their order
        until one has registered it (a spec pays for its own formats' helpers, not for every
        format's), all of them for a name none registers."""
        from mapc.engine.functions import REGISTRY

        found = REGISTRY.get(name)
        if found is not None or "functions" in self._held:
            return found
        loaded: int = self._held.get("functions loaded", 0)
        while found is None and loaded < len(self.functions):
            importlib.import_module(self.functions[loaded])
            loaded += 1
            found = REGISTRY.get(name)
        self._held["functions loaded"] = loaded
        if loaded == len(self.functions):
            self._held["functions"] = True
        return found

    def codec_table(self) -> dict[str, Codec]:
        """The codecs of this catalog by name: every ``CODEC`` its codec package's modules define
        (imported on first use), and those added with `codecs.register`."""
        table: dict[str, Codec] | None = self._held.get("codecs")
        if table is None:
            import pkgutil

            from mapc.engine.codecs import Codec

            table = {}
            modules: tuple[str, ...] = ()
            if isinstance(self.codecs, str):
                package = importlib.import_module(self.codecs)
                modules = tuple(f"{self.codecs}.{info.name}" for info in pkgutil.iter_modules(package.__path__))
            elif self.codecs is not None:
                modules = self.codecs
            for module in modules:
                codec = getattr(importlib.import_module(module), "CODEC", None)
                if isinstance(codec, Codec):
                    table.setdefault(codec.name, codec)
            if self.traces is not None:
                from mapc.engine import resources, spans
                from mapc.engine.spec import parse_yaml

                for name in sorted(resources.names(self.traces)):
                    if name.endswith(".yaml"):
                        data = parse_yaml(name, resources.read_text(self.traces, name))[0]
                        # Functions looked up when the codec runs: looking them up here would import
                        # every function module before theirs on each detection (`mapc validate`).
                        spec = spans.parse(data, data.get("tables") or {}, check_functions=False)
                        table.setdefault(str(data["name"]), spans.codec(spec))
            self._held["codecs"] = table
        return table

    def trace_spec_text(self, name: str) -> str | None:
        """The YAML text of the span-tree spec `name` (``NAME.yaml`` in the `traces` package), if any."""
        from mapc.engine import resources

        if self.traces is None or f"{name}.yaml" not in resources.names(self.traces):
            return None
        return resources.read_text(self.traces, f"{name}.yaml")

    # -- specs --

    def shipped_names(self) -> list[str]:
        """Names of the built-in specs, one per YAML file in the spec package."""
        names: list[str] | None = self._held.get("names")
        if names is None:
            from mapc.engine import resources

            names = sorted(n[: -len(".yaml")] for n in resources.names(self.specs) if n.endswith(".yaml"))
            self._held["names"] = names
        return names

    def spec_text(self, name: str) -> str:
        """The YAML text of the built-in spec `name`."""
        from mapc.engine import resources

        return resources.read_text(self.specs, f"{name}.yaml")

    def _spec_data(self, name: str) -> Any:
        """The parsed data of the built-in spec `name` (parsed once, or taken from the spec cache)."""
        data: dict[str, Any] = self._held.setdefault("data", {})
        if name not in data:
            from mapc.engine.spec import parse_yaml

            data[name] = parse_yaml(f"{name}.yaml", self.spec_text(name))[0]
        return data[name]

    def spec_field(self, name: str, key: str) -> Any:
        """The value of top-level key `key` in the data of the built-in spec `name` (None when it has
        none), read as the spec reader reads it, without compiling the spec."""
        data = self._spec_data(name)
        return data.get(key) if type(data) is dict else None

    def program(self, name_or_path: str) -> Program:
        """The compiled spec for a built-in name (or an alias a spec declares) or a path to a YAML
        spec.  A path is read on every call and compiled again when its text changed."""
        programs: dict[str, Program] = self._held.setdefault("programs", {})
        names = self.shipped_names()
        if name_or_path not in names and name_or_path in self.aliases():
            name_or_path = self.aliases()[name_or_path]
        if name_or_path in names:
            found = programs.get(name_or_path)
            if found is None:
                found = programs[name_or_path] = self._compiled(name_or_path)
            return found
        return self._program_at(name_or_path, names)

    def _compiled(self, name: str) -> Program:
        """Shipped spec `name` compiled, or loaded as compiled from the spec cache (engine/stored.py:
        no spec reader, compiler or code writer is imported then)."""
        from mapc.engine import stored

        text = self.spec_text(name)
        scope = f"{self.specs}|{','.join(self.functions)}"
        directories = self._code_directories()
        found = stored.load(text, scope, directories) if directories else None
        if found is None:
            from mapc.engine.compile import compile_spec
            from mapc.engine.spec import load_spec

            found = compile_spec(load_spec(f"{name}.yaml", text), self)
            if directories:
                stored.store(text, scope, directories, found)
        return found

    def _code_directories(self) -> tuple[str, ...]:
        """The directories of the engine's and the spec package's modules, whose files fingerprint a
        kept program; () when one is not a plain directory (nothing is kept then)."""
        import os

        from mapc.engine import resources

        specs = resources._directory(self.specs)
        return (os.path.dirname(os.path.abspath(__file__)), specs) if specs is not None else ()

    def _program_at(self, name_or_path: str, names: list[str]) -> Program:
        from pathlib import Path

        from mapc.engine.compile import compile_spec
        from mapc.engine.problems import MapcError
        from mapc.engine.spec import load_spec, read_spec_text

        path = Path(name_or_path)
        if not path.is_file():
            raise MapcError.single(
                "spec.not_found", "", f"no spec {name_or_path!r}: not a file, nor a built-in ({', '.join(names)})"
            )
        text = read_spec_text(path)
        by_path: dict[str, tuple[str, Program]] = self._held.setdefault("paths", {})
        key = str(path.resolve())
        held = by_path.get(key)
        if held is not None and held[0] == text:
            return held[1]
        compiled = compile_spec(load_spec(path, text), self)
        by_path[key] = (text, compiled)  # the latest text of each path only: bounded by the files named
        return compiled

    def aliases(self) -> dict[str, str]:
        """Other names of the shipped formats (a spec's `aliases:`), e.g. a long form of its name;
        read from each spec's data, as the spec reader reads them, without compiling it."""
        out: dict[str, str] | None = self._held.get("aliases")
        if out is None:
            out = {}
            for name in self.shipped_names():
                data = self._spec_data(name)
                for alias in (data.get("aliases") if type(data) is dict else None) or ():
                    out[str(alias)] = name
            self._held["aliases"] = out
        return out

    def count_trees(self) -> Mapping[str, Tree]:
        """Unknown-key count normalization per source, from the shipped specs' declared arrays and
        the codecs' own trees; each tree is made when a document first names its source."""
        return _CountTrees(self)

    def tree_of(self, source: str) -> Tree | None:
        """The count tree of residual source `source`: of the shipped spec that declares it
        (compiled then, as running it would be), else of the codec that writes it, else None."""
        trees: dict[str, Any] = self._held.setdefault("trees", {})
        if source not in trees:
            name = self._declared_sources().get(source)
            if name is not None:
                trees[source] = self.program(name).count_tree
            else:
                codec = next((c for c in self.codec_table().values() if c.source == source), None)
                trees[source] = codec.count_tree if codec is not None else None
        return trees[source]  # type: ignore[no-any-return]

    def all_count_trees(self) -> dict[str, Tree]:
        """Every count tree: of every shipped spec (all compiled) and every codec."""
        every: dict[str, Tree] | None = self._held.get("every tree")
        if every is None:
            every = {self.program(n).spec.source: self.program(n).count_tree for n in self.shipped_names()}
            every.update({c.source: c.count_tree for c in self.codec_table().values()})
            self._held["every tree"] = every
        return every

    def _declared_sources(self) -> dict[str, str]:
        """Residual source -> the shipped spec declaring it, read from the specs' data (as the spec
        reader reads `source`, whose default is the name) without compiling them."""
        out: dict[str, str] | None = self._held.get("sources")
        if out is None:
            out = {}
            for name in self.shipped_names():
                data = self._spec_data(name)
                if type(data) is dict:
                    out.setdefault(str(data.get("source", data.get("name", name))), name)
            self._held["sources"] = out
        return out

    # -- formats --

    def format(self, name: str) -> Format:
        """The `Format` called `name` (or an alias): the hub, a spec format or a codec."""
        from mapc.engine.formats import format_of

        return format_of(self, name)

    def compiled(self) -> list[str]:
        """The shipped specs this catalog has compiled so far (a run compiles only its own)."""
        return sorted(self._held.get("programs", {}))

    def memo(self, key: str, make: Callable[[], Any]) -> Any:
        """What `make()` gives, made once per catalog and kept under `key` (for the engine's
        modules that derive tables from a catalog, e.g. detection rules)."""
        if key not in self._held:
            self._held[key] = make()
        return self._held[key]

    def clear(self) -> None:
        """Forget what was compiled and loaded (the next use loads it again)."""
        # Registered functions stay registered: importing their modules again would not re-run them.
        loaded = {k: v for k, v in self._held.items() if k in ("functions", "functions loaded")}
        self._held.clear()
        self._held.update(loaded)


class _CountTrees(Mapping[str, "Tree"]):
    """The count tree of each residual source of a catalog, found when a document names the source;
    iterating makes the whole table."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    def __getitem__(self, source: str) -> Tree:
        tree = self._catalog.tree_of(source)
        if tree is None:
            raise KeyError(source)
        return tree

    def get(self, source: str, default: Any = None) -> Any:
        """`Mapping.get` without the KeyError round trip: the hub's check asks once per Storyline."""
        tree = self._catalog.tree_of(source)
        return default if tree is None else tree

    def __iter__(self) -> Iterator[str]:
        return iter(self._catalog.all_count_trees())

    def __len__(self) -> int:
        return len(self._catalog.all_count_trees())


_INSTALLED: list[Catalog] = []


def install(catalog: Catalog) -> None:
    """Make `catalog` the default for callers that pass none (``import mapc`` installs the shipped
    one); it is used afresh (what it had compiled is forgotten)."""
    catalog.clear()
    _INSTALLED[:] = [catalog]


def installed() -> Catalog:
    """The installed catalog (``import mapc`` installs the shipped one)."""
    if not _INSTALLED:
        raise RuntimeError("no catalog is installed: import mapc (or call mapc.engine.catalog.install) first")
    return _INSTALLED[0]


def shipped_names(catalog: Catalog | None = None) -> list[str]:
    """Names of the built-in specs of `catalog` (None: the installed one)."""
    return (catalog or installed()).shipped_names()


def spec_text(name: str, catalog: Catalog | None = None) -> str:
    """The YAML text of the built-in spec `name`."""
    return (catalog or installed()).spec_text(name)


def program(name_or_path: str, catalog: Catalog | None = None) -> Program:
    """`Catalog.program` of `catalog` (None: the installed one)."""
    return (catalog or installed()).program(name_or_path)


def count_trees(catalog: Catalog | None = None) -> Mapping[str, Tree]:
    """`Catalog.count_trees` of `catalog` (None: the installed one)."""
    return (catalog or installed()).count_trees()


def aliases(catalog: Catalog | None = None) -> dict[str, str]:
    """`Catalog.aliases` of `catalog` (None: the installed one)."""
    return (catalog or installed()).aliases()
