"""The answerer client: cache first, then the endpoint through the summarizer client's
transport (its trust rules), with a meter, a budget and clear errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxbench.answering.client import Answerer, AnswererError, AnswererSettings, parse_answerer
from ctxbench.errors import ConfigError
from tests.answering.server import Scripted, running, scripted_server

QUESTION = "Answer ...\nQuestion: Which port?"


@pytest.fixture
def server() -> Iterator[Scripted]:
    yield from running(scripted_server({"Which port?": ["8471"]}))


@pytest.fixture
def other() -> Iterator[Scripted]:
    yield from running(scripted_server())


def client(server: Scripted, tmp_path: Path, **changes: Any) -> Answerer:
    settings = AnswererSettings(
        model="m", base_url=server.url, cache_dir=str(tmp_path / "cache"), backoff=0.0
    )
    return Answerer(AnswererSettings(**{**settings.__dict__, **changes}))


def body(answerer: Answerer, context: str = "port 8471") -> dict[str, Any]:
    return answerer.body(
        [{"role": "user", "content": context}, {"role": "user", "content": QUESTION}], []
    )


def test_model_at_url_is_split_at_the_last_at_before_the_scheme() -> None:
    assert parse_answerer("qwen2.5:0.5b@http://127.0.0.1:11434/v1/") == (
        "qwen2.5:0.5b",
        "http://127.0.0.1:11434/v1",
    )
    assert parse_answerer("org/m@rev@https://h/v1") == ("org/m@rev", "https://h/v1")
    for bad in ("m", "@http://h/v1", "m@ftp://h"):
        with pytest.raises(ConfigError, match="MODEL@URL"):
            parse_answerer(bad)


def test_the_body_sends_temperature_0_and_a_seed_by_default(
    server: Scripted, tmp_path: Path
) -> None:
    answerer = client(server, tmp_path)
    reply = answerer.ask(body(answerer))
    assert reply.content == "8471"
    sent = server.bodies[0]
    assert (sent["model"], sent["temperature"], sent["seed"]) == ("m", 0.0, 0)
    assert "tools" not in sent


def test_a_second_ask_is_answered_from_the_cache_without_a_request(
    server: Scripted, tmp_path: Path
) -> None:
    first = client(server, tmp_path)
    reply = first.ask(body(first))
    again = client(server, tmp_path)  # a new process: only the disk is shared
    assert again.ask(body(again)) == reply
    assert len(server.bodies) == 1
    assert (again.meter.requests, again.meter.cache_hits) == (0, 1)
    assert first.meter.prompt_tokens == reply.prompt_tokens > 0


def test_the_cache_key_is_what_decides_the_answer_not_where_it_is_served(
    server: Scripted, other: Scripted, tmp_path: Path
) -> None:
    answerer = client(server, tmp_path)
    answerer.ask(body(answerer))
    elsewhere = client(other, tmp_path)  # the same model served at another address
    elsewhere.ask(body(elsewhere))
    assert other.bodies == []
    for changed in (client(server, tmp_path, seed=1), client(server, tmp_path, temperature=0.5)):
        changed.ask(body(changed))
    other_prompt = client(server, tmp_path)
    assert other_prompt.ask(body(other_prompt, "port 9999")).content == "unknown"
    other_model = client(server, tmp_path, model="m2")
    other_model.ask(body(other_model))
    assert len(server.bodies) == 5


def test_offline_a_cache_miss_is_an_error_and_sends_nothing(
    server: Scripted, tmp_path: Path
) -> None:
    answerer = client(server, tmp_path, offline=True)
    with pytest.raises(AnswererError, match="no cached answer") as caught:
        answerer.ask(body(answerer))
    assert caught.value.kind == "offline"
    assert server.bodies == []


def test_a_slow_endpoint_times_out_with_a_clear_error(server: Scripted, tmp_path: Path) -> None:
    server.mode, server.delay = "slow", 1.5
    answerer = client(server, tmp_path, timeout=0.3, max_retries=0)
    with pytest.raises(AnswererError, match=r"no complete response .* within 0.3 s") as caught:
        answerer.ask(body(answerer))
    assert caught.value.kind == "timeout"
    assert "answerer-timeout" in str(caught.value)


def test_a_failing_endpoint_is_retried_then_named(server: Scripted, tmp_path: Path) -> None:
    server.mode = "fail"
    answerer = client(server, tmp_path, max_retries=2)
    with pytest.raises(AnswererError, match=r"HTTP 500 from .*/v1/chat/completions"):
        answerer.ask(body(answerer))
    assert len(server.bodies) == 3
    assert not list((tmp_path / "cache").rglob("*.json"))  # a failure is not cached


def test_a_redirect_is_refused_and_the_key_never_reaches_its_target(
    server: Scripted, other: Scripted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANSWER_KEY", "sk-secret-0123456789")
    server.mode, server.redirect = "redirect", other.url + "/chat/completions"
    answerer = client(server, tmp_path, api_key_env="ANSWER_KEY")
    with pytest.raises(AnswererError, match="redirects are not followed") as caught:
        answerer.ask(body(answerer))
    assert caught.value.kind == "http"
    assert server.auth == ["Bearer sk-secret-0123456789"]
    assert other.bodies == []
    assert "sk-secret" not in str(caught.value)


def test_the_key_goes_as_a_bearer_header_and_never_into_the_cache(
    server: Scripted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANSWER_KEY", "sk-secret-0123456789")
    server.facts = {"Which port?": ["sk-secret-0123456789"]}  # a server echoing the key
    answerer = client(server, tmp_path, api_key_env="ANSWER_KEY")
    reply = answerer.ask(body(answerer, "sk-secret-0123456789"))
    assert server.auth == ["Bearer sk-secret-0123456789"]
    assert "sk-secret" not in reply.content
    for path in (tmp_path / "cache").rglob("*.json"):
        assert "sk-secret" not in path.read_text("utf-8")


def test_an_unset_key_variable_is_an_error_before_any_request(
    server: Scripted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANSWER_KEY", raising=False)
    answerer = client(server, tmp_path, api_key_env="ANSWER_KEY")
    with pytest.raises(AnswererError, match="ANSWER_KEY is not set") as caught:
        answerer.ask(body(answerer))
    assert caught.value.kind == "auth"
    assert server.bodies == []


def test_max_cost_stops_sending_once_the_meter_reaches_it(server: Scripted, tmp_path: Path) -> None:
    answerer = client(server, tmp_path, max_cost=0.000001, price_in=1000.0)
    answerer.ask(body(answerer))
    assert answerer.meter.cost_usd > 0.000001
    with pytest.raises(AnswererError, match="--max-cost") as caught:
        answerer.ask(body(answerer, "another prompt"))
    assert caught.value.kind == "budget"
    assert len(server.bodies) == 1
    assert answerer.ask(body(answerer)).content == "8471"  # cached answers stay free


def test_a_reply_without_choices_is_malformed_and_not_cached(
    server: Scripted, tmp_path: Path
) -> None:
    server.mode = "malformed"
    answerer = client(server, tmp_path)
    with pytest.raises(AnswererError, match=r"expected choices\[0\].message") as caught:
        answerer.ask(body(answerer))
    assert caught.value.kind == "malformed"
    assert not list((tmp_path / "cache").rglob("*.json"))
