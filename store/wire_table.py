"""A wire table (``mappings/wire/NAME.yaml``) read: rules in the engine's vocabulary → what the projector runs.

A wire table says, in the rule vocabulary of every mapc spec (docs/spec-language.md: ``from``,
``first_of``, ``const``, ``call`` + ``args``, ``to``, ``when``), how one protocol's bodies become
Storyline turns.  Three levels of rules, each a list:

- ``rules:`` the call: ``from`` a pointer into the request body (``/request/…``) or the response
  body (``/response/…``), ``to`` the turns the call adds (``/turns``: the conversation, each
  message once; ``/turns/{t}/…``: a value of the turn, the response's or the first one added).
- ``message:`` the kinds of conversation message (or item), the first whose ``type`` (with
  ``message_type``) and ``when`` (``{pointer: value}``) match: its rules go from the message to
  the turn (``/src``, ``/blocks``: the content, ``/extra/…``, or a place a block goes to).
- ``blocks:`` the kinds of content block by ``type`` (or by ``block_type``: the first of some keys a
  block holds), each with rules from the block to its place in the turn: ``/msg``, ``/reason``,
  ``/tool_calls/{c}/tcid|fn|args``, ``/observation/results/{r}/source_call_id|content|is_error|name``
  or ``/extra/NAME``.

``consume:`` (as in every spec: ``{pointer: {equals: value}}``) lists the response's fixed values,
read and not carried.  `read` checks a table and returns the form the projector (store/wire.py)
runs; a table that says something the projector cannot do is a ``spec.invalid`` error at its
pointer, never a traceback.  The named functions a rule may call are `FUNCTIONS` (how each is
run is the projector's: a role renamed by a table, JSON text read, summary texts joined).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Final

from mapc.engine import functions, pointer
from mapc.engine.problems import MapcError, Problem

# The codec functions that assemble a streamed response (store/wire.py `ASSEMBLERS`).
STREAMS: Final = {
    "content_block_events": "content-block-events",
    "choice_delta_chunks": "choice-delta-chunks",
    "output_item_events": "output-item-events",
    "candidate_chunks": "candidate-chunks",
}
# A block's place in the turn -> (the kind of block the projector reads, the name of the value).
_PLACES: Final = {
    "/msg": ("msg", "text"),
    "/reason": ("reason", "text"),
    "/tool_calls/{c}/tcid": ("tool_call", "id"),
    "/tool_calls/{c}/fn": ("tool_call", "fn"),
    "/tool_calls/{c}/args": ("tool_call", "args"),
    "/observation/results/{r}/source_call_id": ("observation", "id"),
    "/observation/results/{r}/content": ("observation", "content"),
    "/observation/results/{r}/is_error": ("observation", "error"),
    "/observation/results/{r}/name": ("observation", "name"),
}
_RULE_KEYS: Final = frozenset({"from", "first_of", "const", "call", "args", "to", "when"})
_EXTRA = re.compile(r"^/turns/\{t\}/extra/([^/{}]+)$")
_METRIC = re.compile(r"^/turns/\{t\}/metrics/([^/{}]+)$")
_BLOCK_EXTRA = re.compile(r"^/extra/([^/{}]+)$")
_EACH = re.compile(r"^(/[^/{}]+)/\{n\}(/.*)?$")  # a message key holding a list, one block per element


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.problems: list[Problem] = []

    def fail(self, where: str, message: str) -> None:
        self.problems.append(Problem("spec.invalid", where, message))

    def rules(self, value: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
        """The rules of a list, each checked for its keys and one op; with their pointers."""
        if not isinstance(value, list):
            self.fail(where, "rules are a list of {from | first_of | const | call, to, when}")
            return []
        out = []
        for n, rule in enumerate(value):
            at = f"{where}/{n}"
            if not isinstance(rule, dict) or not isinstance(rule.get("to"), str):
                self.fail(at, "a rule is a mapping with `to` (a pointer)")
                continue
            for key in sorted(set(rule) - _RULE_KEYS):
                self.fail(f"{at}/{key}", f"unknown rule key {key!r} (known: {', '.join(sorted(_RULE_KEYS))})")
            ops = [k for k in ("from", "first_of", "const") if k in rule]
            if len(ops) != 1:
                self.fail(at, "a rule has exactly one of `from`, `first_of`, `const`")
                continue
            pointers = [rule["from"]] if "from" in rule else rule.get("first_of", [])
            if not isinstance(pointers, list) or not all(isinstance(p, str) and _pointer(p) for p in pointers):
                self.fail(at, "`from` is a JSON Pointer, `first_of` a list of them")
                continue
            if "call" in rule and functions.lookup(rule["call"]) is None:
                self.fail(f"{at}/call", f"unknown function {rule['call']!r} (a function registered for specs)")
                continue
            args = rule.get("args", [])
            if not isinstance(args, list) or not all(isinstance(a, dict) and set(a) == {"const"} for a in args):
                self.fail(f"{at}/args", "a wire rule's `args` are {const: VALUE}s (after the value it converts)")
                continue
            out.append((at, rule))
        return out


def _pointer(text: str) -> bool:
    try:
        pointer.parse(re.sub(r"\{[a-z]\}", "0", text))
    except pointer.PointerSyntaxError:
        return False
    return True


def _const_arg(rule: dict[str, Any]) -> Any:
    args = rule.get("args")
    if isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict) and set(args[0]) == {"const"}:
        return args[0]["const"]
    return None


def _block(reader: _Reader, rules: list[tuple[str, dict[str, Any]]], where: str) -> dict[str, Any] | None:
    """The projector's form of one block's rules: its kind, then each name's pointer (in rule order)."""
    out: dict[str, Any] = {}
    for at, rule in rules:
        to = rule["to"]
        kind, name = _PLACES.get(to, (None, None))
        extra = _BLOCK_EXTRA.match(to)
        if kind is None and extra is not None:
            kind, name = extra.group(1), "value"
        if kind is None or name is None or "from" not in rule or "when" in rule:
            reader.fail(f"{at}/to", f"a block's rule copies `from` to one of {', '.join(_PLACES)} or /extra/NAME")
            return None
        if out.setdefault("to", kind) != kind:
            reader.fail(f"{at}/to", f"one block is one place: this rule writes a {kind}, an earlier one a {out['to']}")
            return None
        out[name] = rule["from"]
        if "call" in rule:  # converts the value read (its args follow it), as `call` beside `from` does
            fn = functions.lookup(rule["call"])
            args = tuple(a["const"] for a in rule.get("args", []))
            if fn is None or fn.arity != 1 + len(args):
                reader.fail(f"{at}/call", f"{rule['call']} takes {fn.arity - 1 if fn else '?'} args after the value")
                return None
            out.setdefault("calls", {})[name] = (fn.fn, args)
    if "to" not in out:
        if not any(p.pointer.startswith(where) for p in reader.problems):  # not a follow-on of a bad rule
            reader.fail(where, "a block kind has rules")
        return None
    return out


