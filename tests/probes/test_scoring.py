"""Probe scoring on hand-built prompts: every outcome, and the normalisation rules."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.probes.model import Probe
from ctxbench.probes.scoring import (
    OUTCOMES,
    PromptScorer,
    PromptText,
    ScoringCache,
    TextIndex,
    answer_forms,
    held_paths,
    normalise,
    score_probes,
)
from ctxbench.trace import Message, ToolCall


def probe(*answers: str, stale: tuple[str, ...] = (), kind: str = "recall") -> Probe:
    return Probe("p", kind, "q?", tuple(answers), stale_answers=stale)


def outcome(p: Probe, *texts: str, files: dict[str, bytes] | None = None) -> str:
    messages = [Message("user", t) for t in texts]
    return PromptScorer(messages, files or {}).score(p)


# -- in_context --------------------------------------------------------------------------------


def test_an_answer_in_the_prompt_is_in_context() -> None:
    assert (
        outcome(probe("src/billing/rounding.py"), "I edited src/billing/rounding.py today")
        == "in_context"
    )


@pytest.mark.parametrize(
    "text",
    [
        "we chose ROUND_HALF_EVEN for totals",  # case
        "we chose   round_half_even\n for totals",  # whitespace
        'we chose "round_half_even" for totals',  # double quotes
        "we chose `round_half_even` for totals",  # backticks
        "we chose ‘round_half_even’ for totals",  # typographic quotes
    ],
)
def test_words_match_after_case_whitespace_and_quote_normalisation(text: str) -> None:
    assert outcome(probe("round_half_even"), text) == "in_context"


def test_multi_word_answers_match_across_line_breaks_and_quotes() -> None:
    assert (
        outcome(probe("patch the 'shared' helper"), "I will patch the\n  shared   helper.")
        == "in_context"
    )


@pytest.mark.parametrize(
    ("answer", "text", "expected"),
    [
        ("ORD-48213", "order ORD-48231 shipped", "lost"),  # a transposed id is another id
        ("ORD-48213", "order ORD-482131 shipped", "lost"),  # no prefix match inside a longer id
        ("12", "took 123 ms", "lost"),  # numbers are whole tokens
        ("842 ms", "p95 842 ms.", "in_context"),
        ("$1,284.50", "refund of $1,284.50 approved", "in_context"),
        (
            "$1,284.50",
            "refund of $1284.50 approved",
            "lost",
        ),  # numbers match exactly, not numerically
        ("KEY-7731", "key-7731 rotated", "lost"),  # ids with digits are case-sensitive
        ("v2.14.3", "release v2.14.31", "lost"),
    ],
)
def test_numbers_and_ids_match_exactly_as_whole_tokens(
    answer: str, text: str, expected: str
) -> None:
    assert outcome(probe(answer), text) == expected


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("华东区", "位于华东区的仓库"),
        ("12345 笔订单", "共有 12345 笔订单受到影响"),
        ("启用连接池预热", "决定启用连接池预热，因为"),
    ],
)
def test_chinese_answers_match_inside_unspaced_text(answer: str, text: str) -> None:
    assert outcome(probe(answer), text) == "in_context"


def test_chinese_numbers_still_match_exactly() -> None:
    assert outcome(probe("150 毫秒"), "阈值调整为 1150 毫秒") == "lost"


def test_answers_in_tool_call_arguments_and_replay_fields_count() -> None:
    call = Message(
        "assistant",
        "",
        tool_calls=(ToolCall("c1", "edit_file", json.dumps({"path": "src/a_b.py"})),),
    )
    thinking = Message(
        "assistant", "ok", replay={"reasoning_content": "the port is localhost:5432"}
    )
    scorer = PromptScorer([call, thinking], {})
    assert scorer.score(probe("src/a_b.py")) == "in_context"
    assert scorer.score(probe("localhost:5432")) == "in_context"


def test_any_accepted_answer_is_enough() -> None:
    assert (
        outcome(probe("decimal.Decimal", "integer minor units"), "use integer minor units")
        == "in_context"
    )


# -- via_reference -----------------------------------------------------------------------------


def test_a_cited_file_holding_the_answer_is_via_reference() -> None:
    files = {"op_snapshots/c1/step_004_sql.json": b'{"observation": "Q3 total: 912,455.10 EUR"}'}
    text = "Observation: Q3 tot... [truncated, full detail at: op_snapshots/c1/step_004_sql.json]"
    assert outcome(probe("912,455.10 EUR"), text, files=files) == "via_reference"


def test_a_file_the_prompt_does_not_cite_does_not_count() -> None:
    files = {"op_snapshots/c1/step_004_sql.json": b'{"observation": "Q3 total: 912,455.10 EUR"}'}
    assert outcome(probe("912,455.10 EUR"), "Observation: [truncated]", files=files) == "lost"


def test_json_snapshots_are_searched_in_their_decoded_strings() -> None:
    # JSON escapes quotes and line breaks; the decoded observation still holds the answer
    observation = 'E   AssertionError: "215.75" != 210.76\nmore'
    files = {"snap/step_1.json": json.dumps({"observation": observation}).encode()}
    text = "see snap/step_1.json"
    assert (
        outcome(probe('AssertionError: "215.75" != 210.76'), text, files=files) == "via_reference"
    )


def test_in_context_wins_over_via_reference() -> None:
    files = {"f.txt": b"value 9181"}
    assert outcome(probe("9181"), "f.txt and 9181", files=files) == "in_context"


# -- stale and lost ----------------------------------------------------------------------------


def test_only_the_superseded_value_present_is_stale() -> None:
    p = probe("postgres:16.2", stale=("postgres:14.3",), kind="superseded")
    assert outcome(p, "CI image pinned to postgres:14.3") == "stale"


def test_the_new_value_present_is_in_context_even_beside_the_old_one() -> None:
    p = probe("postgres:16.2", stale=("postgres:14.3",), kind="superseded")
    assert outcome(p, "pinned to postgres:14.3", "bumped to postgres:16.2") == "in_context"


def test_a_near_duplicate_of_a_stale_value_is_not_stale() -> None:
    p = probe("postgres:16.2", stale=("postgres:14.3",), kind="superseded")
    assert outcome(p, "pinned to postgres:14.38") == "lost"


def test_nothing_present_is_lost() -> None:
    assert outcome(probe("SKY-20240417"), "nothing relevant here") == "lost"


def test_score_probes_pairs_each_probe_with_one_outcome() -> None:
    probes = [Probe("a", "recall", "q", ("842 ms",)), Probe("b", "recall", "q", ("ORD-1",))]
    scored = score_probes(probes, [Message("tool", "p95 842 ms", tool_call_id="c")], {})
    assert [(p.id, o) for p, o in scored] == [("a", "in_context"), ("b", "lost")]
    assert {o for _, o in scored} <= set(OUTCOMES)
    assert score_probes([], [], {}) == []


def test_normalise_folds_quotes_and_whitespace() -> None:
    assert normalise('  A\t"b"\n\nC ') == "a b c"
    assert normalise("A  B", keep_case=True) == "A B"
    assert TextIndex.of("x `y` z").has("y")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from(list("ab Σσ\n\t\"'“xİ.\u2028\x1c\u00a01")), max_size=8)))
def test_an_index_of_lines_is_the_index_of_their_joined_text(lines: list[str]) -> None:
    assert TextIndex.of_lines(lines) == TextIndex.of("\n".join(lines))


TEXTS = st.text(st.sampled_from(list("ab Σσ\n\t\"'“xİ.\u2028\x1c\u00a01")), max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TEXTS, st.booleans()), max_size=6), st.integers(0, 6))
def test_a_cached_prompt_text_is_the_text_built_from_nothing(
    texts: list[tuple[str, bool]], cut: int
) -> None:
    """The cache's text of a prompt (each message's line normalised once, shared by the
    prompts holding it) is :meth:`PromptText.of` of it, for a prompt and any prefix of it."""
    messages = [
        Message("assistant", t, tool_calls=(ToolCall("c", "run", t),))
        if call
        else Message("user", t)
        for t, call in texts
    ]
    cache = ScoringCache()
    for prompt in (messages[:cut], messages, messages[:cut]):
        cached, built = cache.text(prompt), PromptText.of(prompt)
        assert (cached.raw, cached.index, cached.raw_folded) == (
            built.raw,
            built.index,
            built.raw_folded,
        )


def test_a_prompt_s_text_is_built_once_and_long_lines_are_normalised_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No line is too long to keep: a 100 KB tool output is normalised once for every prompt
    that shows it, and the same list of messages is the same text."""
    from ctxbench.probes import scoring

    calls: list[int] = []

    def counted(text: str, *, keep_case: bool = False) -> str:
        calls.append(len(text))
        return normalise(text, keep_case=keep_case)

    monkeypatch.setattr(scoring, "normalise", counted)
    long = Message("tool", "ORD-4821 " * 12_000, tool_call_id="c")
    system = Message("system", "be brief")
    cache = ScoringCache()
    first = cache.text([system, long])
    assert cache.text([system, long]) is first
    grown = cache.text([system, long, Message("user", "next")])
    assert sorted(calls) == [4, 8, 108_000]  # three messages, each normalised once
    assert PromptScorer([system, long], {}, cache).score(probe("ORD-4821")) == "in_context"
    assert grown.index.has("next") and not first.index.has("next")
    assert sum(n > 100_000 for n in calls) == 1  # answers are normalised, never the line again


