"""Shared test set-up: the network is blocked (only loopback, for the Dask cluster and the
browser test, is allowed), tokenizer hubs are offline, and the shared trace folder is found
through ``CTXBENCH_TRACES``."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# CI replays the same examples every run (the project's determinism rule: a red CI is a real
# regression, never a new random draw); developers' runs keep exploring with random examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CTXBENCH_CI") == "1" or os.environ.get("CI") == "true":
    settings.load_profile("ci")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The summarizer client follows the proxy variables as urllib does; the tests talk to servers
# on loopback, so a proxy a CI machine sets for the package registries must not catch them
# (the proxy tests set their own).
for _name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
    os.environ.pop(_name, None)

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0", ""}

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guard(address: object) -> None:
    if isinstance(address, tuple) and address and str(address[0]) not in LOOPBACK:
        raise OSError(f"network access blocked in tests: {address!r}")


def _blocked_connect(self: socket.socket, address: object) -> None:
    _guard(address)
    _real_connect(self, address)  # type: ignore[arg-type]


def _blocked_connect_ex(self: socket.socket, address: object) -> int:
    _guard(address)
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


socket.socket.connect = _blocked_connect  # type: ignore[method-assign,assignment]
socket.socket.connect_ex = _blocked_connect_ex  # type: ignore[method-assign,assignment]


def in_ci() -> bool:
    return os.environ.get("CTXBENCH_CI") == "1" or os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The folder of real recorded traces (``CTXBENCH_TRACES``, default ``../shared/traces``).

    Missing: the test fails under CI and is skipped on a developer machine."""
    path = Path(os.environ.get("CTXBENCH_TRACES", REPO.parent / "shared" / "traces"))
    if not path.is_dir():
        if in_ci():
            pytest.fail(f"shared traces folder {path} is missing (set CTXBENCH_TRACES)")
        pytest.skip(f"shared traces folder {path} is missing")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright, for the report and viewer tests: skipped
    on a developer machine without it, a failure under CI (``.ci/run`` installs both)."""
    from ctxbench.report.screenshot import chromium_path, launch

    def unavailable(reason: str) -> None:
        if in_ci():
            pytest.fail(f"{reason} (required in CI: .ci/run installs it)")
        pytest.skip(reason)

    if chromium_path() is None:
        unavailable("Chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed (pip install ctxbench[browser])")
    with sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()


#: The slowest tests (``--durations`` of the whole suite, issue 43: 20 s or more each on the
#: 2-core development machine under load 13-18, where the suite took 62 minutes), and the
#: integration folders that replay through the released frameworks' environments: marked
#: ``slow``, so ``make test`` leaves them out and ``make test-slow`` (which ``.ci/run`` runs
#: after ``make test``) runs them. Listed here, by node id (a parametrized test by its name,
#: every case) or folder, so the set is measured and changed in one place.
SLOW: frozenset[str] = frozenset(
    {
        "tests/parity/",
        "tests/shipped/",
        "tests/test_structure_golden.py::test_the_quickstart_part_matches_the_golden",
        "tests/test_structure_golden.py::test_recorded_replays_and_errors_match_the_golden",
        # the events golden, beside the structure golden (25 s of `make test` at stop 49)
        "tests/test_events_golden.py::test_the_quickstart_scenarios_write_and_read_the_golden_bytes",
        "tests/test_events_golden.py::test_recorded_traces_write_the_golden_bytes",
        "tests/sweep/test_execution.py::"
        "test_one_worker_two_workers_and_a_dask_cluster_give_identical_results",
        "tests/sweep/test_execution.py::"
        "test_a_sweep_killed_with_sigkill_resumes_to_the_uninterrupted_table",
        "tests/test_check.py::"
        "test_the_example_teams_v2_that_keeps_fewer_messages_fails_and_its_diff_hint_works",
        "tests/test_check.py::test_the_example_workflow_commands_run_and_gate",
        "tests/test_check.py::"
        "test_the_plug_in_workflow_gates_the_example_teams_compactor_against_its_baseline",
        "tests/sweep/test_resume_hardening.py::"
        "test_resume_runs_again_the_cells_whose_plug_in_code_changed_and_says_how_many",
        "tests/sweep/test_resume_hardening.py::"
        "test_temp_files_left_by_a_kill_are_removed_by_the_next_run",
        "tests/sweep/test_resume_hardening.py::"
        "test_resume_with_a_changed_spec_refuses_naming_the_change_unless_reset",
        "tests/sweep/test_resume_hardening.py::"
        "test_failed_cells_exit_non_zero_and_resume_retries_them",
        "tests/sweep/test_resume_hardening.py::"
        "test_a_damaged_journal_line_is_skipped_and_reported_and_later_lines_count",
        "tests/sweep/test_resume_hardening.py::"
        "test_resume_never_writes_through_a_symlink_planted_in_the_results_dir",
        "tests/probes/test_mining.py::"
        "test_mining_real_traces_yields_probes_whose_answers_are_in_their_evidence",
        "tests/probes/test_mining.py::test_mining_synthetic_traces_gives_well_formed_probes",
        "tests/probes/test_mining.py::test_planted_artifact_paths_are_found_by_the_miner",
        "tests/strategies/test_real_traces.py::test_every_strategy_on_every_embedded_scenario",
        "tests/strategies/test_invariants.py::"
        "test_no_strategy_breaks_tool_pairs_or_drops_the_system_message",
        "tests/summarizers/test_comparison.py::test_the_table_and_the_json",
        "tests/engine/test_large_inputs_hardening.py::test_2000_rounds_replay_with_pairs_intact",
    }
)


def is_slow(nodeid: str) -> bool:
    """Whether the test ``nodeid`` is in :data:`SLOW` (itself, its name or its folder)."""
    return nodeid.split("[")[0] in SLOW or any(
        nodeid.startswith(entry) for entry in SLOW if entry.endswith("/")
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item.nodeid):
            item.add_marker(pytest.mark.slow)
