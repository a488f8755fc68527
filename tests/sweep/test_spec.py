"""Sweep files: parsing, the grid, expansion order and counts, stable run ids, errors."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cell.traces import SourceRef, TraceLoader, split_address
from ctxbench.cli import cli
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import ConfigError, TraceFormatError
from ctxbench.formats.canonical import trace_line, write_traces
from ctxbench.strategies.base import Strategy
from ctxbench.sweep import load_sweep, plan
from tests.factories import react_trace, tool_trace


@dataclass(frozen=True)
class KeepRolesConfig:
    roles: tuple[str, ...] = ("system",)
    keep_last: int = 2


class KeepRoles(Strategy):
    """A plug-in whose knob is itself a list (to test the list-of-lists rule)."""

    name = "keep_roles"
    Config = KeepRolesConfig

    def before_call(self, ctx: ReplayContext) -> None:
        cfg: KeepRolesConfig = self.config
        msgs = ctx.view.messages
        keep = [m for m in msgs[: -cfg.keep_last] if m.role in cfg.roles]
        ctx.apply("keep_roles", [*keep, *msgs[-cfg.keep_last :]])


PLUGIN = f"{__name__}:KeepRoles"

SWEEP = """
windows = [8000, 16000, 32000]
reserved = [500, 1000]
counters = ["chars4", "hermes"]
estimators = ["", "hermes"]

[[traces]]
path = "traces.jsonl"

[[strategies]]
name = "none"

[[strategies]]
name = "sliding_window"
params = { keep_rounds = [2, 4, 8], pin_first_user = true }
"""

#: The same sweep with every table, key and list of the file in another order.
SWEEP_REORDERED = """
estimators = ["hermes", ""]
counters = ["hermes", "chars4"]
reserved = [1000, 500]
windows = [32000, 8000, 16000]

[[strategies]]
params = { pin_first_user = true, keep_rounds = [8, 2, 4] }
name = "sliding_window"

[[strategies]]
name = "none"

[[traces]]
path = "traces.jsonl"
"""


def write(folder: Path, text: str, name: str = "sweep.toml", n_traces: int = 3) -> Path:
    traces = [tool_trace(4 + i, trace_id=f"t{i}") for i in range(n_traces - 1)]
    write_traces(folder / "traces.jsonl", [*traces, react_trace(3, trace_id="r0")])
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_cells_are_the_product_of_traces_and_every_axis(tmp_path: Path) -> None:
    spec = load_sweep(write(tmp_path, SWEEP))
    cells = list(spec.expand())
    per_trace = (
        (1 + 3) * 3 * 2 * 2 * 2
    )  # (none + 3 keep_rounds) x windows x reserved x counters x estimators
    assert len(cells) == 3 * per_trace
    assert len({c.run_id for c in cells}) == len(cells)
    grid = Counter((c.strategy, c.params.get("keep_rounds")) for c in cells)
    expected: dict[tuple[str, int | None], int] = {("none", None): 3 * 24}
    expected.update({("sliding_window", k): 3 * 24 for k in (2, 4, 8)})
    assert grid == expected
    assert {c.params["pin_first_user"] for c in cells if c.strategy == "sliding_window"} == {True}


def test_cells_come_trace_by_trace_in_file_order_with_axes_in_documented_order(
    tmp_path: Path,
) -> None:
    spec = load_sweep(write(tmp_path, SWEEP))
    cells = list(spec.expand())
    assert [c.trace_id for c in cells[:: len(cells) // 3]] == ["t0", "t1", "r0"]
    first = cells[: len(cells) // 3]
    expected = [
        (strategy, keep, w, r, c, e)
        for strategy, keep in [("none", None), *(("sliding_window", k) for k in (2, 4, 8))]
        for w, r, c, e in itertools.product(
            (8000, 16000, 32000), (500, 1000), ("chars4", "hermes"), ("chars4", "hermes")
        )
    ]
    got = [
        (c.strategy, c.params.get("keep_rounds"), c.window, c.reserved, c.counter, c.estimator)
        for c in first
    ]
    assert got == expected
    assert [c.run_id for c in spec.expand()] == [c.run_id for c in cells]


def test_the_same_cell_has_the_same_id_however_the_file_is_ordered(tmp_path: Path) -> None:
    one = load_sweep(write(tmp_path, SWEEP))
    other = load_sweep(write(tmp_path, SWEEP_REORDERED, name="other.toml"))
    ids_one = {c.key: c.run_id for c in one.expand()}
    ids_other = {c.key: c.run_id for c in other.expand()}
    assert ids_one == ids_other
    assert [c.run_id for c in one.expand()] != [c.run_id for c in other.expand()]  # order differs


def test_cells_are_resolved_so_equal_configurations_collapse(tmp_path: Path) -> None:
    text = SWEEP.replace('estimators = ["", "hermes"]', 'estimators = ["", "chars4"]')
    spec = load_sweep(write(tmp_path, text))
    configs = spec.configs()
    # sliding_window's own estimator is chars4: "" and "chars4" are the same cell
    assert {c.estimator for c in configs} == {"chars4"}
    assert len(configs) == (1 + 3) * 3 * 2 * 2
    assert all(
        set(c.params) >= {"keep_rounds", "pin_first_user", "trigger_ratio"}
        for c in configs
        if c.strategy == "sliding_window"
    )


def test_a_list_typed_knob_is_written_as_a_list_of_lists(tmp_path: Path) -> None:
    fixed = f"""
