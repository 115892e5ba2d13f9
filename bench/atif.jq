# ATIF v1.7 → Storyline in jq: the field renames of REFERENCE.md §1.4, for the benchmark only.
#
#   jq -c -f bench/atif.jq trajectory.json > storyline.json
#
# Does: session rule, agent and turn renames, effective kind, the latency_ms fallback chain and ttft_ms,
# integer extra.duration_ms promotion, observation.results, subagents as separate Storylines with
# children/parent, unknown keys (escaped pointers) and their wildcarded counts.
# Leaves out: the BLAKE3 source_document_id (the constant "jq" stands in), validation, array/JSONL
# containers, the reverse direction. jq numbers are doubles, so integers beyond 2^53 lose precision and an
# integral float such as 5.0 counts as an int (promoted as duration_ms); unknown fields come out with
# sorted keys.

def esc: gsub("~"; "~0") | gsub("/"; "~1");
def nonempty: select(type == "string" and . != "");
# Whole milliseconds: numbers truncate toward zero, any other type gives none.
def whole_ms: if type == "number" then (if . < 0 then ceil else floor end) else null end;
def latency:
  if has("latency_ms") then .latency_ms | whole_ms
  elif has("elapsed_ms") then .elapsed_ms | whole_ms
  elif has("duration_ms") then .duration_ms | whole_ms
  else null end;
# The kind to write: only where it differs from what a reader derives from src alone.
def kind($calls):
  if . == "user" or . == "system" then null
  elif . == "agent" then (if ($calls | type) == "array" and ($calls | length) > 0 then "autonomous" else null end)
  else "dialogue" end;
# Optional keys: null means absent (msg is required and keeps its null).
def prune: with_entries(select(.value != null or .key == "msg"));

# [raw pointer, normalized pointer, value] for each key of . outside $known (an object used as a set).
def residual($known; $ptr; $norm):
  to_entries | map(select($known[.key] | not) | (.key | esc) as $k | [$ptr + "/" + $k, $norm + "/" + $k, .value]);

def root_keys: {schema_version: 1, session_id: 1, trajectory_id: 1, agent: 1, steps: 1, notes: 1,
  final_metrics: 1, continued_trajectory_ref: 1, extra: 1, subagent_trajectories: 1};
def agent_keys: {name: 1, version: 1, model_name: 1, tool_definitions: 1, extra: 1};
def step_keys: {step_id: 1, timestamp: 1, source: 1, message: 1, model_name: 1, reasoning_effort: 1,
  reasoning_content: 1, tool_calls: 1, observation: 1, metrics: 1, extra: 1, llm_call_count: 1,
  is_copied_context: 1};
def call_keys: {tool_call_id: 1, function_name: 1, arguments: 1, result: 1, extra: 1};

def call:
  {tcid: .tool_call_id, fn: .function_name, args: .arguments, result,
   duration_ms: (if (.extra | type) == "object" and (.extra.duration_ms | type) == "number"
                    and (.extra.duration_ms | floor) == .extra.duration_ms
                 then .extra.duration_ms else null end),
   extra}
  | with_entries(select(.value != null or .key == "args"));

def turn:
  (.metrics | if type == "object" then . else null end) as $m
  | .tool_calls as $calls
  | {id: .step_id, kind: (.source | kind($calls)), ts: .timestamp, src: .source, msg: .message,
     reason: .reasoning_content, effort: .reasoning_effort,
     tool_calls: (if .tool_calls == null then null else [.tool_calls[] | call] end),
     observation: (if .observation == null then null else {results: .observation.results} end),
     metrics, model: .model_name, nllm: .llm_call_count, copied: .is_copied_context,
     latency_ms: (if $m then $m | latency else null end),
     ttft_ms: (if $m and ($m | has("ttft_ms")) then $m.ttft_ms | whole_ms else null end),
     extra}
  | prune;

def step_residuals($ptr; $norm):
  residual(step_keys; $ptr; $norm)
  + (if (.observation | type) == "object"
     then .observation | residual({results: 1}; $ptr + "/observation"; $norm + "/observation") else [] end)
  + ([(.tool_calls // []) | range(0; length) as $c | .[$c]
      | residual(call_keys; "\($ptr)/tool_calls/\($c)"; $norm + "/tool_calls/*")] | add // []);

# One trajectory node → its Storyline, then its subagents' Storylines (depth-first).
def node($ptr; $norm; $parent_session; $psid):
  . as $t
  | (first(($t.session_id | nonempty), ($t.trajectory_id | nonempty), $parent_session)) as $session
  | (residual(root_keys; $ptr; $norm)
     + ($t.agent | residual(agent_keys; $ptr + "/agent"; $norm + "/agent"))
     + ([$t.steps | range(0; length) as $s | .[$s] | step_residuals("\($ptr)/steps/\($s)"; $norm + "/steps/*")]
        | add // [])) as $res
  | ({schema_version: "storyline/v1",
      origin: {format: "atif", schema_version: $t.schema_version},
      trajectory: ([$t.trajectory_id | nonempty] | first),
      session: $session,
      agent: ({id: $t.agent.name, name: $t.agent.name, ver: $t.agent.version, model: $t.agent.model_name,
               tools: $t.agent.tool_definitions, extra: $t.agent.extra} | prune),
      parent: (if $psid then {psid: $psid} else null end),
      children: (if ($t.subagent_trajectories // []) | length > 0
                 then [$t.subagent_trajectories[].trajectory_id] else null end),
      notes: $t.notes, final_metrics: $t.final_metrics,
      continued_trajectory_ref: $t.continued_trajectory_ref, extra: $t.extra,
      unknown_fields: (if ($res | length) > 0
                       then {sources: {atif: {source_document_id: "jq",
                                              fields: ($res | map({key: .[0], value: .[2]}) | from_entries)}}}
                       else null end),
      unknown_key_counts: (if ($res | length) > 0
                           then {atif: ($res | group_by(.[1]) | map({key: .[0][1], value: length}) | from_entries)}
                           else null end),
      turns: [$t.steps[] | turn]} | prune),
    ($t.subagent_trajectories // [] | range(0; length) as $c | .[$c]
     | node("\($ptr)/subagent_trajectories/\($c)"; $norm + "/subagent_trajectories/*"; $session;
            ($t.trajectory_id // $session)));

[node(""; ""; null; null)] | if length == 1 then .[0] else . end
