"""Tool-call arguments: the kind of each JSON-Schema parameter and a seeded value for it.

The kind comes from the parameter's name and schema (``path``, ``file_path`` -> path;
``command`` -> command; ``sql`` -> sql; ``*_id`` -> id; ``enum`` -> one of its values...), so any
tool a scenario declares gets plausible arguments without per-tool code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from random import Random
from typing import Any

from ctxbench.synth import vocabulary as vocab
from ctxbench.synth.content import hex_id, pick, snake

ARGUMENT_KINDS: tuple[str, ...] = (
    "path",
    "command",
    "sql",
    "url",
    "id",
    "query",
    "code",
    "number",
    "bool",
    "enum",
    "text",
)

_BY_NAME = {
    "path": "path",
    "file": "path",
    "file_path": "path",
    "filepath": "path",
    "filename": "path",
    "dir": "path",
    "directory": "path",
    "output_path": "path",
    "target": "path",
    "command": "command",
    "cmd": "command",
    "script": "command",
    "shell": "command",
    "sql": "sql",
    "statement": "sql",
    "sql_query": "sql",
    "url": "url",
    "link": "url",
    "href": "url",
    "query": "query",
    "q": "query",
    "search": "query",
    "pattern": "query",
    "keywords": "query",
    "topic": "query",
    "code": "code",
    "source": "code",
    "python": "code",
    "id": "id",
}


def argument_kind(name: str, schema: Mapping[str, Any]) -> str:
    """The kind of value a parameter takes (one of :data:`ARGUMENT_KINDS`)."""
    if schema.get("enum"):
        return "enum"
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "bool"
    key = name.lower()
    if key in _BY_NAME:
        return _BY_NAME[key]
    if key.endswith("_id") or key.endswith("_ids"):
        return "id"
    if key.endswith("_path") or key.endswith("_file"):
        return "path"
    if key.endswith("_url"):
        return "url"
    return "text"


def random_value(kind: str, name: str, schema: Mapping[str, Any], rng: Random) -> Any:
    """A plausible value for a parameter of ``kind``."""
    if kind == "enum":
        return rng.choice(list(schema["enum"]))
    if kind == "number":
        minimum, maximum = schema.get("minimum"), schema.get("maximum")  # null = absent
        low = int(minimum) if minimum is not None else 1
        high = int(maximum) if maximum is not None else max(low + 1, 200)
        return rng.randint(min(low, high), high)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "path":
        return random_path(rng)
    if kind == "command":
        return random_command(rng)
    if kind == "sql":
        return random_sql(rng)
    if kind == "url":
        return f"https://{rng.choice(vocab.DOMAINS)}/{rng.choice(vocab.TECH_NOUNS)}/{snake(rng).replace('_', '-')}"
    if kind == "id":
        stem = name[:-3] if name.endswith("_id") else "obj"
        return f"{stem[:3]}_{hex_id(rng, 10)}"
    if kind == "query":
        return " ".join(rng.choices(vocab.TECH_NOUNS + vocab.VERBS, k=rng.randint(2, 4)))
    if kind == "code":
        return f"df = load_{rng.choice(vocab.TECH_NOUNS)}s()\nprint(df.groupby('{rng.choice(vocab.TECH_NOUNS)}').size().head({rng.randint(5, 20)}))"
    return " ".join(rng.choices(vocab.PROSE_WORDS[:120], k=rng.randint(4, 10)))


def random_path(rng: Random) -> str:
    root = rng.choice(("src", "lib", "app", "tests", "services", "pkg"))
    ext = rng.choice(("py", "py", "py", "ts", "go", "yaml", "sql", "md"))
    name = f"test_{snake(rng)}" if root == "tests" else snake(rng)
    return f"{root}/{rng.choice(vocab.TECH_NOUNS)}/{name}.{ext}"


def random_command(rng: Random) -> str:
    return pick(
        rng,
        lambda: f"pytest {random_path(rng)} -q -x",
        lambda: f"grep -rn {snake(rng)} src/",
        lambda: f"git log --oneline -n {rng.randint(5, 30)}",
        lambda: (
            f"ls -la {rng.choice(('src', 'tests', 'config', 'scripts'))}/{rng.choice(vocab.TECH_NOUNS)}"
        ),
        lambda: f"python -m {rng.choice(vocab.TECH_NOUNS)}.{snake(rng, 1)} --dry-run",
        lambda: f"kubectl logs deploy/{rng.choice(vocab.SERVICES)} --since={rng.randint(5, 90)}m",
        lambda: f"cat {random_path(rng)}",
        lambda: f"git diff --stat HEAD~{rng.randint(1, 6)}",
    )


def random_sql(rng: Random) -> str:
    table = rng.choice(vocab.SQL_TABLES)
    col = rng.choice(("status", "region", "city", "created_at", "amount"))
    if rng.random() < 0.5:
        return f"SELECT * FROM {table} WHERE {col} IS NOT NULL ORDER BY 1 LIMIT {rng.choice((50, 100, 200, 500))}"
    other = rng.choice(vocab.SQL_TABLES)
    return (
        f"SELECT t.{col}, COUNT(*) AS n, SUM(o.amount) AS total FROM {table} t JOIN {other} o "
        f"ON o.{table.rstrip('s')}_id = t.id GROUP BY t.{col} ORDER BY total DESC"
    )


def call_arguments(
    properties: Mapping[str, Any], required: list[str], rng: Random, fixed: Mapping[str, Any]
) -> str:
    """The JSON arguments of one call: required parameters, some optional ones, and ``fixed``."""
    args: dict[str, Any] = {}
    for name, schema in properties.items():
        schema = schema if isinstance(schema, Mapping) else {}
        if name in fixed:
            args[name] = fixed[name]
        elif name in required or rng.random() < 0.4:
            args[name] = random_value(argument_kind(name, schema), name, schema, rng)
    for name, value in fixed.items():
        args.setdefault(name, value)
    return json.dumps(args, ensure_ascii=False)
