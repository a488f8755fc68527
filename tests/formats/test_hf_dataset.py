"""Hugging Face datasets: parquet / JSON(L) rows through `datasets`, and the hub (offline here)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctxbench.errors import TraceFormatError
from ctxbench.formats.hf_dataset import read_hub
from ctxbench.formats.importer import ImportOptions
from ctxbench.formats.importing import import_file

ROWS = [
    {
        "id": "r1",
        "split": "a",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        ],
    },
    {
        "id": "r2",
        "split": "b",
        "messages": [{"role": "user", "content": "yo"}, {"role": "assistant", "content": "ok"}],
    },
]


def test_parquet_rows_become_traces_and_arrow_nulls_are_not_invented(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    traces, report = import_file(path)
    assert report.format == "hf_dataset" and report.detected
    assert [t.id for t in traces] == ["r1", "r2"]
    assert (
        traces[0].messages[1].tool_calls[0].name == "ls"
        and traces[0].messages[2].tool_call_id == "c1"
    )
    assert traces[1].messages[1].tool_calls == () and traces[1].messages[1].meta == {}
    assert traces[0].meta["split"] == "a"


def test_a_named_column_holds_sharegpt_turns(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows = [
        {"dialogue": json.dumps([{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}])}
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    traces, _ = import_file(path, "hf_dataset", ImportOptions(messages_column="dialogue"))
    assert [(m.role, m.content, m.meta["from"]) for m in traces[0].messages] == [
        ("user", "q", "human"),
        ("assistant", "a", "gpt"),
    ]


def test_rows_with_a_conversations_column_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "sharegpt.jsonl"
    path.write_text(json.dumps({"conversations": [{"from": "human", "value": "q"}]}) + "\n")
    _, report = import_file(path)
    assert report.format == "hf_dataset"


def test_a_missing_messages_column_lists_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([{"text": "x"}]), path)
    with pytest.raises(TraceFormatError) as err:
        import_file(path)
    assert (
        "text" in str(err.value)
        and "--messages-column" in str(err.value)
        and err.value.key == "$[0]"
    )


def test_the_hub_offline_is_a_clear_error() -> None:
    with pytest.raises(TraceFormatError) as err:
        list(read_hub("someone/not-here:test", ImportOptions()))
    assert err.value.key == "--hf" and "someone/not-here" in str(err.value)


@pytest.mark.parametrize("damage", ["truncate", "flip", "footer"])
def test_a_damaged_parquet_file_is_a_clear_error(tmp_path: Path, damage: str) -> None:
    from tests.hardening import assert_names_the_problem

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    data = path.read_bytes()
    path.write_bytes(
        {
            "truncate": data[: len(data) // 2],
            "flip": data[:100] + bytes([data[100] ^ 0xFF]) + data[101:],
            "footer": data[:-12] + b"PAR1",
        }[damage]
    )
    with pytest.raises(TraceFormatError) as err:
        import_file(path)
    assert_names_the_problem(err.value, path)