def _call_rules(reader: _Reader, data: Any, spec: dict[str, Any]) -> None:
    request: dict[str, Any] = {}
    response: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    for at, rule in reader.rules(data.get("rules"), "/rules"):
        to = rule["to"]
        sources = [rule["from"]] if "from" in rule else list(rule.get("first_of", []))
        split = [_side(s) for s in sources]
        if not sources or any(side not in ("request", "response") for side, _ in split):
            reader.fail(f"{at}/from", "a call's rule reads /request/… or /response/…")
            continue
        side, where = split[0]
        if to == "/turns" and side == "request":
            request["messages"] = where
        elif to == "/history" and side == "request":  # the turns before the request's: that response's
            request["continues"] = where
        elif to == "/turns/{t}" and side == "response" and len(split) == 1:
            response["message"] = where
        elif to == "/turns/{t}/model" and rule.get("when") == "string" and side == "response":
            response["model"] = where
            if len(split) == 2 and split[1][0] == "request":
                request["model"] = split[1][1]
        elif _EXTRA.match(to) and len(split) == 1:
            name = _EXTRA.match(to).group(1)  # type: ignore[union-attr]
            if side == "request" and name in ("system", "tools"):
                request[name] = where
            elif side == "response":
                response[name] = where
            else:
                reader.fail(f"{at}/to", "a request value goes to extra/system or extra/tools (the others: params)")
        elif _METRIC.match(to) and side == "response" and len(split) == 1:
            usage[_METRIC.match(to).group(1)] = where  # type: ignore[union-attr]
        else:
            reader.fail(f"{at}/to", f"no place of a call for {to!r} from {sources[0]!r}")
    if not reader.problems and ("messages" not in request or "message" not in response):  # not a follow-on
        reader.fail("/rules", "a call's rules read the conversation (to /turns) and the response (to /turns/{t})")
    # the response's own names first (the message, then the model), as the projector reads them
    spec["request"] = request
    spec["response"] = {k: response[k] for k in ("message", "model") if k in response} | {
        k: v for k, v in response.items() if k not in ("message", "model")
    }
    constants: dict[str, Any] = {}
    consume = data.get("consume") or {}
    for where, how in consume.items() if isinstance(consume, dict) else ():
        fixed = isinstance(how, dict) and set(how) == {"equals"}
        if not (isinstance(where, str) and where.startswith("/response/") and fixed):
            reader.fail(f"/consume/{where}", "a consumed value is /response/POINTER: {equals: VALUE or [VALUES]}")
            continue
        constants[where[len("/response") :]] = how["equals"]
    spec["constants"] = constants
    spec["usage"] = usage


