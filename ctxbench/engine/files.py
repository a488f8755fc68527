"""The files a replay records (snapshots, offloads): safe names and their JSON.

Pure: :meth:`ctxbench.engine.context.ReplayContext.write_file` keeps the files in memory; the
command writes them under the run's directory, where these names keep them (a replay whose
caller keeps no file holds only their names and hashes: ``ReplayContext.written``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

from ctxbench.memo import ContentMemo

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_component(text: str, *, limit: int = 64) -> str:
    """A file-name component from untrusted text (tool names, call ids): no separators, no
    ``..``, no leading dot, never empty, at most ``limit`` characters. Keeps snapshot files
    inside the run's directory. Text that has to change gets a short hash of the original, so
    two names never share a file (``a/b`` and ``a_b``); a safe result is returned as is."""
    cleaned = _UNSAFE.sub("_", text).strip("._").replace("..", "_") or "x"
    if cleaned == text and len(text) <= limit:
        return text
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return cleaned[: limit - 9] + "_" + digest


@functools.lru_cache(maxsize=65536)
def safe_path(relative_path: str) -> str:
    """A relative path of :func:`safe_component` parts (``""``, ``.`` and ``..`` left out),
    ``file`` when none is left. Memoised: a sweep's replays of one trace write the same
    paths again."""
    parts = [safe_component(p) for p in relative_path.split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "file"


_SCALARS = (str, int, float, bool, type(None))


def indented_json(payload: Any) -> str:
    """``json.dumps(payload, ensure_ascii=False, indent=2)``, the same text; a flat object of
    scalars (every snapshot) is rendered with the C encoder, item by item, since ``indent``
    sends ``json.dumps`` to its pure-Python encoder (a third of a DB-GPT replay's time)."""
    if not _flat(payload):
        return json.dumps(payload, ensure_ascii=False, indent=2)
    items = (f"  {encode_basestring(k)}: {_scalar_json(v)}" for k, v in payload.items())
    return "{\n" + ",\n".join(items) + "\n}"


#: the memo (of the current caches, :mod:`ctxbench.engine.caches`) of the files of flat JSON
#: payloads (every snapshot) and their sha256, and the bytes it holds: a sweep's replays of one
#: trace write the same snapshots again
_JSON_FILES = "engine.json_files"
_JSON_FILES_LIMIT = 16 * 2**20


def json_file(payload: Any, *, memo: bool = True) -> tuple[bytes, str]:
    """``payload`` as an indented JSON file, and the file's sha256. ``memo=False``: not held
    for later replays (a caller that keeps its files by size and hash alone)."""

    def render() -> tuple[bytes, str]:
        content = indented_json(payload).encode("utf-8", "surrogatepass")
        return content, hashlib.sha256(content).hexdigest()

    if not memo or not _flat(payload):
        return render()
    # the type is part of the key: True == 1, but they are written "true" and "1"
    key = tuple((k, type(v), v) for k, v in payload.items())
    size = sum(map(sys.getsizeof, payload.values()))  # what the key holds (the file is smaller)
    from ctxbench.engine.caches import current

    files: ContentMemo[tuple[tuple[str, type, Any], ...], tuple[bytes, str]]
    files = current().content(_JSON_FILES, _JSON_FILES_LIMIT)
    return files.get(key, render, size)


def _flat(payload: Any) -> bool:
    """A non-empty object of scalars keyed by text."""
    return (
        isinstance(payload, dict)
        and bool(payload)
        and all(type(k) is str and isinstance(v, _SCALARS) for k, v in payload.items())
    )


def _scalar_json(value: Any) -> str:
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value)  # floats (NaN, Infinity), int subclasses


def unused_path(path: str, free: Callable[[str], bool]) -> str:
    """``path``, or ``name~2.ext``, ``name~3.ext``, ... when another content already has it
    (``free(p)``: no file is at ``p``, or the one there holds this content): a file a
    strategy wrote is never replaced by a later one (its snapshot event's hash would no
    longer match the file)."""
    if free(path):
        return path
    folder, _, name = path.rpartition("/")
    stem, dot, suffix = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
    n = 2
    while True:
        candidate = f"{folder + '/' if folder else ''}{stem}~{n}{dot}{suffix}"
        if free(candidate):
            return candidate
        n += 1
