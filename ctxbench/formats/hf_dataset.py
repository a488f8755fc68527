"""Hugging Face ``datasets`` of conversations: one row per trace.

Rows come from the hub (``--hf NAME[:SPLIT]``, online) or from local parquet / JSON(L) files
read through ``datasets``. The messages field is ``--messages-column`` or the first of
``messages``, ``conversations``, ``conversation``, ``chat``, ``dialog`` that the row has. It
may hold OpenAI-style messages or ShareGPT turns (``{"from": "human", "value": ...}``), as a
list or as a JSON string. A ``tools`` column maps to the trace's tools, ``id`` to its id; every
other column goes to the trace's meta. Arrow fills keys a row lacks with nulls; those nulls
are dropped, since they were never in the data.

``datasets`` is imported only when a dataset is read.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxbench import jsontext
from ctxbench.errors import TraceFormatError
from ctxbench.extras import require
from ctxbench.formats import openai_chat
from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, rest
from ctxbench.trace import Message, Trace

NAME = "hf_dataset"
MESSAGE_COLUMNS = ("messages", "conversations", "conversation", "chat", "dialog")
SHAREGPT_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "system": "system",
    "tool": "tool",
}
LOADERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".ndjson": "json"}


def _is_row(value: Any) -> bool:
    """A row with a conversation column other than ``messages`` (which openai_chat reads)."""
    return isinstance(value, dict) and any(
        isinstance(value.get(c), list) for c in MESSAGE_COLUMNS[1:]
    )


def detect(doc: Document) -> bool:
    head = doc.head
    if doc.layout == "json" and isinstance(head, list):
        head = head[0] if head else None
    return doc.layout == "parquet" or _is_row(head)


def plain(value: Any) -> Any:
    """A JSON-able copy of a dataset value; nulls Arrow added for absent keys are dropped."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return plain(value.tolist())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return f"<{type(value).__name__}>"


def _decoded(value: Any, at: At) -> Any:
    """Columns some datasets store as JSON text (messages, tools)."""
    if not isinstance(value, str):
        return value
    try:
        return jsontext.well_formed(json.loads(value), value)
    except (ValueError, RecursionError) as exc:
        raise at.error(
            f"holds text that is not JSON ({getattr(exc, 'msg', type(exc).__name__)})",
            hint="give the column that holds the messages",
        ) from None


def message(value: Any, at: At) -> Message:
    data = at.obj(value)
    if "role" in data or "from" not in data:
        return openai_chat.message(data, at)
    speaker = at.key("from").text(data["from"])
    mapped = {"role": SHAREGPT_ROLES.get(speaker, speaker), "content": data.get("value")}
    mapped.update(rest(data, ("from", "value")))
    msg = openai_chat.message(mapped, at)
    if mapped["role"] == speaker:
        return msg
    return replace(msg, meta={**msg.meta, "from": speaker})


def row_trace(row: dict[str, Any], at: At, default_id: str, column: str | None) -> Trace:
    """One trace from one dataset row."""
    column = column or next((c for c in MESSAGE_COLUMNS if c in row), None)
    if column is None or column not in row:
        wanted = repr(column) if column else "one of " + ", ".join(MESSAGE_COLUMNS)
        raise at.error(
            f"no messages column ({wanted}); the columns are {', '.join(sorted(row)) or 'none'}",
            hint="name the column with --messages-column COL",
        )
    col_at = at.key(column)
    raw = col_at.arr(_decoded(row[column], col_at))
    msgs = tuple(message(m, col_at.index(i)) for i, m in enumerate(raw))
    tools_at = at.key("tools")
    tools_raw = tools_at.opt_arr(_decoded(row.get("tools"), tools_at))
    tools = tuple(openai_chat.tool_spec(t, tools_at.index(i)) for i, t in enumerate(tools_raw))
    trace_id = at.key("id").ident(row["id"]) if row.get("id") is not None else default_id
    return Trace(trace_id, msgs, tools=tools, meta=rest(row, (column, "tools", "id")))


def _rows(dataset: Any, source: str, name: str, column: str | None) -> Iterator[Trace]:
    for i, row in enumerate(dataset):
        at = At(source, None, f"$[{i}]", NAME)
        yield row_trace(at.obj(plain(row)), at, f"{name}-{i}", column)


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    """Rows of a local parquet / JSON(L) file, read through ``datasets``."""
    datasets = require("datasets", what="reading Hugging Face datasets")

    suffix = doc.path.suffix if doc.layout != "parquet" else ".parquet"
    loader = LOADERS.get(suffix, "json")
    stem = doc.path.name.split(".")[0]
    quiet = datasets.utils.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # a local file loads in moments; keep the CLI output clean
    with tempfile.TemporaryDirectory(prefix="ctxbench-hf-") as cache:
        try:
            dataset = datasets.load_dataset(
                loader,
                data_files=str(doc.path),
                split="train",
                cache_dir=cache,
                keep_in_memory=True,
            )
        except (
            Exception
        ) as exc:  # datasets raises many types (ArrowInvalid, DatasetGenerationError, ...)
            raise TraceFormatError(
                f"{NAME}: datasets cannot read this {loader} file: {type(exc).__name__}: {exc}",
                path=doc.path,
                hint="check that it is a table with one conversation per row",
            ) from None
        finally:
            if not quiet:
                datasets.enable_progress_bars()
        yield from _rows(dataset, str(doc.path), stem, options.messages_column)


def read_hub(spec: str, options: ImportOptions) -> Iterator[Trace]:
    """Rows of hub dataset ``NAME[:SPLIT]`` (split ``train`` by default); needs the network."""
    datasets = require("datasets", what="reading Hugging Face datasets")

    name, _, split = spec.partition(":")
    split = split or "train"
    if not name:
        raise TraceFormatError(
            "--hf needs a dataset name", key="--hf", hint="for example --hf org/dataset:train"
        )
    try:
        dataset = datasets.load_dataset(name, split=split)
    except (
        Exception
    ) as exc:  # network, auth, missing dataset or split: all surface as one clear error
        raise TraceFormatError(
            f"cannot load {name!r} split {split!r} from the Hugging Face hub: {type(exc).__name__}: {exc}",
            key="--hf",
            hint="check the name and split, the network, and HF_DATASETS_OFFLINE",
        ) from None
    yield from _rows(dataset, f"hf://{name}:{split}", Path(name).name, options.messages_column)


IMPORTER = Importer(
    name=NAME,
    expects="a parquet or JSON(L) table with one conversation per row (a messages column)",
    detect=detect,
    read=read,
)