def _side(source: str) -> tuple[str, str]:
    """``/request/messages`` → (``request``, ``/messages``); ``/response`` → (``response``, "")."""
    head, _, rest = source.removeprefix("/").partition("/")
    return head, f"/{rest}" if rest else ""


def _message_kinds(reader: _Reader, data: Any, spec: dict[str, Any]) -> None:
    kinds = data.get("message")
    if not isinstance(kinds, list) or not kinds:
        reader.fail("/message", "`message` is a list of message kinds {type, when, rules}")
        return
    typed = data.get("message_type")
    message: dict[str, Any] = {}
    items: dict[str, Any] = {"type": typed, "messages": [], "other": {}} if typed is not None else {}
    roles: dict[str, Any] = {}
    for n, kind in enumerate(kinds):
        where = f"/message/{n}"
        if not isinstance(kind, dict) or set(kind) - {"type", "when", "rules"}:
            reader.fail(where, "a message kind is {type, when, rules}")
            continue
        rules = reader.rules(kind.get("rules"), f"{where}/rules")
        src = [r for _, r in rules if r["to"] == "/src"]
        places = [(at, r) for at, r in rules if r["to"] != "/src" and not (r["to"] == "/extra/role" and "when" in r)]
        reads_content = any(r["to"] == "/blocks" for _, r in places)
        when = kind.get("when")
        types = kind.get("type")
        if reads_content:  # role and content: a message, read by the message rules
            if src and "from" in src[0]:
                message["role"] = src[0]["from"]
                roles = _const_arg(src[0]) or {}
            for _, r in rules:
                if r["to"] == "/extra/role" and isinstance(r.get("when"), dict):
                    spec["roles_kept"] = [str(v) for v in r["when"].values()]
            _message(reader, places, message)
            if typed is not None:
                items["messages"] = [t for t in (types if isinstance(types, list) else [types]) if t is not None]
        elif isinstance(when, dict) and len(when) == 1:  # a message of this role is one block
            role = next(iter(when.values()))
            block = _block(reader, places, where)
            if block is not None:
                message.setdefault("whole", {})[role] = block
        elif typed is not None and src and "const" in src[0]:
            role = next((r for r, s in roles.items() if s == src[0]["const"]), src[0]["const"])
            if types is None and [r["to"] for _, r in places] == ["/extra/blocks"]:
                items["unknown"] = role  # any other item: kept whole
                continue
            block = _block(reader, places, where)
            if block is not None and isinstance(types, str):
                items["other"][types] = {"role": role, "rule": block}
        else:
            reader.fail(where, "a message kind reads /blocks (a message), or is one block by `when` or `type`")
    spec["message"] = message
    if items:
        items["unknown"] = items.pop("unknown", "unknown")
        if data.get("merge") is not None:
            items["merge"] = data["merge"]
        spec["items"] = items
    spec["roles"] = roles


def _message(reader: _Reader, places: list[tuple[str, dict[str, Any]]], message: dict[str, Any]) -> None:
    """A message's content pointer, and its other keys that become blocks (`fields`, in rule order)."""
    fields: dict[str, tuple[bool, list[tuple[str, dict[str, Any]]]]] = {}
    for at, rule in places:
        if rule["to"] == "/blocks":
            message["content"] = rule["from"]
            continue
        found = _EACH.match(rule.get("from", ""))
        key, below = (found.group(1), found.group(2) or "") if found else (rule.get("from", ""), "")
        fields.setdefault(key, (found is not None, []))[1].append((at, {**rule, "from": below}))
    out = []
    for key, (each, rules) in fields.items():
        block = _block(reader, rules, rules[0][0])
        if block is not None:
            out.append({"at": key, "each": True, "rule": block} if each else {"at": key, "rule": block})
    if out:
        message["fields"] = out


