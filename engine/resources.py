"""Files shipped inside a package (specs, schemas), read without `importlib.resources` when the
package is a plain directory, as an installed or checked-out mapc is: that module costs a few
milliseconds to import, a visible part of a small `mapc run`.  Anything else (a zip) goes through it."""

from __future__ import annotations

import functools
import importlib
import os


@functools.cache
def _directory(package: str) -> str | None:
    """The one directory holding `package`'s files, or None when it is not a plain directory."""
    locations = list(getattr(importlib.import_module(package), "__path__", ()))
    return locations[0] if len(locations) == 1 and os.path.isdir(locations[0]) else None


def names(package: str) -> list[str]:
    """The names of the files directly in `package`."""
    found = _directory(package)
    if found is not None:
        return [entry.name for entry in os.scandir(found) if entry.is_file()]
    import importlib.resources

    return [p.name for p in importlib.resources.files(package).iterdir() if p.is_file()]


def read_text(package: str, name: str) -> str:
    """The UTF-8 text of the file `name` in `package`; FileNotFoundError when there is none."""
    found = _directory(package)
    if found is not None:
        with open(os.path.join(found, name), encoding="utf-8") as file:
            return file.read()
    import importlib.resources

    return importlib.resources.files(package).joinpath(name).read_text(encoding="utf-8")
