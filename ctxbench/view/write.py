"""Write the viewer: a static directory that opens from ``file://`` or ``ctxbench view --serve``.

The page loads only what it shows. ``data/index.js`` lists the runs; ``data/RUN/run.js`` holds
one number per call (tokens, limit, verdict, a digest of the call's events) and the probes;
``data/RUN/calls-N.js`` holds up to :data:`CALLS_PER_CHUNK` calls (their prompts as runs of
message ids, and their events), fewer past :data:`CALL_CHUNK_CHARS` (the run's
``call_chunks`` lists each chunk's first call); ``data/RUN/msgs-N.js`` holds
:data:`MESSAGES_PER_CHUNK` messages, but a message whose shown text is over :data:`APART_TEXT`
characters is in ``data/RUN/msg-ID.js`` and its chunk holds ``{"apart": true}`` in its place.
Files are JavaScript that call ``ctxbenchLoad(key, data)``: a page opened from ``file://`` may
add scripts but may not ``fetch`` its own directory. Snapshot and offload files go under
``files/RUN/``, where the prompt's citations link to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.engine.events import Event
from ctxbench.results import write_files
from ctxbench.view.capture import Capture, probe_json

CALLS_PER_CHUNK = 50
#: A chunk of calls ends early past this many characters: a long run's prompt names thousands
#: of runs of message ids a call, and the page loads two chunks to show one call
CALL_CHUNK_CHARS = 256 * 1024
MESSAGES_PER_CHUNK = 200
#: Longer message texts are cut for display (the full text is in the trace).
MAX_TEXT = 50_000
#: A message whose shown text is longer is written to a file of its own: a prompt that grows at
#: every call (DB-GPT 0.8.2's system prompt gains a line of task progress at each step) makes a
#: new long message a call, so the chunks holding one call's last messages would hold those of
#: every call around it (27 MB loaded to show one call of a 10,000-round run, measured)
APART_TEXT = 4_096
ASSETS = ("index.html", "viewer.js", "viewer.css")


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _script(key: str, data: Any) -> str:
    return _script_of_json(key, _json(data))


def _script_of_json(key: str, payload: str) -> str:
    """The data file of ``payload``, JSON text already encoded."""
    # "</" and U+2028/9 cannot end or break the script: the text stays data
    payload = (
        payload.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )
    return f"ctxbenchLoad({json.dumps(key)},{payload});\n"


def _write(root: Path, key: str, data: Any) -> None:
    _write_json(root, key, _json(data))


def _write_json(root: Path, key: str, payload: str) -> None:
    target = root / "data" / f"{key}.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_script_of_json(key, payload), "utf-8")


def run_labels(entries: Sequence[dict[str, Any]]) -> None:
    """Name each run by what tells it apart: its strategy, the knobs that vary among the runs
    of that strategy, its window and counter (a resolved spec lists every knob)."""
    values: dict[tuple[str, str], set[str]] = {}
    for e in entries:
        for k, v in e["params"].items():
            values.setdefault((e["strategy"], k), set()).add(json.dumps(v))
    for e in entries:
        varying = [
            f"{k}={v}"
            for k, v in sorted(e["params"].items())
            if len(values[(e["strategy"], k)]) > 1
        ]
        knobs = f"({','.join(varying)})" if varying else ""
        e["label"] = f"{e['strategy']}{knobs} w={e['window']} {e['counter']}"


def _thresholds(params: Mapping[str, Any]) -> dict[str, float]:
    """Knobs that are fractions of the budget (``*_threshold``, ``*_ratio``), to draw as marks."""
    return {
        k: float(v)
        for k, v in sorted(params.items())
        if ("threshold" in k or k.endswith("ratio"))
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and 0 < v <= 1
    }


def _verdicts(capture: Capture) -> list[int]:
    """Per call: 0 accepted at once, 1 accepted after a rejection, 2 failed; 3 marks the end
    of the trace (the last record: no call is made there)."""
    out = [0] * (len(capture.calls) - 1) + [3]
    for e in capture.events:
        k = e.call
        if k >= len(out):
            continue
        if isinstance(e, ev.CallFailed):
            out[k] = 2
        elif isinstance(e, ev.ProviderCall) and not e.ok and out[k] == 0:
            out[k] = 1
    return out


def _message_json(capture: Capture, index: int) -> dict[str, Any]:
    m = capture.messages[index]
    text = m.content
    out: dict[str, Any] = {
        "role": m.role,
        "origin": capture.origins[index],
        "kind": capture.kinds[index],
    }
    if len(text) > MAX_TEXT:
        out["cut"] = len(text) - MAX_TEXT
        text = text[:MAX_TEXT]
    out["content"] = text
    out["t"], out["e"] = capture.counts[index]
    if m.name:
        out["name"] = m.name
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
        ]
    if m.media_parts:
        out["media"] = [p.type for p in m.media_parts]
    if index in capture.cites:
        out["cites"] = capture.cites[index]
    return out


def _call_chunks(
    capture: Capture, by_call: Mapping[int, list[dict[str, Any]]]
) -> list[tuple[int, list[str]]]:
    """The calls' entries as JSON, in chunks, each with its first call:
    :data:`CALLS_PER_CHUNK` calls at most, and a chunk ends once it holds
    :data:`CALL_CHUNK_CHARS` characters (each entry is encoded once, for both)."""
    chunks: list[tuple[int, list[str]]] = []
    size = 0
    for k, call in enumerate(capture.calls):
        entry = _json({"ranges": [list(r) for r in call.ranges], "events": by_call.get(k, [])})
        if not chunks or len(chunks[-1][1]) >= CALLS_PER_CHUNK or size >= CALL_CHUNK_CHARS:
            chunks.append((k, []))
            size = 0
        chunks[-1][1].append(entry)
        size += len(entry)
    return chunks


def write_run(
    root: Path,
    capture: Capture,
    recorded: Sequence[Event] = (),
    *,
    side: int = 0,
    source: str = "",
) -> dict[str, Any]:
    """Write one run's data files; returns its entry in the index. ``side`` 1 is the run of
    the other results source (``--against``): its data go under its own key, since both
    sources may hold the same run id (a reproduction of a release's cell)."""
    spec = capture.spec
    run_id = spec.run_id
    key = run_id if side == 0 else f"{side}-{run_id}"
    digests = capture.digests()
    row = capture.row
    by_call: dict[int, list[dict[str, Any]]] = {}
    for e in capture.events:
        by_call.setdefault(e.call, []).append(e.to_dict())
    for answer in recorded:  # a model's answers at a call (--answerer), shown there
        if isinstance(answer, (ev.ProbeAnswer, ev.NextAction)):
            by_call.setdefault(answer.call, []).append(answer.to_dict())
    status: dict[int, ev.ContextStatus] = {}
    for e in capture.events:
        if isinstance(e, ev.ContextStatus) and e.call not in status:
            status[e.call] = e
    layers: dict[int, set[str]] = {}
    for e in capture.events:
        if isinstance(e, ev.Compaction):
            layers.setdefault(e.call, set()).add(e.layer)
    n = len(capture.calls)
    compacted = [sorted(layers.get(k, ())) for k in range(n)]
    files = sorted(capture.files)
    if capture.files:
        write_files(root / "files" / key, capture.files, then="write the viewer again")
    mismatch = None
    if recorded:
        from ctxbench.divergence import first_divergence

        mismatch = first_divergence(recorded, capture.events).call
    call_chunks = _call_chunks(capture, by_call)
    run = {
        "id": key,
        "run_id": run_id,
        "source": source,
        "trace_id": spec.trace_id,
        "strategy": spec.strategy,
        "params": dict(spec.params),
        "window": spec.window,
        "reserved": spec.reserved,
        "counter": spec.counter,
        "estimator": spec.estimator,
        "calls": n,
        "true": [c.true_tokens for c in capture.calls],
        "est": [c.estimated_tokens for c in capture.calls],
        "budget": [status[k].budget if k in status else None for k in range(n)],
        "verdict": _verdicts(capture),
        "layers": compacted,
        "digest": digests,
        "thresholds": _thresholds(spec.params),
        "probes": [probe_json(t) for t in capture.probes],
        "files": files,
        "call_chunks": [start for start, _ in call_chunks],
        "recorded_mismatch": mismatch,
        "row": {k: v for k, v in row.to_row().items() if k != "spec"} if row else {},
    }
    _write(root, f"{key}/run", run)
    for number, (_, entries) in enumerate(call_chunks):
        _write_json(root, f"{key}/calls-{number}", "[" + ",".join(entries) + "]")
    for start in range(0, len(capture.messages), MESSAGES_PER_CHUNK):
        stop = min(len(capture.messages), start + MESSAGES_PER_CHUNK)
        records = [_message_json(capture, i) for i in range(start, stop)]
        for i, record in enumerate(records, start=start):
            if len(record["content"]) > APART_TEXT:
                _write(root, f"{key}/msg-{i}", record)
                records[i - start] = {"apart": True}
        _write(root, f"{key}/msgs-{start // MESSAGES_PER_CHUNK}", records)
    return {
        "id": key,
        "run_id": run_id,
        "source": source,
        "params": dict(spec.params),
        "trace_id": spec.trace_id,
        "strategy": spec.strategy,
        "window": spec.window,
        "counter": spec.counter,
        "calls": n - 1,
        "failed_calls": capture.row.failed_calls if capture.row else None,
        "compactions": sum(1 for layers in compacted if layers),
        "retention": capture.row.retention if capture.row else None,
    }


def write_viewer(
    root: str | Path,
    captures: Callable[[], Any],
    *,
    title: str = "ctxbench viewer",
    sources: Sequence[str] = (),
) -> Path:
    """Write the viewer's page and the data of every capture ``captures()`` yields
    (``(Capture, recorded_events, side)``, one at a time, so memory holds one run) into
    ``root``, a new folder (:func:`ctxbench.view.folder.building` gives one). With two
    ``sources`` (names), ``side`` says which one a run comes from (0 or 1); runs are labelled
    by it and a run opens compared with its counterpart in the other source."""
    root = Path(root)
    assets = resources.files("ctxbench.view") / "assets"
    for name in ASSETS:
        (root / name).write_text((assets / name).read_text("utf-8"), "utf-8")
    named = len(sources) > 1
    entries = [
        write_run(root, capture, recorded, side=side, source=sources[side] if named else "")
        for capture, recorded, side in captures()
    ]
    run_labels(entries)
    for entry in entries:
        if entry["source"]:
            entry["label"] = f"{entry['source']}: {entry['label']}"
    entries.sort(key=lambda e: (str(e["trace_id"]), str(e["label"]), str(e["id"])))
    _write(
        root,
        "index",
        {
            "title": title,
            "sources": list(sources) if named else [],
            "runs": entries,
            "messages_per_chunk": MESSAGES_PER_CHUNK,
        },
    )
    return root / "index.html"