def _blocks(reader: _Reader, data: Any, spec: dict[str, Any]) -> None:
    kinds = data.get("blocks")
    if not isinstance(kinds, list):
        reader.fail("/blocks", "`blocks` is a list of block kinds {type, rules}")
        return
    blocks: dict[str, Any] = {}
    for n, kind in enumerate(kinds):
        where = f"/blocks/{n}"
        if not isinstance(kind, dict) or not isinstance(kind.get("type"), str) or set(kind) - {"type", "rules", "pair"}:
            reader.fail(where, "a block kind is {type, rules, pair}")
            continue
        block = _block(reader, reader.rules(kind.get("rules"), f"{where}/rules"), where)
        if block is None:
            continue
        if kind.get("pair") is not None:
            if kind["pair"] != "by_name" or block["to"] not in ("tool_call", "observation"):
                reader.fail(f"{where}/pair", "`pair: by_name` is for a tool call or result whose id is optional")
            block["pair"] = "by_name"
        blocks[kind["type"]] = block
    spec["blocks"] = blocks
    typing = data.get("block_type")
    if typing is not None:
        keys = typing.get("first_of") if isinstance(typing, dict) and set(typing) == {"first_of"} else None
        if not isinstance(keys, list) or not all(isinstance(k, str) and re.fullmatch(r"/[^/~]+", k) for k in keys):
            reader.fail("/block_type", "`block_type` is {first_of: [/KEY, ...]}: the first key a block holds")
        else:
            spec["part_keys"] = [k[1:] for k in keys]


_TOP: Final = frozenset(
    {"protocol", "paths", "hints", "stream", "rules", "consume", "message", "message_type", "merge", "string_message"}
    | {"block_type", "blocks"}
)


def read(data: Any, name: str) -> dict[str, Any]:
    """The projector's form of the wire table `data` (the YAML of ``mappings/wire/NAME.yaml``).

    Raises `MapcError` (``spec.invalid`` at the table's pointers, each message naming the table)
    for a table it cannot read."""
    spec, problems = _read(data, name)
    if problems:
        raise MapcError(replace(p, message=f"{name}: {p.message}") for p in problems)
    return spec


def _read(data: Any, name: str) -> tuple[dict[str, Any], list[Problem]]:
    reader = _Reader(name)
    if not isinstance(data, dict) or not isinstance(data.get("protocol"), str):
        return {}, [Problem("spec.invalid", "", "a wire table is a mapping with a `protocol` name")]
    for key in sorted(set(data) - _TOP):
        reader.fail(f"/{key}", f"unknown key {key!r} (known: {', '.join(sorted(_TOP))})")
    spec: dict[str, Any] = {"protocol": data["protocol"]}
    spec.update(paths=data.get("paths", []), hints=data.get("hints", []))
    stream = data.get("stream")
    if stream is not None:
        if not isinstance(stream, dict) or set(stream) != {"call"} or stream["call"] not in STREAMS:
            reader.fail("/stream", f"`stream` is {{call: FN}}, FN one of {', '.join(STREAMS)}")
        else:
            spec["stream"] = STREAMS[stream["call"]]
    _call_rules(reader, data, spec)
    if data.get("string_message") is not None:
        spec["string_message"] = data["string_message"]
    _message_kinds(reader, data, spec)
    _blocks(reader, data, spec)
    return spec, reader.problems


def lint(text: str, name: str) -> list[Problem]:
    """The problems of a wire table's YAML text (none: `read` accepts it), for ``mapc spec lint``."""
    try:
        data = _plain_data(name, text)
    except MapcError as exc:
        return list(exc.problems)
    return _read(data, name)[1]


def is_table(text: str) -> bool:
    """Whether a YAML text is a wire table (a mapping with a ``protocol`` name), not a format spec."""
    try:
        data = _plain_data("table", text)
    except MapcError:
        return False
    return isinstance(data, dict) and isinstance(data.get("protocol"), str) and "name" not in data


def _plain_data(name: str, text: str) -> Any:
    """A table's YAML text as plain data, read as every spec is (engine/plainyaml.py: plain tags only,
    bounded nesting and aliases, no repeated keys), since a table given to `spec lint` is untrusted."""
    from mapc.engine.spec import parse_yaml

    return parse_yaml(name, text)[0]