PATHS = st.lists(
    st.builds(
        lambda folder, name: f"{folder}/{name}.json",
        st.sampled_from(["snapshots/t", "snapshots/u", "s"]),
        st.text("ab1_", min_size=1, max_size=4),
    ),
    max_size=8,
    unique=True,
)


@given(PATHS, st.lists(st.sampled_from(["snapshots/t/", "a.json", "b", "x ", "1_"]), max_size=30))
def test_the_paths_a_text_holds_are_the_ones_found_in_it(
    paths: list[str], pieces: list[str]
) -> None:
    text = "".join(pieces) + " ".join(paths[::2])
    assert held_paths(paths, text) == [p for p in paths if p in text]


def test_a_text_citing_the_common_start_everywhere_is_searched_path_by_path() -> None:
    paths = [f"snapshots/t/{i:03d}.json" for i in range(100)]
    text = " ".join(["snapshots/t/"] * 70) + " snapshots/t/042.json"  # over 64 starts
    assert held_paths(paths, text) == ["snapshots/t/042.json"]


# -- matching that reads like a person -----------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("/home/u/repo/lib/x/annotation.ex", "Edited lib/x/annotation.ex to add the hook."),
        ("/home/u/repo/lib/x/annotation.ex", "see x/annotation.ex"),
        ("./src/app/parser.py", "the bug is in src/app/parser.py"),
        ("src/app/parser.py", "cat /testbed/src/app/parser.py"),
        ("cd /testbed && python reproduce.py 2>&1", "Ran python reproduce.py: it fails."),
        ("pytest tests/test_io.py > /dev/null 2>&1", "then pytest tests/test_io.py again"),
        (
            "Error: unsupported operand type(s) for +: 'int' and 'str'",
            "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        ),
        (
            "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
            "fixed the unsupported operand type(s) for +: 'int' and 'str' error",
        ),
    ],
)
def test_the_same_fact_in_another_form_is_in_context(answer: str, text: str) -> None:
    assert outcome(probe(answer), text) == "in_context"


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("/home/u/repo/lib/x/annotation.ex", "the file annotation.ex"),  # one part: ambiguous
        ("lib/x/annotation.ex", "lib/x/annotation.exs"),  # still whole tokens
        ("src/app/parser.py", "src/app/parser_v2.py"),
        ("cd /testbed && python reproduce.py", "python reproduce_v2.py"),
        ("ValueError: bad value", "bad value"),  # a message too short to stand alone
    ],
)
def test_other_files_commands_and_short_messages_are_not_the_same_fact(
    answer: str, text: str
) -> None:
    assert outcome(probe(answer), text) == "lost"


def test_answer_forms_lists_the_answer_first_then_its_other_forms() -> None:
    assert answer_forms("/a/b/c.py") == ("/a/b/c.py", "b/c.py")
    assert answer_forms("cd /x && make test 2>&1") == ("cd /x && make test 2>&1", "make test")
    assert answer_forms("plain words") == ("plain words",)


def _bare(answer: str, text: str) -> bool:
    return PromptScorer([Message("user", text)], {}).is_bare(probe(answer))


def test_an_answer_kept_only_as_a_bare_list_item_is_marked_bare() -> None:
    summary = "## Files\n- lib/x/annotation.ex\n- `src/app.py`\n* ORD-4821"
    assert _bare("lib/x/annotation.ex", summary)
    assert _bare("src/app.py", summary)
    assert _bare("ORD-4821", summary)


def test_an_answer_with_words_around_it_is_not_bare() -> None:
    assert not _bare("lib/x/annotation.ex", "- Edited lib/x/annotation.ex to add the hook")
    assert not _bare("ORD-4821", "- ORD-4821\nThe refund for ORD-4821 was issued.")
    assert not _bare("ORD-4821", "ORD-4821")  # not a list item
    assert not _bare("ORD-4821", "- nothing here")