windows = [8000]
reserved = [100]
counters = ["chars4"]
[[traces]]
path = "traces.jsonl"
[[strategies]]
name = "{PLUGIN}"
params = {{ roles = [["system", "user"]], keep_last = [1, 2] }}
"""
    spec = load_sweep(write(tmp_path, fixed))
    assert [(c.params["roles"], c.params["keep_last"]) for c in spec.configs()] == [
        (["system", "user"], 1),
        (["system", "user"], 2),
    ]
    swept = fixed.replace('[["system", "user"]]', '[["system"], ["system", "user"]]')
    spec = load_sweep(write(tmp_path, swept))
    assert sorted(map(tuple, (c.params["roles"] for c in spec.configs()))) == [
        ("system",),
        ("system",),
        ("system", "user"),
        ("system", "user"),
    ]


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda t: t.replace("windows =", "window ="), "window"),
        (
            lambda t: t.replace('path = "traces.jsonl"', 'path = "traces.jsonl"\nsead = 3'),
            "traces[0].sead",
        ),
        (lambda t: t.replace("keep_rounds =", "keep_round ="), "strategies[1].params.keep_round"),
        (lambda t: t.replace('name = "none"', 'name = "none"\nparms = {}'), "strategies[0].parms"),
        (
            lambda t: t + "\n[prices.chars4]\ninput_per_mtok = 1\nouput_per_mtok = 2\n",
            "prices.chars4.ouput_per_mtok",
        ),
    ],
)
def test_unknown_keys_are_errors_naming_the_key_and_the_file(
    tmp_path: Path, edit: object, key: str
) -> None:
    path = write(tmp_path, edit(SWEEP))  # type: ignore[operator]
    with pytest.raises(ConfigError) as info:
        load_sweep(path)
    assert info.value.key == key
    assert info.value.path == str(path)
    assert str(path) in str(info.value) and key in str(info.value)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.replace('name = "none"', 'name = "nune"'), "did you mean 'none'"),
        (
            lambda t: t.replace('"hermes"]\nestimators', '"hermes", "tiktoken:o300k"]\nestimators'),
            "tiktoken:o300k",
        ),
        (lambda t: t.replace("windows = [8000, 16000, 32000]", ""), "windows"),
        (
            lambda t: t.replace("reserved = [500, 1000]", "reserved = [9000]"),
            "smaller than every window",
        ),
        (
            lambda t: t.replace("keep_rounds = [2, 4, 8]", "keep_rounds = [2, 0]"),
            "keep_rounds must be >= 1",
        ),
        (
            lambda t: t.replace('path = "traces.jsonl"', 'path = "missing.jsonl"'),
            "no such trace file",
        ),
        (
            lambda t: t.replace('path = "traces.jsonl"', 'path = "traces.jsonl"\nscenario = "x"'),
            "exactly one of path, scenario, hf",
        ),
    ],
)
def test_bad_values_are_errors_naming_the_file(tmp_path: Path, edit: object, needle: str) -> None:
    path = write(tmp_path, edit(SWEEP))  # type: ignore[operator]
    with pytest.raises(ConfigError) as info:
        load_sweep(path)
    assert needle in str(info.value)
    assert info.value.path == str(path)


def test_expansion_reads_traces_lazily_one_at_a_time(tmp_path: Path) -> None:
    path = write(tmp_path, SWEEP)
    good = (tmp_path / "traces.jsonl").read_text("utf-8")
    (tmp_path / "traces.jsonl").write_text(good + "{not json\n", encoding="utf-8")
    cells = load_sweep(path).expand()
    first = next(cells)  # produced before the broken last line is ever read
    assert first.trace_id == "t0"
    with pytest.raises(TraceFormatError, match=r"traces\.jsonl:4: malformed JSON"):
        list(cells)


def test_two_different_traces_with_one_id_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, SWEEP)
    write_traces(
        tmp_path / "traces.jsonl", [tool_trace(3, trace_id="same"), tool_trace(4, trace_id="same")]
    )
    with pytest.raises(ConfigError, match="two different traces have the id 'same'"):
        plan(load_sweep(path))


def test_a_glob_lists_its_files_in_sorted_order_and_each_trace_has_an_address(
    tmp_path: Path,
) -> None:
    for name, n in (("b.jsonl", 2), ("a.jsonl", 3)):
        write_traces(tmp_path / name, [tool_trace(n, trace_id=f"{name[0]}{i}") for i in range(n)])
    sweep = tmp_path / "glob.toml"
    sweep.write_text(
        'windows = [9000]\nreserved = [100]\ncounters = ["chars4"]\n'
        '[[traces]]\npath = "*.jsonl"\nlimit = 2\n[[strategies]]\nname = "none"\n',
        encoding="utf-8",
    )
    cells = list(load_sweep(sweep).expand())
    assert [c.trace_id for c in cells] == ["a0", "a1", "b0", "b1"]
    loader = TraceLoader()
    for cell in cells:
        ref, index = split_address(cell.trace_source)
        assert ref.kind == "file" and index is not None
        trace = loader.load(cell.trace_source, cell.trace_id, cell.trace_hash)
        assert trace.content_hash == cell.trace_hash


def test_source_addresses_round_trip_through_their_text(tmp_path: Path) -> None:
    refs = [
        SourceRef("file", "/data/odd #name?.jsonl", (("format", "swe_agent"), ("limit", "5"))),
        SourceRef("scenario", "coding_agent", (("count", "2"), ("seed", "7"))),
        SourceRef("hf", "org/set:train", (("messages_column", "conv&x"),)),
    ]
    for ref in refs:
        assert SourceRef.parse(str(ref)) == ref
        assert split_address(f"{ref}#12") == (ref, 12)
    assert split_address("plain/path.jsonl") == (SourceRef("file", "plain/path.jsonl"), None)


def test_loader_refuses_a_trace_whose_content_changed(tmp_path: Path) -> None:
    write_traces(tmp_path / "x.jsonl", [tool_trace(3, trace_id="a")])
    address = f"{SourceRef('file', str(tmp_path / 'x.jsonl'))}#0"
    trace = TraceLoader().load(address, "a")
    (tmp_path / "x.jsonl").write_text(
        trace_line(tool_trace(4, trace_id="a")) + "\n", encoding="utf-8"
    )
    with pytest.raises(TraceFormatError, match="changed since the sweep was planned"):
        TraceLoader().load(address, "a", trace.content_hash)


def test_scenario_sources_generate_one_trace_per_seed_and_index(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'windows = [9000]\nreserved = [100]\ncounters = ["chars4"]\n'
        '[[traces]]\nscenario = "support_agent"\nseeds = [3, 4]\ncount = 2\n'
        '[[strategies]]\nname = "none"\n',
        encoding="utf-8",
    )
    cells = list(load_sweep(sweep).expand())
    assert [c.trace_id for c in cells] == [
        "support_agent-s3-0",
        "support_agent-s3-1",
        "support_agent-s4-0",
        "support_agent-s4-1",
    ]
    loader = TraceLoader()
    for cell in reversed(cells):  # out of order: the reader restarts when it must
        assert loader.load(cell.trace_source, cell.trace_id, cell.trace_hash).id == cell.trace_id


def test_dry_run_prints_the_cell_count_and_every_axis(tmp_path: Path) -> None:
    path = write(tmp_path, SWEEP)
    result = CliRunner().invoke(cli, ["sweep", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].endswith(f"3 traces x 96 configs = {3 * 96} cells")
    axes = {line.split()[0]: line.split(None, 1)[1] for line in lines[lines.index("axes:") + 1 :]}
    assert axes == {
        "strategy": "none, sliding_window",
        "sliding_window.keep_rounds": "2, 4, 8",
        "window": "8000, 16000, 32000",
        "reserved": "500, 1000",
        "counter": "chars4, hermes",
        "estimator": "(strategy's own), hermes",
    }
    assert not (tmp_path / "out").exists()


def test_the_resolved_spec_is_plain_json(tmp_path: Path) -> None:
    spec = load_sweep(write(tmp_path, SWEEP))
    data = json.loads(json.dumps(spec.to_dict()))
    assert data["windows"] == [8000, 16000, 32000]
    assert data["traces"][0]["path"] == str(tmp_path / "traces.jsonl")
    assert data["strategies"][1] == {
        "name": "sliding_window",
        "params": {"keep_rounds": [2, 4, 8], "pin_first_user": True},
    }
