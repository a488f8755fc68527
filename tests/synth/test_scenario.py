"""Scenario specs: a fact that could not be planted verbatim is refused when it is built."""

from __future__ import annotations

import pytest

from ctxbench.synth.scenario import FactSpec


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"kind": "gossip"}, "kind"),
        ({"text": "no placeholder"}, "{value}"),
        ({"kind": "superseded"}, "update"),
        ({"text": 'say "{value}"'}, "double quotes"),
        ({"value": "ORD-{x5}"}, "placeholder"),
        ({"where": "attic"}, "where"),
    ],
)
def test_fact_specs_reject_what_could_not_be_planted_verbatim(
    fields: dict[str, str], fragment: str
) -> None:
    base = {"kind": "recall", "question": "q?", "value": "ORD-{d5}", "text": "order {value}"}
    with pytest.raises(ValueError, match=fragment.replace("{", r"\{").replace("}", r"\}")):
        FactSpec(**{**base, **fields})
