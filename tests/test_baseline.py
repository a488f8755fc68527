"""Baseline files: one of another schema is refused with a ConfigError naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxbench.baseline import load_baseline
from ctxbench.errors import ConfigError


def test_a_baseline_of_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"schema": "other/1", "cells": []}), "utf-8")
    with pytest.raises(ConfigError, match="schema"):
        load_baseline(path)
