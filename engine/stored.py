"""A compiled shipped spec kept in the spec cache, loaded without the spec reader, the compiler or codegen.

A run of a shipped spec (`mapc run NAME FILE`) otherwise reads the spec's data, checks it, compiles it
and writes its code on every start.  Here the finished `Program` is kept whole: its values pickled
(the spec, the scopes of rule objects, the count tree) beside the bytecode of its generated functions
and the constants that code names, and loaded back by unpickling and running that bytecode in a
namespace of those constants.  Loading imports the modules the program's values are instances of
and the function modules its rules call, and nothing of `compile.py` or `codegen.py`.

An entry is keyed by the spec's text, the catalog's packages and a fingerprint of mapc's own engine and
format modules (name, size and modification time of each ``.py`` file, as Python checks its bytecode):
any edit of the engine or of a format's functions compiles again.  Unpickling runs code, so an entry
is taken only as the cache's code entries are (engine/cache.py: a private directory, and a keyed hash
under this user's secret); anything wrong with it, or a program whose values cannot be pickled (a
closure), means the spec is compiled as before.  Never an error.
"""

from __future__ import annotations

import importlib
import io
import marshal
import os
import pickle
from types import CodeType
from typing import TYPE_CHECKING, Any

from mapc.engine import cache, ops

if TYPE_CHECKING:
    from mapc.engine.program import Program

_KIND = "program"
_GENERATED = ("forward_root", "reverse_root")
_fingerprints: dict[tuple[str, ...], bytes] = {}


def _fingerprint(directories: tuple[str, ...]) -> bytes:
    """Name, size and mtime of every ``.py`` file in `directories` (made once per process)."""
    found = _fingerprints.get(directories)
    if found is None:
        parts: list[str] = []
        for directory in directories:
            with os.scandir(directory) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.name.endswith(".py"):
                        st = entry.stat()
                        parts.append(f"{directory}/{entry.name}:{st.st_size}:{st.st_mtime_ns}")
        found = _fingerprints[directories] = "\n".join(parts).encode("utf-8", "surrogateescape")
    return found


def _key(text: str, scope: str, directories: tuple[str, ...]) -> bytes:
    return text.encode("utf-8", "surrogatepass") + b"\0" + scope.encode() + b"\0" + _fingerprint(directories)


_CONDITIONS = {id(c.test): name for name, c in ops.CONDITIONS.items()}
# Values the engine compares by identity (`v is MISSING`, a count tree's `*` keys): kept by name, so a
# loaded program holds the very objects, not copies.
_SINGLETONS = {
    id(v): (m, n)
    for m, n, v in (
        (m, n, getattr(importlib.import_module(m), n))
        for m, n in (
            ("mapc.engine.values", "MISSING"),
            ("mapc.engine.residual", "ANY_INDEX"),
            ("mapc.engine.residual", "ANY_STRICT_INDEX"),
            ("mapc.engine.residual", "ANY_KEY"),
        )
    )
}


def named(module: str, name: str) -> Any:
    """The object `name` of `module` (how a kept singleton is loaded)."""
    return getattr(importlib.import_module(module), name)


class _Pickler(pickle.Pickler):
    """Pickles a program's values: a `when:` condition's test by its name (a lambda of ops.py), and the
    engine's singletons by reference."""

    def reducer_override(self, obj: Any) -> Any:
        name = _CONDITIONS.get(id(obj))
        if name is not None and ops.CONDITIONS[name].test is obj:
            return ops.condition, (name,)
        where = _SINGLETONS.get(id(obj))
        if where is not None:
            return named, where
        return NotImplemented


def load(text: str, scope: str, directories: tuple[str, ...]) -> Program | None:
    """The program kept for spec `text` in catalog `scope` (a string naming its packages), or None."""
    if cache.directory() is None:
        return None
    body = cache.entry(_KIND, _key(text, scope, directories))
    if body is None:
        return None
    try:
        values_bytes, code_bytes = marshal.loads(body)
        code = marshal.loads(code_bytes)
        fields, names, filename = pickle.loads(values_bytes)
        if not isinstance(code, CodeType) or type(fields) is not dict or type(names) is not dict:
            return None
        from mapc.engine.program import Program

        namespace = dict(names)
        exec(code, namespace)
        import linecache

        source = fields["source"]
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        program = Program(**fields, **{g: namespace[g] for g in _GENERATED})
    except Exception:  # an entry of another layout, or one that no longer loads: compiled again
        return None
    return program


def store(text: str, scope: str, directories: tuple[str, ...], program: Program) -> None:
    """Keep `program` (compiled from spec `text`) for `load`; a program that cannot be kept is not."""
    if cache.directory() is None:
        return
    namespace = program.forward_root.__globals__
    filename = program.forward_root.__code__.co_filename
    names = {
        k: v
        for k, v in namespace.items()
        if k != "__builtins__" and getattr(v, "__globals__", None) is not namespace  # not what the code defines
    }
    fields = {f: getattr(program, f) for f in program.__slots__ if f not in _GENERATED}
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((fields, names, filename))
        code = cache.compiled(program.source, filename)  # the generated functions' bytecode, as it ran
        body = marshal.dumps((buffer.getvalue(), marshal.dumps(code)))
    except Exception:  # a value that does not pickle (a closure): this program is compiled on every run
        return
    cache.store_entry(_KIND, _key(text, scope, directories), body)
