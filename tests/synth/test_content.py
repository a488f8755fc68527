"""Content classes look and tokenize like the real thing: the density gap between classes is
what makes a len/4 estimate drift, so the tests measure it with the real o200k tokenizer."""

from __future__ import annotations

import base64
import json
import random
import zlib

import pytest

from ctxbench.counting import get_counter
from ctxbench.counting.content_class import classify
from ctxbench.synth.content import CONTENT_CLASSES, TAXONOMY, image_part, render
from ctxbench.synth.facts import draw_value, expand, near_duplicate

#: chars per o200k token: real corpora measure prose 4.45, code 4.37, json 3.14, logs 2.34,
#: tables 2.41, Chinese 1.49 (TOKENIZERS.md 4.2); generated text must land near them
DENSITY = {
    "prose": (3.9, 5.0),
    "code": (3.8, 5.0),
    "json": (2.5, 3.4),
    "logs": (2.0, 2.8),
    "sql_table": (2.0, 2.8),
    "csv": (1.6, 2.8),
    "cjk": (1.2, 1.9),
}


@pytest.mark.parametrize("kind", CONTENT_CLASSES)
def test_render_reaches_the_requested_size_and_keeps_inserts_verbatim(kind: str) -> None:
    rng = random.Random(kind)
    inserts = ["planted fact ORD-48213 was seen", "另一条事实 942 毫秒"]
    text = render(kind, rng, 5000, inserts)
    assert 4000 <= len(text) <= 9000
    for line in inserts:
        assert line in text


@pytest.mark.parametrize("kind", CONTENT_CLASSES)
def test_render_is_a_pure_function_of_the_rng(kind: str) -> None:
    assert render(kind, random.Random(3), 2000) == render(kind, random.Random(3), 2000)
    assert render(kind, random.Random(3), 2000) != render(kind, random.Random(4), 2000)


@pytest.mark.parametrize("kind", CONTENT_CLASSES)
def test_token_density_matches_real_text_of_the_class(kind: str) -> None:
    counter = get_counter("tiktoken:o200k_base")
    rng = random.Random(f"density:{kind}")
    texts = [render(kind, rng, 4000) for _ in range(20)]
    ratio = sum(map(len, texts)) / sum(counter.count(t) for t in texts)
    low, high = DENSITY[kind]
    assert low <= ratio <= high, f"{kind}: {ratio:.2f} chars/token"


def test_json_output_parses_and_carries_inserts_as_notes() -> None:
    text = render("json", random.Random(1), 3000, ["note one", "note two"])
    data = json.loads(text)
    notes = [n for record in data["data"] for n in record.get("notes", [])]
    assert sorted(notes) == ["note one", "note two"]


@pytest.mark.parametrize("kind", ["prose", "json", "logs", "csv", "cjk"])
def test_the_shared_classifier_recognises_each_class(kind: str) -> None:
    expected = TAXONOMY.get(kind, kind)
    hits = sum(classify(render(kind, random.Random(i), 3000)) == expected for i in range(10))
    assert hits >= 9


def test_image_parts_are_valid_deterministic_pngs() -> None:
    part = image_part(random.Random(0), 40, 30, "low")
    url = part.data["image_url"]["url"]
    png = base64.b64decode(url.split(",", 1)[1])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    idat = png[png.index(b"IDAT") + 4 : png.index(b"IEND") - 8]
    assert len(zlib.decompress(idat)) == 30 * (1 + 40 * 3)
    assert part == image_part(random.Random(0), 40, 30, "low")
    assert part.data["image_url"]["detail"] == "low"


def test_value_patterns_expand_every_placeholder() -> None:
    value = expand("ORD-{d5}/{h4}/{u2}{l3}/{one:a|b}", random.Random(0))
    prefix, hexpart, letters, choice = value.split("/")
    assert (
        prefix.startswith("ORD-") and len(prefix) == 9 and prefix[4:].isdigit() and prefix[4] != "0"
    )
    assert len(hexpart) == 4 and all(c in "0123456789abcdef" for c in hexpart)
    assert letters[:2].isupper() and letters[2:].islower()
    assert choice in ("a", "b")


def test_drawn_values_never_repeat_or_contain_each_other() -> None:
    rng, taken = random.Random(0), set[str]()
    values = [draw_value("T-{d2}", rng, taken) for _ in range(30)]
    assert len(set(values)) == 30


@pytest.mark.parametrize("value", ["ORD-48213", "$1,284.50", "v2.14.3", "842 ms", "2025-06-24"])
def test_a_near_duplicate_differs_by_one_edit_and_is_not_accepted(value: str) -> None:
    from ctxbench.probes.scoring import TextIndex

    for seed in range(20):
        dup = near_duplicate(value, random.Random(seed))
        assert dup is not None and dup != value and len(dup) == len(value)
        assert not TextIndex.of(f"see {dup} here").has(value)


def test_values_without_digits_get_no_near_duplicate() -> None:
    assert near_duplicate("orjson", random.Random(0)) is None
