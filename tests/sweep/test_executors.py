"""Executors: what ``prepare`` loads is where the workers have it before their first task
(the driver's memory for forked workers, each worker's for spawned ones), loaded once."""

from __future__ import annotations

import functools
import os
import sys

import pytest

from ctxbench.sweep.executors import START_METHOD, InlineExecutor, ProcessExecutor

#: what a test's load function put here, and in which process
_marks: list[tuple[str, int]] = []


def load(mark: str) -> None:
    _marks.append((mark, os.getpid()))


def loaded(_: int) -> tuple[list[tuple[str, int]], int]:
    return list(_marks), os.getpid()


@pytest.fixture(autouse=True)
def _clean() -> None:
    _marks.clear()


def test_forked_workers_start_with_what_the_driver_loaded_once() -> None:
    executor = ProcessExecutor(2, start_method="fork")
    try:
        executor.prepare(functools.partial(load, "tokenizers"))
        assert _marks == [("tokenizers", os.getpid())]  # in the driver, before any worker
        seen = list(executor.imap_unordered(loaded, range(6)))
    finally:
        executor.close()
    assert all(marks == [("tokenizers", os.getpid())] for marks, _ in seen)
    assert all(pid != os.getpid() for _, pid in seen)


def test_spawned_workers_load_it_each_when_they_start_and_the_driver_does_not() -> None:
    executor = ProcessExecutor(1, start_method="spawn")
    try:
        executor.prepare(functools.partial(load, "tokenizers"))
        assert _marks == []
        seen = list(executor.imap_unordered(loaded, range(3)))
    finally:
        executor.close()
    assert {pid for _, pid in seen} == {seen[0][1]} != {os.getpid()}
    assert all(marks == [("tokenizers", seen[0][1])] for marks, _ in seen)  # once per worker


def test_the_inline_executor_loads_in_this_process_and_linux_forks() -> None:
    InlineExecutor().prepare(functools.partial(load, "x"))
    assert _marks == [("x", os.getpid())]
    assert ("fork" if sys.platform.startswith("linux") else "spawn") == START_METHOD
