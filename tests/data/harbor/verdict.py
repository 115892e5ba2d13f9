"""Harbor's verdict on ATIF documents: run by Harbor's own Python (>= 3.12), not by mapc.

Reads JSON Lines `{"name": ..., "doc": ...}` on stdin and writes, per line, `{"name", "valid",
"errors"}`: `Trajectory.model_validate(doc)` (what `harbor.utils.trajectory_validator` runs, less
its check that local image paths exist, which needs the files); `errors` are pydantic's
`(loc, type)` pairs.  With `--schema FILE` it also writes `Trajectory.model_json_schema()`.
"""

import json
import sys

import harbor
from harbor.models.trajectories import Trajectory
from pydantic import ValidationError


def verdict(doc):
    try:
        Trajectory.model_validate(doc)
    except ValidationError as exc:
        return False, [{"loc": [str(p) for p in e["loc"]], "type": e["type"]} for e in exc.errors()]
    return True, []


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--schema":
        with open(sys.argv[2], "w") as f:
            json.dump(Trajectory.model_json_schema(), f, indent=1, sort_keys=True)
            f.write("\n")
    version = getattr(harbor, "__version__", None)
    if version is None:
        from importlib.metadata import version as v

        version = v("harbor")
    for line in sys.stdin:
        item = json.loads(line)
        valid, errors = verdict(item["doc"])
        sys.stdout.write(json.dumps({"name": item["name"], "valid": valid, "errors": errors, "harbor": version}) + "\n")


main()
