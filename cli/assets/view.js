// mapc view: the page's whole code.  No framework, no network.  Trajectory text is untrusted: every
// element is made with createElement and filled with textContent (never innerHTML), and the
// Markdown renderer below knows only a few forms; links are kept for http(s) and mailto URLs only.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("mapc-data").textContent);

  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat()) if (kid !== null && kid !== undefined) node.append(kid);
    return node;
  }
  const svgNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const node = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    return node;
  }
  const str = (v) => (v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));
  const pretty = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));

  // --- Markdown (a safe subset) and code highlighting ----------------------------------------------
  const KEYWORDS = new Set(("def class return if elif else for while in import from as with try except finally raise " +
    "lambda yield pass break continue and or not is None True False const let var function async await new this " +
    "throw catch typeof instanceof fn pub struct impl use mod match enum trait mut self package func go type " +
    "interface select case switch default defer map chan range nil null true false echo then fi do done esac export").split(" "));
  const TOKEN = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|(\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)|([{}()[\]])/g;

  function highlight(code, lang) {
    const pre = el("pre", {}), box = el("code", { class: lang ? "lang-" + lang.replace(/[^\w+-]/g, "") : null });
    pre.append(box);
    if (!lang) {
      box.textContent = code; // plain text (a tool's output, an unlabelled fence): nothing to colour
      return pre;
    }
    const hashComments = /^(py|python|sh|bash|shell|zsh|yaml|yml|toml|rb|ruby|r|perl|make|dockerfile)$/i.test(lang);
    const re = new RegExp(TOKEN.source, "g");
    let at = 0, m;
    while ((m = re.exec(code)) !== null) {
      if (m.index > at) box.append(code.slice(at, m.index));
      let cls = null;
      if (m[1]) cls = m[1][0] === "#" && !hashComments ? null : "hl-c";
      else if (m[2]) cls = "hl-s";
      else if (m[3]) cls = "hl-n";
      else if (m[4]) cls = KEYWORDS.has(m[4]) ? "hl-k" : null;
      else if (m[5]) cls = "hl-p";
      box.append(cls ? el("span", { class: cls, text: m[0] }) : m[0]);
      at = m.index + m[0].length;
    }
    if (at < code.length) box.append(code.slice(at));
    return pre;
  }

  function safeHref(url) {
    try {
      const u = new URL(url);
      return ["http:", "https:", "mailto:"].includes(u.protocol) ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+)\*\*|__([^_\n]+)__|\*([^*\s][^*\n]*)\*|\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()"']+[^\s<>()"'.,;:!?])/g;

  function inline(text) {
    const out = [], re = new RegExp(INLINE.source, "g"); // its own: inline() recurses
    let at = 0, m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > at) out.push(text.slice(at, m.index));
      if (m[2] !== undefined) out.push(el("code", { text: m[2] }));
      else if (m[3] !== undefined) out.push(el("strong", {}, inline(m[3])));
      else if (m[4] !== undefined) out.push(el("strong", {}, inline(m[4])));
      else if (m[5] !== undefined) out.push(el("em", {}, inline(m[5])));
      else if (m[6] !== undefined) {
        const href = safeHref(m[7]);
        out.push(href ? el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank", text: m[6] }) : m[0]);
      } else if (m[8] !== undefined) {
        const href = safeHref(m[8]);
        out.push(href ? el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank", text: m[8] }) : m[8]);
      }
      at = m.index + m[0].length;
    }
    if (at < text.length) out.push(text.slice(at));
    return out;
  }

  // One pattern each for the test and the loop of a block, so a loop always takes its first line.
  const QUOTE = /^>\s?/, LIST = /^\s*([-*+]|\d+[.)])\s+([\s\S]*)$/;

  function markdown(text) {
    const root = el("div", { class: "md" });
    const lines = String(text).split(/\r?\n/);
    let para = [];
    const flush = () => {
      if (para.length) root.append(el("p", {}, inline(para.join("\n"))));
      para = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      let m;
      if ((m = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line))) {
        flush();
        const fence = m[1], body = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) body.push(lines[i]);
        root.append(highlight(body.join("\n"), m[2]));
      } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        flush();
        root.append(el("h" + Math.min(6, m[1].length + 2), {}, inline(m[2])));
      } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
        flush();
        root.append(el("hr"));
      } else if (QUOTE.test(line)) {
        flush();
        const quoted = [];
        for (; i < lines.length && QUOTE.test(lines[i]); i++) quoted.push(lines[i].replace(QUOTE, ""));
        i--;
        const q = markdown(quoted.join("\n"));
        root.append(el("blockquote", {}, [...q.childNodes]));
      } else if (LIST.test(line)) {
        flush();
        const ordered = /^\s*\d/.test(line), list = el(ordered ? "ol" : "ul");
        for (; i < lines.length && (m = LIST.exec(lines[i])); i++) list.append(el("li", {}, inline(m[2])));
        i--;
        root.append(list);
      } else if (!line.trim()) {
        flush();
      } else {
        para.push(line);
      }
    }
    flush();
    return root;
  }

  // --- messages: text, content parts, media ---------------------------------------------------------
  const IMAGE = /^data:image\/(png|jpeg|jpg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/;
  const AUDIO = /^data:audio\/[\w.+-]+;base64,[A-Za-z0-9+/=\s]+$/;

  function media(kind, url, label) {
    if (kind === "image" && IMAGE.test(url)) return el("div", { class: "media" }, el("img", { src: url, alt: label || "image" }));
    if (kind === "audio" && AUDIO.test(url)) return el("div", { class: "media" }, el("audio", { controls: true, src: url }));
    // Not loaded: the page makes no network request.  The address is shown (a link when http(s)).
    const href = safeHref(url);
    return el("div", { class: "remote" }, kind + " (not loaded): ",
      href ? el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank", text: url }) : url.slice(0, 200));
  }

  function part(p) {
    if (typeof p === "string") return markdown(p);
    if (!p || typeof p !== "object") return highlight(pretty(p), "json");
    if (typeof p.text === "string") return markdown(p.text);
    const t = String(p.type || "");
    if (p.image_url !== undefined) return media("image", str(p.image_url.url || p.image_url), p.detail);
    if (t === "image" && p.source && p.source.type === "base64")
      return media("image", "data:" + p.source.media_type + ";base64," + p.source.data);
    if (p.input_audio) return media("audio", "data:audio/" + (p.input_audio.format || "wav") + ";base64," + p.input_audio.data);
    if (t.includes("audio") && typeof p.data === "string") return media("audio", "data:audio/" + (p.format || "wav") + ";base64," + p.data);
    return highlight(pretty(p), "json");
  }

  function message(msg) {
    if (msg === null || msg === undefined || msg === "") return el("div", { class: "dim", text: "(no message)" });
    if (typeof msg === "string") return markdown(msg);
    if (Array.isArray(msg)) return el("div", {}, msg.map(part));
    return part(msg);
  }

  // --- one trajectory ------------------------------------------------------------------------------------
  function observationFor(turn, call) {
    const results = turn.observation && Array.isArray(turn.observation.results) ? turn.observation.results : [];
    return results.find((r) => r && typeof r === "object" && Object.values(r).includes(call.tcid));
  }

  function statusOf(turn, call) {
    const r = call.response;
    if (r && r.status != null) return String(r.status);
    if (r && r.exit_code != null) return "exit " + r.exit_code;
    const o = observationFor(turn, call);
    if (o) return typeof o.status === "string" ? o.status : o.is_error === true ? "error" : "ok";
    return "result" in call ? "ok" : null;
  }

  function toolCall(turn, call) {
    const status = statusOf(turn, call);
    const good = ["ok", "success", "completed", "exit 0"].includes(status);
    const args = str(call.args);
    const summary = el("summary", {}, el("span", { class: "fn", text: call.fn }),
      el("span", { class: "dim", text: "(" + (args.length > 80 ? args.slice(0, 79) + "…" : args) + ")" }),
      status ? el("span", { class: "status" + (good ? "" : " bad"), text: status }) : null);
    const inner = el("div", { class: "inner" }, el("h3", { text: "arguments" }), highlight(pretty(call.args), "json"));
    const obs = observationFor(turn, call);
    if ("result" in call) inner.append(el("h3", { text: "result" }), resultBody(call.result));
    if (obs) inner.append(el("h3", { text: "observation" }), resultBody(obs.content !== undefined ? obs.content : obs));
    const rest = {};
    for (const k of ["tcid", "kind", "duration_ms", "response", "extra"]) if (call[k] != null) rest[k] = call[k];
    inner.append(el("div", { class: "dim", text: Object.entries(rest).map(([k, v]) => k + ": " + str(v)).join("  ·  ") }));
    return el("details", { class: "tool-call", "data-tcid": call.tcid }, summary, inner);
  }

  function resultBody(v) {
    if (typeof v === "string") return highlight(v, "");
    if (Array.isArray(v) && v.every((p) => p && typeof p === "object" && typeof p.text === "string")) return message(v);
    return highlight(pretty(v), "json");
  }

  function turnTokens(turn) {
    const m = turn.metrics && typeof turn.metrics === "object" ? turn.metrics : {};
    const pick = (keys) => keys.map((k) => m[k]).find((v) => Number.isInteger(v));
    const p = pick(["prompt_tokens", "prompt_tokens_len", "input_tokens"]);
    const c = pick(["completion_tokens", "completion_tokens_len", "output_tokens"]);
    const t = pick(["total_tokens"]);
    return t !== undefined ? t : p !== undefined || c !== undefined ? (p || 0) + (c || 0) : null;
  }

  function turnView(turn, index, unknown) {
    const src = String(turn.src);
    const tokens = turnTokens(turn);
    const head = el("div", { class: "head" }, el("span", { class: "src", text: src }), el("span", { text: "#" + turn.id }),
      turn.kind ? el("span", { text: turn.kind }) : null, turn.ts != null ? el("span", { text: str(turn.ts) }) : null,
      turn.model ? el("span", { text: turn.model }) : null,
      turn.latency_ms != null ? el("span", { text: turn.latency_ms + " ms" }) : null,
      tokens != null ? el("span", { text: tokens + " tokens" }) : null, turn.copied ? el("span", { text: "copied context" }) : null);
    const body = el("div", { class: "body" });
    if (turn.reason) body.append(el("details", { class: "reasoning" }, el("summary", { text: "reasoning" }), el("div", { class: "inner" }, markdown(turn.reason))));
    body.append(el("div", { class: "msg" }, message(turn.msg)));
    const calls = Array.isArray(turn.tool_calls) ? turn.tool_calls : [];
    for (const call of calls) body.append(toolCall(turn, call));
    if (turn.observation != null) {
      const results = Array.isArray(turn.observation.results) ? turn.observation.results : null;
      const unmatched = results ? results.filter((r) => !calls.some((c) => r && typeof r === "object" && Object.values(r).includes(c.tcid))) : [turn.observation];
      if (unmatched.length) body.append(el("details", { class: "observation" }, el("summary", { text: "observation" }), el("div", { class: "inner" }, highlight(pretty(results ? unmatched : turn.observation), "json"))));
    }
    const other = {};
    for (const k of ["prompt", "env", "metrics", "extra", "effort", "nllm", "ttft_ms", "finished_at"]) if (turn[k] != null) other[k] = turn[k];
    if (Object.keys(other).length) body.append(el("details", { class: "fields" }, el("summary", { text: "fields" }), el("div", { class: "inner" }, highlight(pretty(other), "json"))));
    if (unknown && unknown.length) body.append(unknownView(unknown, "unknown fields of this turn"));
    return el("section", { class: "turn src-" + src.replace(/[^\w-]/g, ""), id: "turn-" + index, "data-turn-id": turn.id }, head, body);
  }

  function unknownView(rows, label) {
    const inner = el("div", { class: "inner" });
    for (const [source, ptr, value] of rows) inner.append(el("div", {}, el("span", { class: "dim", text: source + " " }), el("span", { class: "ptr", text: ptr })), highlight(pretty(value), "json"));
    return el("details", { class: "unknown", open: true }, el("summary", { text: label + " (" + rows.length + ")" }), inner);
  }

  function headerGrid(h) {
    const res = h.result && Object.keys(h.result).length ? Object.entries(h.result).map(([k, v]) => k + "=" + str(v)).join(", ") : "-";
    const tok = h.tokens && h.tokens.total != null ? h.tokens.total + (h.tokens.prompt != null ? " (" + h.tokens.prompt + " prompt, " + (h.tokens.completion || 0) + " completion)" : "") : "-";
    const dur = h.duration_s == null ? "-" : h.duration_s < 60 ? h.duration_s.toFixed(1) + " s" : Math.floor(h.duration_s / 60) + " min " + Math.round(h.duration_s % 60) + " s";
    const cells = [["session", h.session], ["agent", h.agent], ["model", h.model], ["format", h.format], ["turns", h.turns],
      ["tool calls", h.tool_calls], ["tokens", tok], ["duration", dur], ["result", res]];
    if (h.parent) cells.push(["parent", h.parent.session + (h.parent.turn != null ? " turn " + h.parent.turn : "")]);
    return el("div", { class: "header-grid", id: "story-header" }, cells.map(([k, v]) => el("div", {}, el("span", { text: k }), el("b", { text: v == null || v === "" ? "-" : String(v) }))));
  }

  function timeline(turns) {
    const lat = turns.map((t) => (Number.isFinite(t.latency_ms) ? t.latency_ms : 0));
    const tok = turns.map(turnTokens).map((v) => v || 0);
    const box = el("div", { id: "timeline" });
    const maxL = Math.max(0, ...lat), maxT = Math.max(0, ...tok);
    if (!maxL && !maxT) {
      box.append(el("div", { class: "dim", text: "timeline: no latency or token counts in this trajectory" }));
      return box;
    }
    box.append(el("div", { class: "legend dim" }, "timeline per turn:", el("i", { class: "l" }), "latency" + (maxL ? " (max " + maxL + " ms)" : " (none)"), el("i", { class: "t" }), "tokens" + (maxT ? " (max " + maxT + ")" : " (none)")));
    const n = turns.length, w = 1000, h = 90, bw = w / Math.max(n, 1);
    const chart = svg("svg", { viewBox: "0 0 " + w + " " + h, preserveAspectRatio: "none", role: "img", "aria-label": "latency and tokens per turn" });
    turns.forEach((t, i) => {
      const add = (value, max, y0, cls, what) => {
        if (!max || !value) return;
        const bh = Math.max(1, (value / max) * 40);
        const r = svg("rect", { x: i * bw + bw * 0.1, width: bw * 0.8, y: y0 + 40 - bh, height: bh, class: cls });
        const title = svg("title", {});
        title.textContent = "turn #" + t.id + ": " + value + " " + what;
        r.append(title);
        r.addEventListener("click", () => goTurn(i));
        chart.append(r);
      };
      add(lat[i], maxL, 2, "lat", "ms");
      add(tok[i], maxT, 47, "tok", "tokens");
    });
    box.append(chart);
    return box;
  }

  function goTurn(i) {
    const node = document.getElementById("turn-" + i);
    if (!node) return;
    node.scrollIntoView({ block: "center" });
    node.classList.add("flash");
    setTimeout(() => node.classList.remove("flash"), 1200);
  }

  let current = { entry: null, story: 0 };

  function showEntry(entry, storyIndex) {
    current = { entry, story: storyIndex || 0 };
    const main = document.getElementById("main");
    main.replaceChildren();
    document.querySelectorAll(".entry").forEach((n) => n.classList.toggle("active", n.dataset.id === entry.id));
    if (DATA.index_href) main.append(el("p", {}, el("a", { href: DATA.index_href, id: "back", text: "← all trajectories" })));
    main.append(el("h2", { text: entry.path }));
    if (entry.error) {
      main.append(el("div", { class: "error", text: entry.error }));
      return;
    }
    const stories = entry.stories || [];
    const tree = document.getElementById("tree");
    if (tree) {
      tree.replaceChildren(el("h3", { text: "storylines" }), el("ul", { class: "plain" }, stories.map((s, i) =>
        el("li", { class: "tree-item" + (i === current.story ? " active" : ""), "data-story": i, "data-session": s.summary.session, onclick: () => showEntry(entry, i) },
          el("span", { class: "name", text: "\u00a0\u00a0".repeat(s.depth) + (s.depth ? "↳ " : "") + s.summary.session }),
          el("span", { class: "meta", text: s.summary.turns + " turns" })))));
    }
    const s = stories[current.story];
    if (!s) return;
    main.append(headerGrid(s.summary));
    const kids = stories.map((k, i) => [k, i]).filter(([k]) => k.summary.parent && k.summary.parent.session === s.summary.session);
    if (s.depth || kids.length) {
      const nav = el("div", { class: "subagents" });
      const parent = stories.findIndex((k) => s.summary.parent && k.summary.session === s.summary.parent.session);
      if (parent >= 0) nav.append(el("button", { class: "to-parent", text: "↑ parent " + stories[parent].summary.session, onclick: () => showEntry(entry, parent) }), " ");
      for (const [k, i] of kids) nav.append(el("button", { class: "to-child", "data-story": i, text: "↳ subagent " + k.summary.session + (k.summary.parent.turn != null ? " (turn " + k.summary.parent.turn + ")" : ""), onclick: () => showEntry(entry, i) }), " ");
      main.append(nav);
    }
    const turns = s.story.turns || [];
    main.append(timeline(turns));
    if (s.unknown.doc.length) main.append(unknownView(s.unknown.doc, "unknown fields of the document"));
    const meta = {};
    for (const k of ["task", "prompt", "final_metrics", "notes", "extra", "meta", "agent", "origin"]) if (s.story[k] != null) meta[k] = s.story[k];
    main.append(el("details", { class: "document" }, el("summary", { text: "document fields" }), el("div", { class: "inner" }, highlight(pretty(meta), "json"))));
    const list = el("div", { id: "turns" });
    turns.forEach((t, i) => {
      const view = turnView(t, i, s.unknown.turns[String(i)]);
      for (const [k, j] of kids) // a subagent opens from the turn that spawned it, too
        if (k.summary.parent.turn === t.id)
          view.querySelector(".body").append(el("button", { class: "spawned", "data-story": j, text: "↳ open subagent " + k.summary.session, onclick: () => showEntry(entry, j) }));
      list.append(view);
    });
    main.append(list);
  }

  // --- the list, filters and compare --------------------------------------------------------------------
  function sideList() {
    const side = document.getElementById("side");
    const entries = DATA.entries;
    const options = (key) => [...new Set(entries.map((e) => (e.summary ? String(e.summary[key] ?? "-") : "-")))].sort();
    const filters = { agent: "", model: "", result_label: "" };
    const select = (key, label, id) => el("label", {}, label, el("select", { id, onchange: (ev) => { filters[key] = ev.target.value; apply(); } },
      el("option", { value: "", text: "all" }), options(key).map((v) => el("option", { value: v, text: v }))));
    const picked = [];
    const compareButton = el("button", { id: "compare", disabled: true, text: "compare 2", onclick: () => compare(picked) });
    const list = el("ul", { class: "plain", id: "entries" });
    for (const e of entries) {
      const s = e.summary || {};
      const box = el("input", { type: "checkbox", class: "cmp", title: "compare", onclick: (ev) => {
        ev.stopPropagation();
        const at = picked.indexOf(e);
        if (ev.target.checked && at < 0) picked.push(e);
        if (!ev.target.checked && at >= 0) picked.splice(at, 1);
        while (picked.length > 2) {
          const old = picked.shift();
          list.querySelector('[data-id="' + old.id + '"] input').checked = false;
        }
        compareButton.disabled = picked.length !== 2;
      } });
      list.append(el("li", { class: "entry" + (e.error ? " failed" : ""), "data-id": e.id, "data-agent": s.agent ?? "-", "data-model": s.model ?? "-", "data-result": s.result_label ?? "-",
        onclick: () => (e.href ? (window.location.href = e.href) : showEntry(e, 0)) },
        box, el("span", { class: "name", title: e.path, text: e.name }),
        el("span", { class: "meta", text: e.error ? "error" : (s.turns ?? 0) + " turns" + (s.result_label && s.result_label !== "unknown" ? " · " + s.result_label : "") })));
    }
    const count = el("div", { class: "dim", id: "count" });
    function apply() {
      let shown = 0;
      for (const node of list.children) {
        const ok = (!filters.agent || node.dataset.agent === filters.agent) && (!filters.model || node.dataset.model === filters.model) &&
          (!filters.result_label || node.dataset.result === filters.result_label);
        node.hidden = !ok;
        shown += ok;
      }
      count.textContent = shown + " of " + entries.length + " trajectories";
    }
    side.append(el("h3", { text: "trajectories" }), el("div", { class: "filters" }, select("agent", "agent", "f-agent"), select("model", "model", "f-model"),
      select("result_label", "result", "f-result")), count, compareButton, list, el("div", { id: "tree" }));
    apply();
  }

  function compare(pair) {
    const main = document.getElementById("main");
    main.replaceChildren(el("h2", { text: "compare" }));
    const grid = el("div", { id: "compare-view" });
    const rows = Math.max(...pair.map((e) => (e.summary ? e.summary.lines.length : 0)));
    for (const e of pair) {
      const col = el("div", { class: "cmp-col", "data-id": e.id }, el("h2", { title: e.path, text: e.name }));
      if (!e.summary) {
        col.append(el("div", { class: "error", text: e.error || "no trajectory" }));
      } else {
        col.append(headerGrid({ ...e.summary, parent: null }));
        for (let i = 0; i < rows; i++) {
          const line = e.summary.lines[i];
          if (!line) { col.append(el("div", { class: "line empty", text: "—" })); continue; }
          const calls = line.tool_calls.map((c) => c.fn + (c.status ? " [" + c.status + "]" : "")).join(", ");
          col.append(el("div", { class: "line" }, el("span", { class: "src", text: line.src }), el("span", { class: "dim", text: "#" + line.id + " " }),
            line.text || "", calls ? el("div", { class: "dim", text: "→ " + calls }) : null));
        }
      }
      grid.append(col);
    }
    main.append(grid);
  }

  // --- start -----------------------------------------------------------------------------------------------
  document.getElementById("title").textContent = DATA.title || "";
  document.getElementById("redacted").hidden = !DATA.redacted;
  const entries = DATA.entries || [];
  if (entries.length > 1 || DATA.mode === "index") sideList();
  else document.getElementById("side").append(el("div", { id: "tree" }));
  if (DATA.mode === "index") {
    document.getElementById("main").replaceChildren(el("p", { class: "dim", text: "Pick a trajectory on the left, or tick two and compare them." }));
  } else if (entries.length) {
    showEntry(entries.find((e) => !e.error) || entries[0], 0);
  }
  document.body.dataset.ready = "1";
})();
