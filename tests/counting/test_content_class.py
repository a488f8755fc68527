"""Content classes: clear examples of each class are recognised, the order of the rules decides
mixed cases, and classification looks at a bounded prefix only."""

from __future__ import annotations

import inspect
import json
import json.decoder

import pytest

from ctxbench.counting.content_class import CONTENT_CLASSES, SAMPLE_CHARS, classify

EXAMPLES = {
    "prose": (
        "The migration finished overnight. Two services still read the old bucket, so we kept it "
        "read-only for another week.\nNobody reported errors, and latency stayed flat."
    ),
    "code": inspect.getsource(json.decoder),
    "json": json.dumps(
        {"items": [{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(5)]}, indent=2
    ),
    "logs": (
        "2024-05-20T10:01:03.123Z INFO  [worker-3] job=4711 state=running\n"
        "2024-05-20T10:01:04.456Z ERROR [worker-3] job=4711 failed\n"
        '127.0.0.1 - - [20/May/2024:10:01:02 +0000] "GET /api/items HTTP/1.1" 200 512\n'
        "Traceback (most recent call last):\n"
        '  File "/srv/app/jobs.py", line 88, in run\n'
        "ConnectionError: connection reset\n"
    ),
    "tables": " id | name  | price\n----+-------+------\n  1 | apple |  0.50\n  2 | pear  |  0.75\n  3 | plum  |  1.10\n",
    "cjk": "上下文压缩是长时间运行的智能体必须面对的问题。我们在离线环境中重放轨迹。",
}


@pytest.mark.parametrize(("expected", "text"), EXAMPLES.items())
def test_clear_examples_get_their_class(expected: str, text: str) -> None:
    assert classify(text) == expected


def test_every_class_has_an_example() -> None:
    assert set(EXAMPLES) == set(CONTENT_CLASSES)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "prose"),
        ("   \n\t ", "prose"),
        ('{"a": 1}\n{"a": 2}\n{"a": 3}\n', "json"),  # JSON Lines
        ('{"key": "value", "other": [1, 2, 3], "cut": "off in the mid', "json"),  # truncated JSON
        ("sku,qty,price\nA-100,2,19.99\nB-7,1,5.00\nC-9,4,1.25\n", "tables"),  # CSV
        ("name\tqty\napple\t3\npear\t4\n", "tables"),  # TSV
        ("diff --git a/x.py b/x.py\n@@ -1,2 +1,2 @@\n-old = 1\n+new = 2\n", "code"),
        ("日本語のテキストです。これはテストです。", "cjk"),
        ("Note: the following matters.\nThe plan (as agreed) holds.\nWe ship on Friday.", "prose"),
    ],
)
def test_edge_cases(text: str, expected: str) -> None:
    assert classify(text) == expected


def test_prose_lines_with_the_same_number_of_commas_are_not_a_table() -> None:
    line = "We tried the fix, reran the suite, and the flaky test passed three times in a row."
    assert classify("\n".join([line] * 5)) == "prose"


def test_cjk_wins_over_json_when_most_characters_are_cjk() -> None:
    text = json.dumps({"标题": "上下文压缩是长时间运行的智能体必须面对的问题"}, ensure_ascii=False)
    assert classify(text) == "cjk"


def test_only_the_leading_sample_is_examined() -> None:
    text = "\n".join(
        [EXAMPLES["prose"]] * (SAMPLE_CHARS // len(EXAMPLES["prose"]) + 1)
        + [EXAMPLES["cjk"]] * 10_000
    )
    assert classify(text) == "prose"
