"""Probe files: probes kept apart from the traces they ask about.

Recorded traces are often shared read-only, or re-imported; a probe file lets the probes travel
separately (``ctxbench run --probes FILE``). It is JSON Lines, one trace per line::

    {"trace_id": "t-001", "probes": [{"id": "p1", "kind": "artifact", ...}]}

Probe objects are the canonical ones of ``ctxbench.trace/1``. Errors name the file, the line and
the JSON path of what is wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ctxbench import jsontext
from ctxbench.atomic_file import AtomicFile
from ctxbench.errors import TraceFormatError
from ctxbench.probes.model import PROBE_KINDS, Probe
from ctxbench.trace import Trace


def load_probes(path: str | Path) -> dict[str, tuple[Probe, ...]]:
    """Trace id -> its probes, from a probe file."""
    path = Path(path)
    if not os.path.isfile(path):  # never raises (a name too long, a NUL byte)
        raise TraceFormatError(
            "no such probe file",
            path=path,
            hint="write one with `ctxbench probes mine TRACE -o FILE --probes-only`",
        )
    out: dict[str, tuple[Probe, ...]] = {}
    lines = jsontext.text_lines(
        path, error=TraceFormatError, hint="check its permissions, and that it is UTF-8 text"
    )
    for lineno, data in jsontext.json_lines(
        lines,
        path=path,
        error=TraceFormatError,
        hint='each line holds one {"trace_id": ..., "probes": [...]} object',
    ):
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("trace_id"), str)
            or not isinstance(data.get("probes"), list)
        ):
            raise TraceFormatError(
                "expected an object with a string 'trace_id' and a 'probes' list",
                path=path,
                line=lineno,
                key="$",
                hint='each line holds one {"trace_id": ..., "probes": [...]} object',
            )
        trace_id = data["trace_id"]
        if trace_id in out:
            raise TraceFormatError(
                f"trace {trace_id!r} is listed twice",
                path=path,
                line=lineno,
                key="$.trace_id",
                hint="merge its probes into one line",
            )
        probes = []
        for i, raw in enumerate(data["probes"]):
            try:
                if not isinstance(raw, Mapping):
                    raise TypeError("a probe must be an object")
                probes.append(Probe.from_dict(raw))
            except (KeyError, TypeError, ValueError) as exc:
                what = f"missing key {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
                raise TraceFormatError(
                    f"invalid probe: {what}",
                    path=path,
                    line=lineno,
                    key=f"$.probes[{i}]",
                    hint=f"a probe needs id, kind (one of {', '.join(PROBE_KINDS)}), question, answers",
                ) from None
        out[trace_id] = tuple(probes)
    return out


def probe_lines(traces: Iterable[Trace]) -> Iterable[str]:
    """The probe-file line of each trace (traces without probes are skipped)."""
    for trace in traces:
        if trace.probes:
            payload = {"trace_id": trace.id, "probes": [p.to_dict() for p in trace.probes]}
            yield json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def write_probes(path: str | Path, traces: Iterable[Trace]) -> int:
    """Write the probes of ``traces`` as a probe file (atomically: a failed write raises
    OutputError and leaves no partial file). Returns the lines written."""
    count = 0
    with AtomicFile(path) as out:
        for line in probe_lines(traces):
            out.write(line + "\n")
            count += 1
    return count


def with_probes(trace: Trace, probes: Sequence[Probe], *, keep_existing: bool = True) -> Trace:
    """``trace`` with ``probes`` added (ids made unique) or, unless ``keep_existing``, instead."""
    kept = trace.probes if keep_existing else ()
    ids = {p.id for p in kept}
    answers = {a for p in kept for a in p.answers}
    added = []
    for probe in probes:
        if any(a in answers for a in probe.answers):
            continue
        new_id, n = probe.id, 1
        while new_id in ids:
            n += 1
            new_id = f"{probe.id}~{n}"
        ids.add(new_id)
        added.append(replace(probe, id=new_id) if new_id != probe.id else probe)
    return replace(trace, probes=(*kept, *added))
