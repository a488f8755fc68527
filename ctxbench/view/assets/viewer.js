// ctxbench viewer: loads one call at a time from data/*.js, or data/*.json when served
// (see ctxbench/view/write.py and serve.py).
// Every text from a trace is set with textContent, never parsed as HTML.
"use strict";
(function () {
  const cache = new Map();
  const pending = new Map();
  const CACHE_LIMIT = 120;
  const SHOWN_TAIL = 300; // a prompt longer than this shows its head and its last messages
  const SHOWN_HEAD = 3;
  // opened from file:// the page may add scripts but may not fetch its folder: data/KEY.js call
  // ctxbenchLoad; served over http the server answers data/KEY.json only
  const SERVED = location.protocol === "http:" || location.protocol === "https:";

  window.ctxbenchLoad = function (key, data) {
    cache.set(key, data);
    if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value);
    const waiting = pending.get(key);
    if (waiting) {
      pending.delete(key);
      waiting.resolve(data);
    }
  };

  function load(key) {
    if (cache.has(key)) return Promise.resolve(cache.get(key));
    if (pending.has(key)) return pending.get(key).promise;
    let resolve, reject;
    const promise = new Promise((a, b) => { resolve = a; reject = b; });
    pending.set(key, { promise, resolve, reject });
    if (SERVED) {
      // served (ctxbench view --serve): the data are JSON, never script
      fetch("data/" + key + ".json", { credentials: "omit" })
        .then((r) => { if (!r.ok) throw new Error("cannot load data/" + key + ".json"); return r.json(); })
        .then((data) => window.ctxbenchLoad(key, data))
        .catch((err) => { pending.delete(key); reject(err); });
      return promise;
    }
    const script = document.createElement("script");
    script.src = "data/" + key + ".js";
    script.onerror = () => { pending.delete(key); reject(new Error("cannot load data/" + key + ".js")); };
    script.onload = () => script.remove();
    document.head.appendChild(script);
    return promise;
  }

  const $ = (id) => document.getElementById(id);
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
  // why a call failed, by the kind its call.failed event records (only an overflow is a count over the limit)
  const failure = (e) => {
    const kind = e.kind || "overflow";
    const tokens = fmt(e.true_tokens) + " true / " + fmt(e.limit) + " limit";
    if (kind === "overflow") return fmt(e.true_tokens) + " > " + fmt(e.limit);
    if (kind === "pairing") return "refused for its tool pairing (" + tokens + ")";
    if (kind === "aborted") return "aborted by the framework (" + tokens + ")" + (e.error ? ": " + e.error : "");
    return kind + " (" + tokens + ")";
  };

  const state = { index: null, run: null, compare: null, call: 0, divergence: null };

  // ---- data ------------------------------------------------------------------------------
  async function loadRun(id) {
    const run = await load(id + "/run");
    const entry = state.index.runs.find((r) => r.id === id);
    run.label = entry ? entry.label : id;
    return run;
  }

  async function callData(run, k) {
    // the last chunk starting at or before call k (chunks end early past a size)
    const starts = run.call_chunks;
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= k) lo = mid; else hi = mid - 1;
    }
    const chunk = await load(run.id + "/calls-" + lo);
    return chunk[k - starts[lo]];
  }

  function idsOf(ranges) {
    const ids = [];
    for (const [a, b] of ranges) for (let i = a; i <= b; i++) ids.push(i);
    return ids;
  }

  async function messages(run, ids) {
    const per = state.index.messages_per_chunk;
    const chunks = [...new Set(ids.map((i) => Math.floor(i / per)))];
    const loaded = await Promise.all(chunks.map((c) => load(run.id + "/msgs-" + c)));
    const byChunk = new Map(chunks.map((c, i) => [c, loaded[i]]));
    const found = ids.map((i) => byChunk.get(Math.floor(i / per))[i % per]);
    // a long message is in a file of its own (its chunk holds a stub)
    return Promise.all(found.map((m, j) => (m.apart ? load(run.id + "/msg-" + ids[j]) : m)));
  }

  // ---- navigation ----------------------------------------------------------------------------
  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    return { run: params.get("run"), call: Number(params.get("call") || 0), compare: params.get("compare") };
  }

  function writeHash() {
    const params = new URLSearchParams();
    if (state.run) params.set("run", state.run.id);
    params.set("call", String(state.call));
    if (state.compare) params.set("compare", state.compare.id);
    const next = "#" + params.toString();
    if (location.hash !== next) history.replaceState(null, "", next);
  }

  async function go(call) {
    if (!state.run) return;
    delete document.body.dataset.ready; // set again once this call is shown
    const n = state.run.calls;
    state.call = Math.max(0, Math.min(n - 1, Math.trunc(call) || 0));
    writeHash();
    await render();
  }

  function nextCompaction(direction) {
    const layers = state.run.layers;
    for (let k = state.call + direction; k >= 0 && k < layers.length; k += direction) {
      if (layers[k].length) return go(k);
    }
    return null;
  }

  function firstDivergence(a, b) {
    const n = Math.min(a.digest.length, b.digest.length);
    for (let k = 0; k < n; k++) if (a.digest[k] !== b.digest[k]) return k;
    return a.digest.length === b.digest.length ? null : n;
  }

  // ---- overview ------------------------------------------------------------------------------
  function drawOverview() {
    const canvas = $("overview");
    const run = state.run;
    const width = canvas.parentElement.clientWidth;
    canvas.width = width;
    const height = canvas.height;
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, width, height);
    if (!run || !run.calls) return;
    const limit = run.window - run.reserved;
    const top = Math.max(limit, ...sample(run.true)) * 1.05;
    const perPx = run.calls / width;
    for (let x = 0; x < width; x++) {
      const a = Math.floor(x * perPx);
      const b = Math.max(a + 1, Math.floor((x + 1) * perPx));
      let peak = 0, verdict = 0, compaction = false;
      for (let k = a; k < b && k < run.calls; k++) {
        peak = Math.max(peak, run.true[k]);
        verdict = Math.max(verdict, run.verdict[k]);
        compaction = compaction || run.layers[k].length > 0;
      }
      if (a >= run.calls) break;
      const h = Math.round((peak / top) * (height - 10));
      g.fillStyle = verdict === 3 ? "#bbb" : verdict === 2 ? "#c0392b" : verdict === 1 ? "#e67e22" : "#7f8c9d";
      g.fillRect(x, height - h, 1, h);
      if (compaction) {
        g.fillStyle = "#2471a3";
        g.fillRect(x, 0, 1, 6);
      }
    }
    const y = height - Math.round((limit / top) * (height - 10));
    g.fillStyle = "#c0392b";
    g.fillRect(0, y, width, 1);
    const cursor = Math.floor((state.call + 0.5) / perPx);
    g.fillStyle = "#111";
    g.fillRect(Math.min(width - 2, cursor), 0, 2, height);
    if (state.divergence !== null) {
      const d = Math.floor((state.divergence + 0.5) / perPx);
      g.fillStyle = "#8e44ad";
      g.fillRect(Math.min(width - 3, d), 0, 3, height);
    }
  }

  function sample(values) {
    // Math.max(...) of 10,000 values is fine; of millions it is not: take the maximum by loop
    let m = 0;
    for (const v of values) if (v > m) m = v;
    return [m];
  }

  // ---- one pane --------------------------------------------------------------------------------
  function meter(run, k, data) {
    const limit = run.window - run.reserved;
    const t = run.true[k], e = run.est[k], budget = run.budget[k];
    const scale = Math.max(run.window, t, e) || 1;
    const pct = (v) => ((100 * v) / scale).toFixed(2) + "%";
    const bar = el("div", { class: "meter", "aria-label": "tokens against the window" },
      el("div", { class: "bar true", style: null, title: "true tokens " + fmt(t) }),
      el("div", { class: "bar est", title: "estimated tokens " + fmt(e) }),
      el("div", { class: "mark limit", title: "limit (window − reserved) " + fmt(limit) }),
    );
    bar.children[0].style.width = pct(t);
    bar.children[1].style.width = pct(e);
    bar.children[2].style.left = pct(limit);
    if (budget) {
      for (const [name, fraction] of Object.entries(run.thresholds)) {
        const m = el("div", { class: "mark threshold", title: name + " = " + fraction + " of the budget" });
        m.style.left = pct(fraction * budget);
        bar.append(m);
      }
    }
    const status = data.events.find((x) => x.type === "context.status");
    const words = el("p", { class: "counts" },
      el("span", { class: "true-count", text: "true " + fmt(t) }), " / limit " + fmt(limit) +
      " (window " + fmt(run.window) + " − reserved " + fmt(run.reserved) + ") · ",
      el("span", { class: "est-count", text: "estimate " + fmt(e) + " (" + (run.estimator || "?") + ")" }),
      status ? " · budget " + fmt(status.budget) + ", ratio " + status.ratio + ", state " + status.state : "",
    );
    return [bar, words];
  }

  function happened(run, k, data, previousIds, ids, msgs) {
    const box = el("div", { class: "happened" });
    for (const e of data.events) {
      if (e.type === "compaction") {
        const dropped = (e.dropped_messages || []).map(([a, b]) => (a === b ? "#" + a : "#" + a + "–" + b)).join(", ");
        box.append(el("div", { class: "event compaction" },
          el("b", { text: "compaction " + e.layer }),
          " " + e.messages_before + " → " + e.messages_after + " messages (dropped " + e.dropped +
          ", rewritten " + e.changed + ", added " + (e.added || 0) + "); estimate " + fmt(e.est_before) +
          " → " + fmt(e.est_after) + ", true " + fmt(e.true_before) + " → " + fmt(e.true_after),
          dropped ? el("div", { class: "dropped", text: "trace messages dropped: " + dropped }) : null,
          e.note ? el("div", { class: "note", text: e.note }) : null,
          e.pairing_violations ? el("div", { class: "bad", text: e.pairing_violations + " tool pair(s) split" }) : null,
        ));
      } else if (e.type === "provider.call") {
        box.append(el("div", { class: "event provider " + (e.ok ? "ok" : "rejected") },
          el("b", { text: "provider attempt " + e.attempt + ": " + (e.ok ? "accepted" : "rejected (" + (e.error_kind || "overflow") + ")") }),
          " " + fmt(e.true_tokens) + " true tokens, limit " + fmt(e.limit) +
          (e.ok && e.cached_tokens ? ", " + fmt(e.cached_tokens) + " cached" : ""),
          e.error ? el("div", { class: "error-text", text: e.error }) : null,
        ));
      } else if (e.type === "call.failed") {
        box.append(el("div", { class: "event failed" },
          el("b", { text: "call failed" }), " after " + e.attempts + " attempt(s): " + failure(e)));
      } else if (e.type === "summary") {
        box.append(el("div", { class: "event summary" },
          el("b", { text: "summary (" + e.layer + ") " + (e.ok ? "ok" : "failed") }),
          " " + fmt(e.input_tokens) + " → " + fmt(e.output_tokens) + " tokens", e.error ? " — " + e.error : ""));
      } else if (e.type === "snapshot") {
        box.append(el("div", { class: "event snapshot" }, el("b", { text: "file " }),
          el("a", { href: "files/" + run.id + "/" + e.path, target: "_blank", rel: "noopener", text: e.path }),
          " (" + fmt(e.bytes) + " bytes)"));
      } else if (e.type === "open_loop.break") {
        box.append(el("div", { class: "event failed open-loop" },
          el("b", { text: "open-loop break" }),
          ": the recorded action writes " + e.value + " (learned at message " + e.source_message +
          "), which this prompt no longer shows: from here the recorded run could not have happened as recorded"));
      } else if (e.type === "next_action") {
        box.append(el("div", { class: "event next-action " + (e.agree ? "ok" : "rejected") },
          el("b", { text: "next step " + (e.agree ? "agrees" : "differs") + " (" + e.trigger + ")" }),
          el("div", { class: "answer-text", text: "after the uncompacted history: " + e.uncompacted_answer }),
          el("div", { class: "answer-text", text: "after the compacted prompt: " + e.compacted_answer })));
      } else if (e.type === "probe.answer") {
        box.append(el("div", { class: "event answer" },
          el("b", { text: "asked " + e.probe_id + ": " + e.verdict + " (in prompt: " + e.outcome + ")" }),
          el("div", { text: e.question }),
          el("div", { class: "answer-text", text: "answer: " + e.answer })));
      }
    }
    if (previousIds) {
      const now = new Set(ids);
      const gone = previousIds.filter((i) => !now.has(i));
      const before = new Set(previousIds);
      const fresh = msgs.filter((m, i) => !before.has(ids[i]) && m.kind !== "trace");
      if (gone.length || fresh.length) {
        box.append(el("div", { class: "event delta" },
          el("b", { text: "since call " + (k - 1) + ": " }),
          gone.length + " message(s) left the prompt, " + fresh.length + " new message(s) not from the trace"));
      }
    }
    return box;
  }

  function messageNode(run, m, id, otherContents) {
    const cls = ["msg", "role-" + m.role, "kind-" + m.kind];
    if (otherContents && !otherContents.has(m.content)) cls.push("only-here");
    const origin = m.kind === "trace" ? "trace #" + m.origin
      : m.kind === "rewritten" ? "rewritten from trace #" + m.origin : "added by the strategy";
    const head = el("div", { class: "msg-head" },
      el("span", { class: "role", text: m.role + (m.name ? " · " + m.name : "") }),
      el("span", { class: "origin", text: origin }),
      el("span", { class: "tokens", text: fmt(m.t) + " true · " + fmt(m.e) + " est" }),
    );
    const body = el("pre", { class: "content" });
    body.textContent = m.content;
    const node = el("li", { class: cls.join(" "), "data-id": id, "data-role": m.role, "data-kind": m.kind }, head, body);
    if (m.cut) node.append(el("div", { class: "note", text: "… " + fmt(m.cut) + " more characters (shown cut; the full text is in the trace)" }));
    if (m.tool_calls) {
      for (const c of m.tool_calls) {
        node.append(el("pre", { class: "tool-call", "data-call-id": c.id, text: c.name + "(" + c.arguments + ")" }));
      }
    }
    if (m.media) node.append(el("div", { class: "note", text: "media: " + m.media.join(", ") }));
    if (m.cites) {
      const links = el("div", { class: "cites" }, "cites: ");
      for (const path of m.cites) {
        links.append(el("a", { href: "files/" + run.id + "/" + path, target: "_blank", rel: "noopener", class: "file-link", text: path }), " ");
      }
      node.append(links);
    }
    return node;
  }

  async function pane(box, run, k, other) {
    const data = await callData(run, k);
    const ids = idsOf(data.ranges);
    let previousIds = null;
    if (k > 0) previousIds = idsOf((await callData(run, k - 1)).ranges);
    const head = ids.length > SHOWN_TAIL + SHOWN_HEAD ? ids.slice(0, SHOWN_HEAD) : ids;
    const tail = ids.length > SHOWN_TAIL + SHOWN_HEAD ? ids.slice(ids.length - SHOWN_TAIL) : [];
    const shownIds = head.concat(tail);
    const msgs = await messages(run, shownIds);
    let otherContents = null;
    if (other) {
      const od = await callData(other, Math.min(k, other.calls - 1));
      const oids = idsOf(od.ranges);
      otherContents = new Set((await messages(other, oids)).map((m) => m.content));
    }
    const list = el("ol", { class: "prompt", start: "1" });
    head.forEach((id, i) => list.append(messageNode(run, msgs[i], id, otherContents)));
    if (tail.length) {
      list.append(el("li", { class: "skipped", text: "… " + fmt(ids.length - head.length - tail.length) + " messages not shown (the prompt holds " + fmt(ids.length) + ")" }));
      tail.forEach((id, i) => list.append(messageNode(run, msgs[head.length + i], id, otherContents)));
    }
    const title = el("h2", { class: "pane-title" }, el("span", { text: run.label }), el("small", { text: " " + run.trace_id + " · " + (run.run_id || run.id) }));
    const knobs = el("details", { class: "knobs" }, el("summary", { text: "every knob" }),
      el("pre", { text: JSON.stringify(run.params, null, 1) + "\nestimator " + run.estimator + ", reserved " + run.reserved }));
    const verdict = ["accepted", "accepted after a rejection", "FAILED",
      "end of the trace: no call, the prompt a next call would see"][run.verdict[k]];
    box.replaceChildren(
      title,
      knobs,
      el("p", { class: "call-title" }, el("b", { text: "call " + k }), " of " + (run.calls - 1) + " · " + verdict +
        " · prompt of " + fmt(ids.length) + " messages"),
      ...meter(run, k, data),
      happened(run, k, data, previousIds, ids.slice(), ids.length === shownIds.length ? msgs : []),
      list,
    );
    box.classList.toggle("diverged", state.divergence !== null && state.divergence === k && !!other);
    box.dataset.call = String(k);
    box.dataset.messages = String(ids.length);
    return data;
  }

  function probeState(changes, k) {
    let now = "not_yet";
    for (const [call, s] of changes) { if (call <= k) now = s; else break; }
    return now;
  }

  function renderProbes() {
    const body = $("probes").tBodies[0];
    const run = state.run;
    body.replaceChildren();
    for (const p of run.probes) {
      const now = probeState(p.changes, state.call);
      const lost = p.lost_at === null ? el("span", { text: "–" })
        : el("button", { class: "lost-at", "data-call": p.lost_at, onclick: () => go(p.lost_at),
          text: "call " + p.lost_at + lostLayers(run, p.lost_at) });
      body.append(el("tr", { "data-probe": p.id, class: "state-" + now },
        el("td", { text: p.id }), el("td", { text: p.kind }), el("td", { text: p.question }),
        el("td", { text: p.answers.join(" | ") }), el("td", { class: "now", text: now.replace("_", " ") }),
        el("td", null, lost),
        el("td", { text: (p.outcome || "–") + (p.reason ? " (" + p.reason.replace("_", " ") + ")" : "") })));
    }
    $("probes-box").hidden = run.probes.length === 0;
  }

  function lostLayers(run, k) {
    const layers = run.layers[k] || [];
    return layers.length ? " (" + layers.join(", ") + ")" : "";
  }

  let rendering = 0;
  async function render() {
    const ticket = ++rendering;
    const run = state.run;
    $("call-input").value = String(state.call);
    $("call-input").max = String(run.calls - 1);
    $("call-count").textContent = "of " + fmt(run.calls - 1) + " calls (" + (run.calls - 1) + " is the end)";
    const compare = state.compare;
    $("pane-b").hidden = !compare;
    document.body.classList.toggle("comparing", !!compare);
    const work = [pane($("pane-a"), run, state.call, compare)];
    if (compare) {
      if (state.call < compare.calls) work.push(pane($("pane-b"), compare, state.call, run));
      else $("pane-b").replaceChildren(el("p", { class: "note", text: "run B has only " + compare.calls + " calls" }));
    }
    await Promise.all(work);
    if (ticket !== rendering) return;
    renderProbes();
    drawOverview();
    document.body.dataset.ready = run.id + ":" + state.call + ":" + (compare ? compare.id : "");
  }

  // ---- runs --------------------------------------------------------------------------------
  function fillSelects() {
    const filter = $("run-filter").value.toLowerCase();
    const select = $("run-select");
    select.replaceChildren();
    for (const r of state.index.runs) {
      const text = r.trace_id + " · " + r.label + " · " + r.calls + " calls" +
        (r.failed_calls ? " · " + r.failed_calls + " failed" : "") +
        (r.retention !== null && r.retention !== undefined ? " · retention " + Number(r.retention).toFixed(2) : "");
      if (filter && !text.toLowerCase().includes(filter) && !r.id.includes(filter)) continue;
      select.append(el("option", { value: r.id, text: text, selected: state.run && r.id === state.run.id }));
    }
    const compare = $("compare-select");
    compare.replaceChildren(el("option", { value: "", text: "(none)" }));
    if (!state.run) return;
    for (const r of state.index.runs) {
      if (r.id === state.run.id || r.trace_id !== state.run.trace_id) continue;
      compare.append(el("option", { value: r.id, text: r.label + " · " + (r.run_id || r.id), selected: state.compare && r.id === state.compare.id }));
    }
  }

  // With two results sources (--against), a run opens beside its counterpart in the other
  // one: the same run id, else the same configuration label, else a run of the same trace.
  function counterpart(entry) {
    if (!state.index.sources || state.index.sources.length < 2) return null;
    const others = state.index.runs.filter((r) => r.source !== entry.source && r.trace_id === entry.trace_id);
    const bare = (r) => r.label.slice(r.source.length + 2);
    const match = others.find((r) => r.run_id === entry.run_id) ||
      others.find((r) => bare(r) === bare(entry)) || others[0];
    return match ? match.id : null;
  }

  // compareId: a run's id, null for none, undefined for the counterpart (if any)
  async function selectRun(id, compareId, call) {
    delete document.body.dataset.ready; // set again once the run is shown
    const entry = state.index.runs.find((r) => r.id === id) || state.index.runs[0];
    if (compareId === undefined) compareId = counterpart(entry);
    state.run = await loadRun(entry.id);
    state.compare = compareId ? await loadRun(compareId).catch(() => null) : null;
    state.divergence = state.compare ? firstDivergence(state.run, state.compare) : null;
    const div = $("divergence");
    div.hidden = !state.compare;
    div.replaceChildren();
    if (state.compare) {
      if (state.divergence === null) div.append("the two runs do the same thing at every call");
      else div.append("first divergence at ", el("button", { id: "go-divergence", onclick: () => go(state.divergence), text: "call " + state.divergence }));
    }
    if (state.run.recorded_mismatch !== null && state.run.recorded_mismatch !== undefined) {
      div.hidden = false;
      div.append(el("span", { class: "bad", text: " the events file differs from this replay from call " + state.run.recorded_mismatch }));
    }
    fillSelects();
    await go(call);
  }

  async function start() {
    state.index = await load("index");
    document.title = state.index.title;
    $("title").textContent = state.index.title;
    if (!state.index.runs.length) {
      $("pane-a").textContent = "no runs";
      return;
    }
    const h = readHash();
    $("run-select").addEventListener("change", (e) => selectRun(e.target.value, undefined, 0));
    $("compare-select").addEventListener("change", (e) => selectRun(state.run.id, e.target.value || null, state.call));
    $("run-filter").addEventListener("input", fillSelects);
    $("call-input").addEventListener("change", (e) => go(Number(e.target.value)));
    $("first").addEventListener("click", () => go(0));
    $("prev").addEventListener("click", () => go(state.call - 1));
    $("next").addEventListener("click", () => go(state.call + 1));
    $("last").addEventListener("click", () => go(state.run.calls - 1));
    $("prev-compaction").addEventListener("click", () => nextCompaction(-1));
    $("next-compaction").addEventListener("click", () => nextCompaction(1));
    $("overview").addEventListener("click", (e) => {
      const rect = e.target.getBoundingClientRect();
      go(Math.floor(((e.clientX - rect.left) / rect.width) * state.run.calls));
    });
    document.addEventListener("keydown", (e) => {
      if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
      if (e.key === "ArrowRight" || e.key === "j") go(state.call + 1);
      else if (e.key === "ArrowLeft" || e.key === "k") go(state.call - 1);
      else if (e.key === "Home") go(0);
      else if (e.key === "End") go(state.run.calls - 1);
      else if (e.key === "n") nextCompaction(1);
      else if (e.key === "p") nextCompaction(-1);
    });
    window.addEventListener("resize", drawOverview);
    await selectRun(h.run, h.compare === null ? undefined : h.compare, h.call);
  }

  document.addEventListener("DOMContentLoaded", () => {
    start().catch((err) => {
      document.body.dataset.error = String(err);
      $("pane-a").textContent = "error: " + err.message;
    });
  });
})();
