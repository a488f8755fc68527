"""A scenario source's size is checked in product with its trace count (issue 22): count x
rounds x output sizes over ctxbench.limits.MAX_GENERATED_CHARS is refused before the first
trace is built, in `gen`, `sweep --dry-run` and `sweep`, with one error line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ctxbench import limits
from ctxbench.errors import ConfigError
from ctxbench.sweep import load_sweep
from ctxbench.synth.scenario import check_generation
from ctxbench.synth.scenario_file import load_scenario
from tests.hardening import run_main

PER_TRACE = load_scenario("coding_agent").expected_chars()


def _sweep(tmp_path: Path, count: int, seeds: str = "[0]") -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'windows = [32000]\n[[traces]]\nscenario = "coding_agent"\nseeds = {seeds}\n'
        f'count = {count}\n[[strategies]]\nname = "none"\n',
        encoding="utf-8",
    )
    return path


def test_each_trace_is_small_but_their_product_is_refused_at_once(tmp_path: Path) -> None:
    count = int(limits.MAX_GENERATED_CHARS / PER_TRACE) + 1
    assert PER_TRACE * 10 < limits.MAX_TRACE_CHARS  # every trace alone is fine
    sweep_file = _sweep(tmp_path, count)
    for argv, key in (
        (["gen", "coding_agent", "-o", str(tmp_path / "t.jsonl"), "--traces", str(count)], None),
        (["sweep", str(sweep_file), "--dry-run"], "traces[0].count"),
        (["sweep", str(sweep_file), "-o", str(tmp_path / "out")], "traces[0].count"),
    ):
        started = time.monotonic()
        code, err = run_main(argv)
        first = err.splitlines()[0]
        assert code == 2 and first.startswith("error: ") and "Traceback" not in err, err
        assert "MAX_GENERATED_CHARS" in first and f"{count:,} traces of coding_agent" in first
        assert (key or "--traces") in first
        if key:
            assert str(sweep_file) in first
        assert time.monotonic() - started < 10
    assert not (tmp_path / "t.jsonl").exists() and not (tmp_path / "out").exists()


def test_seeds_multiply_the_count(tmp_path: Path) -> None:
    count = int(limits.MAX_GENERATED_CHARS / PER_TRACE / 3) + 1
    load_sweep(_sweep(tmp_path, count, "[0]"))  # one seed: within the limit
    with pytest.raises(ConfigError, match="MAX_GENERATED_CHARS") as info:
        load_sweep(_sweep(tmp_path, count, "[0, 1, 2]"))
    assert info.value.key == "traces[0].count"


def test_the_limit_itself_is_accepted() -> None:
    spec = load_scenario("coding_agent")
    check_generation(spec, int(limits.MAX_GENERATED_CHARS / PER_TRACE), key="--traces")
    with pytest.raises(ConfigError):
        check_generation(spec, int(limits.MAX_GENERATED_CHARS / PER_TRACE) + 1, key="--traces")


def test_a_sweep_naming_an_unknown_scenario_names_the_sweep_file(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(
        'windows = [32000]\n[[traces]]\nscenario = "no_such"\n[[strategies]]\nname = "none"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_sweep(path)
    assert info.value.path == str(path) and info.value.key == "traces[0].scenario"
