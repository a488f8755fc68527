"""``python -m benchmarks``: issue 43's table, whose figures are read from each module's JSON
(an object holding a ``goal`` and a ratio), each checked against its goal."""

from __future__ import annotations

from pathlib import Path

from benchmarks.__main__ import TABLE, figures, main

HERE = Path(__file__).resolve().parents[2] / "benchmarks"


def test_a_figure_is_an_object_with_a_goal_and_a_ratio_and_met_is_read_or_worked_out() -> None:
    result = {
        "repeats": 3,
        "synthetic_300": {
            "goal": 2.0,
            "strategies": {
                "none": {"replay_cpu_s": 1.0, "replay_vs_floor": 1.8, "goal": 2.0, "met": True},
                "dbgpt": {"replay_cpu_s": 4.0, "replay_vs_floor": 4.1, "goal": 2.0},
            },
        },
        "memory": {"cells": [10, 40], "mib_per_added_cell": 0.05, "goal": 0.1},
        "sent": [{"o200k": {"chars": 9, "sent_vs_distinct": 1.4, "goal": 1.1, "met": False}}],
        "flag": {"goal": True, "ratio": 3},  # a bool is no goal
    }
    assert figures(result) == [
        {
            "name": "synthetic_300.strategies.none.replay_vs_floor",
            "value": 1.8,
            "goal": 2.0,
            "met": True,
        },
        {
            "name": "synthetic_300.strategies.dbgpt.replay_vs_floor",
            "value": 4.1,
            "goal": 2.0,
            "met": False,
        },
        {"name": "memory.mib_per_added_cell", "value": 0.05, "goal": 0.1, "met": True},
        {"name": "sent[0].o200k.sent_vs_distinct", "value": 1.4, "goal": 1.1, "met": False},
    ]


def test_every_row_of_this_issue_s_part_has_its_module_and_a_row_name_is_checked() -> None:
    own = [row for row in TABLE if row.owner == "43b"]
    assert own and all((HERE / f"{row.module}.py").is_file() for row in own)
    assert main(["no_such_row"]) == 2
