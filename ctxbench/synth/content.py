"""Seeded tool-output text by content class: prose, code, JSON, logs, SQL tables, CSV, Chinese.

Each class imitates the real thing closely enough that tokenizers see it as they see real
output: logs and tables are dense with timestamps, ids and aligned columns (about 2.3-2.5
characters per o200k token), JSON about 3, code and English prose about 4.4, Chinese about
1.5. That density is what makes a ``len//4`` estimate drift, so it is the point of the class,
not decoration. ``benchmarks/bench_synth.py`` measures it.

All randomness comes from the ``random.Random`` passed in; nothing here reads a clock.
"""

from __future__ import annotations

import base64
import itertools
import json
import struct
import zlib
from collections.abc import Callable, Sequence
from random import Random
from typing import Any, TypeVar

from ctxbench.synth import vocabulary as vocab
from ctxbench.trace import Part

T = TypeVar("T")

CONTENT_CLASSES: tuple[str, ...] = ("prose", "code", "json", "logs", "sql_table", "csv", "cjk")

#: generator class -> the shared taxonomy of :mod:`ctxbench.counting.content_class`
#: (both table flavours are "tables" there)
TAXONOMY: dict[str, str] = {"sql_table": "tables", "csv": "tables"}

_HEX = "0123456789abcdef"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def render(kind: str, rng: Random, chars: int, inserts: Sequence[str] = ()) -> str:
    """About ``chars`` characters of ``kind`` output with each of ``inserts`` placed in it
    verbatim (as a log line, a code comment, a JSON field, a NOTICE line...)."""
    try:
        generator = _GENERATORS[kind]
    except KeyError:
        raise ValueError(
            f"unknown content class {kind!r}; known: {', '.join(CONTENT_CLASSES)}"
        ) from None
    return generator(rng, max(chars, 40), list(inserts))


# -- small pieces ------------------------------------------------------------------------------


def pick(rng: Random, *makers: Callable[[], T]) -> T:
    """One of ``makers``, chosen uniformly, called: only the chosen one draws from ``rng``, so
    the draws are those of the ``randrange`` if-chain it stands for."""
    return makers[rng.randrange(len(makers))]()


def hex_id(rng: Random, n: int) -> str:
    return "".join(rng.choices(_HEX, k=n))


def snake(rng: Random, parts: int = 2) -> str:
    pools = (vocab.VERBS, vocab.TECH_NOUNS, vocab.ADJECTIVES)
    words = [rng.choice(vocab.TECH_NOUNS)]
    for _ in range(parts - 1):
        words.append(rng.choice(pools[rng.randrange(3)]))
    return "_".join(words)


def camel(rng: Random) -> str:
    return rng.choice(vocab.TECH_NOUNS).capitalize() + rng.choice(vocab.TECH_NOUNS).capitalize()


class Clock:
    """A seeded, strictly increasing fake time for log lines and records (never the real clock)."""

    def __init__(self, rng: Random) -> None:
        self._rng = rng
        self.seconds = float(rng.randrange(0, 86400 * 300))
        self.year = 2024 + rng.randrange(2)

    def tick(self, max_ms: int = 4000) -> None:
        self.seconds += self._rng.randrange(1, max_ms) / 1000.0

    def later(self) -> str:
        """A timestamp up to 15 minutes after the previous one, as a SQL value."""
        self.tick(900_000)
        return self.sql()

    def _parts(self) -> tuple[int, int, int, int, int, float]:
        day_of_year, rest = divmod(self.seconds, 86400)
        month = min(int(day_of_year // 28), 11) + 1
        day = int(day_of_year % 28) + 1
        hours, rest = divmod(rest, 3600)
        minutes, secs = divmod(rest, 60)
        return self.year, month, day, int(hours), int(minutes), secs

    def iso(self, millis: bool = True) -> str:
        y, mo, d, h, mi, s = self._parts()
        if millis:
            return f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:06.3f}Z"
        return f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{int(s):02d}Z"

    def sql(self) -> str:
        y, mo, d, h, mi, s = self._parts()
        return f"{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{int(s):02d}+00"

    def clf(self) -> str:
        y, mo, d, h, mi, s = self._parts()
        return f"{d:02d}/{_MONTHS[mo - 1]}/{y}:{h:02d}:{mi:02d}:{int(s):02d} +0000"


def _splice(rng: Random, lines: list[str], extra: Sequence[str], *, start: int = 0) -> list[str]:
    """Insert ``extra`` lines at seeded positions at or after ``start``."""
    for line in extra:
        lines.insert(rng.randint(min(start, len(lines)), len(lines)), line)
    return lines


# -- prose -------------------------------------------------------------------------------------


#: Zipf-like weights: function words ("the", "of") are most of real prose
_PROSE_CUM_WEIGHTS = tuple(
    itertools.accumulate(1.0 / (rank + 8) for rank in range(len(vocab.PROSE_WORDS)))
)


def sentence(rng: Random) -> str:
    n = rng.randint(7, 24)
    words = rng.choices(vocab.PROSE_WORDS, cum_weights=_PROSE_CUM_WEIGHTS, k=n)
    for i in range(n):
        roll = rng.random()
        if roll < 0.14:
            words[i] = rng.choice(vocab.TECH_NOUNS)
        elif roll < 0.24:
            words[i] = rng.choice(vocab.RARE_WORDS)
        elif roll < 0.27:
            words[i] = f"`{snake(rng)}`"
        elif roll < 0.30:
            words[i] = rng.choice(
                (
                    str(rng.randrange(2, 2000)),
                    f"{rng.uniform(0, 100):.1f}%",
                    f"({rng.choice(vocab.RARE_WORDS)})",
                )
            )
        elif roll < 0.37 and i < n - 1:
            words[i] += rng.choice((",", ",", ";", " -"))
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice((".", ".", ".", ".", "?", ":"))


def _prose(rng: Random, chars: int, inserts: list[str]) -> str:
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        if rng.random() < 0.12:
            heading = " ".join(
                w.capitalize()
                for w in rng.choices(vocab.TECH_NOUNS + vocab.PROSE_WORDS[:60], k=rng.randint(2, 5))
            )
            block = f"{'#' * rng.randint(1, 3)} {heading}"
        else:
            block = " ".join(sentence(rng) for _ in range(rng.randint(2, 6)))
            if rng.random() < 0.15:
                block += f" [{rng.randint(1, 40)}]"
        paragraphs.append(block)
        size += len(block) + 2
    return "\n\n".join(_splice(rng, paragraphs, inserts, start=1))


# -- code --------------------------------------------------------------------------------------


def _function(rng: Random, indent: str) -> list[str]:
    verb, noun, other = (
        rng.choice(vocab.VERBS),
        rng.choice(vocab.TECH_NOUNS),
        rng.choice(vocab.TECH_NOUNS),
    )
    arg = f"{noun}_id"
    flag = rng.choice(vocab.ADJECTIVES)
    ret = rng.choice(vocab.CODE_TYPES)
    inner = indent + "    "
    lines = [
        f"{indent}def {verb}_{noun}(self, {arg}: int, *, {flag}: bool = False) -> {ret}:",
        f'{inner}"""{verb.capitalize()} the {noun} and its {other} records."""',
    ]
    body: tuple[Callable[[], list[str]], ...] = (
        lambda: [
            f"{inner}if not {arg}:",
            f'{inner}    raise ValueError(f"missing {noun} id: {{{arg}!r}}")',
        ],
        lambda: [
            f"{inner}for item in self._{other}s.get({arg}, []):",
            f"{inner}    item.{rng.choice(vocab.VERBS)}({flag}={flag})",
        ],
        lambda: [
            f"{inner}{other} = self.{snake(rng)}({arg}, limit={rng.choice((10, 50, 100, 500))})"
        ],
        lambda: [f'{inner}logger.debug("{verb} {noun} %s in %.2fms", {arg}, elapsed * 1000)'],
        lambda: [
            f"{inner}try:",
            f"{inner}    result = await self._client.{verb}({arg})",
            f"{inner}except {rng.choice(vocab.EXCEPTIONS)} as exc:",
            f"{inner}    raise {camel(rng)}Error(str(exc)) from exc",
        ],
        lambda: [f"{inner}# {sentence(rng).rstrip('.?:')}"],
        lambda: [
            f"{inner}{noun}_map: dict[str, {camel(rng)}] = {{k: v for k, v in {other}.items() if v.{flag}}}"
        ],
        lambda: [
            f'{inner}self._metrics.increment("{noun}.{verb}", tags={{"{flag}": str({flag})}})'
        ],
        lambda: [
            f"{inner}{snake(rng)} = {rng.choice(('None', '0', '[]', '{}', 'False', repr(snake(rng))))}"
        ],
    )
    for _ in range(rng.randint(3, 11)):
        lines += pick(rng, *body)
    lines.append(
        f"{inner}return {rng.choice(('result', other, 'None', f'{noun}_map', 'len(' + other + ')'))}"
    )
    return lines


def _code(rng: Random, chars: int, inserts: list[str]) -> str:
    lines = ["from __future__ import annotations", "", "import logging"]
    for _ in range(rng.randint(2, 5)):
        lines.append(
            f"from {rng.choice(vocab.TECH_NOUNS)}.{snake(rng, 1)} import {camel(rng)}, {snake(rng)}"
        )
    lines += ["", "logger = logging.getLogger(__name__)", ""]
    size = sum(len(line) + 1 for line in lines)
    while size < chars:
        block = [
            "",
            "",
            f"class {camel(rng)}({rng.choice(('Base', 'object', camel(rng)))}):",
            f'    """{sentence(rng)}"""',
            "",
        ]
        for _ in range(rng.randint(1, 4)):
            block += [*_function(rng, "    "), ""]
        lines += block
        size += sum(len(line) + 1 for line in block)
    header = len(lines) // 6
    _splice(rng, lines, [f"# NOTE: {text}" for text in inserts], start=header)
    if rng.random() < 0.5:
        width = len(str(len(lines)))
        lines = [f"{i:>{width}}\t{line}" for i, line in enumerate(lines, start=1)]
    return "\n".join(lines)


# -- JSON --------------------------------------------------------------------------------------


def _record(rng: Random, clock: Clock) -> dict[str, Any]:
    clock.tick(600_000)
    first, last = rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES)
    record: dict[str, Any] = {
        "id": f"{rng.choice(('evt', 'obj', 'rec', 'txn'))}_{hex_id(rng, 14)}",
        "created_at": clock.iso(millis=False),
        "status": rng.choice(vocab.STATUSES),
        "amount": round(rng.uniform(1, 5000), 2),
        "currency": rng.choice(vocab.CURRENCIES),
        "customer": {
            "id": rng.randrange(1000, 999999),
            "name": f"{first} {last}",
            "email": f"{first.lower()}.{last.lower()}@example.{rng.choice(('com', 'org', 'net'))}",
            "city": rng.choice(vocab.CITIES),
        },
    }
    if rng.random() < 0.6:
        record["items"] = [
            {
                "sku": f"SKU-{rng.randrange(10000, 99999)}",
                "qty": rng.randint(1, 9),
                "unit_price": round(rng.uniform(1, 400), 2),
            }
            for _ in range(rng.randint(1, 4))
        ]
    if rng.random() < 0.5:
        record["tags"] = rng.sample(vocab.TECH_NOUNS, rng.randint(1, 3))
    if rng.random() < 0.4:
        record["metadata"] = {
            snake(rng): rng.choice((True, False, rng.randrange(100), hex_id(rng, 8)))
            for _ in range(rng.randint(1, 3))
        }
    return record


def _json(rng: Random, chars: int, inserts: list[str]) -> str:
    clock = Clock(rng)
    indent = 2 if rng.random() < 0.5 else None
    records: list[dict[str, Any]] = []
    size = 60
    while size < chars:
        record = _record(rng, clock)
        records.append(record)
        size += len(json.dumps(record, ensure_ascii=False, indent=indent))
    for text in inserts:
        rng.choice(records).setdefault("notes", []).append(text)
    payload = {
        "object": "list",
        "total": len(records),
        "page": 1,
        "has_more": rng.random() < 0.3,
        "data": records,
    }
    return json.dumps(payload, ensure_ascii=False, indent=indent)


# -- logs --------------------------------------------------------------------------------------


def _app_message(rng: Random) -> str:
    noun = rng.choice(vocab.TECH_NOUNS)
    return pick(
        rng,
        lambda: (
            f"request completed method={rng.choice(('GET', 'GET', 'POST', 'PUT'))} path={rng.choice(vocab.HTTP_PATHS)}/{rng.randrange(1, 99999)} "
            f"status={rng.choice((200, 200, 200, 201, 204, 400, 404, 500, 503))} duration_ms={rng.randrange(1, 3000)} request_id={hex_id(rng, 16)}"
        ),
        lambda: (
            f"retrying {noun} batch attempt={rng.randint(1, 5)}/5 backoff_ms={rng.choice((100, 200, 400, 800, 1600))} cause={rng.choice(vocab.EXCEPTIONS)}"
        ),
        lambda: (
            f"cache {rng.choice(('hit', 'miss', 'miss', 'evict'))} key={noun}:{rng.randrange(1, 99999)} ttl={rng.choice((30, 60, 300, 3600))}s"
        ),
        lambda: (
            f"pool stats active={rng.randrange(0, 64)} idle={rng.randrange(0, 32)} waiting={rng.randrange(0, 12)} max=64"
        ),
        lambda: (
            f"processed {rng.randrange(1, 20000)} {noun} records in {rng.uniform(0.01, 30):.3f}s lag={rng.randrange(0, 9000)}ms partition={rng.randrange(0, 32)}"
        ),
        lambda: (
            f"{noun} {hex_id(rng, 8)}-{hex_id(rng, 4)}-{hex_id(rng, 4)} state {rng.choice(vocab.STATUSES)} -> {rng.choice(vocab.STATUSES)}"
        ),
        lambda: (
            f"gc pause {rng.uniform(0.1, 90):.1f}ms heap_used={rng.randrange(100, 4000)}MB heap_max=4096MB"
        ),
    )


def _logs(rng: Random, chars: int, inserts: list[str]) -> str:
    clock = Clock(rng)
    access = rng.random() < 0.3
    service = rng.choice(vocab.SERVICES)
    lines: list[str] = []
    size = 0
    while size < chars:
        clock.tick()
        if access:
            line = (
                f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)} - - [{clock.clf()}] "
                f'"{rng.choice(("GET", "GET", "POST"))} {rng.choice(vocab.HTTP_PATHS)}?page={rng.randrange(1, 50)} HTTP/1.1" '
                f'{rng.choice((200, 200, 200, 304, 404, 500))} {rng.randrange(200, 90000)} "-" "{rng.choice(vocab.USER_AGENTS)}" {rng.uniform(0.001, 2.5):.3f}'
            )
        elif rng.random() < 0.03:
            exc = rng.choice(vocab.EXCEPTIONS)
            line = "\n".join(
                [
                    f"{clock.iso()} ERROR [{service}] unhandled exception in {snake(rng)}",
                    "Traceback (most recent call last):",
                    f'  File "/app/{rng.choice(vocab.TECH_NOUNS)}/{snake(rng, 1)}.py", line {rng.randrange(10, 900)}, in {snake(rng)}',
                    f"    {snake(rng)} = self.{snake(rng)}({rng.choice(vocab.TECH_NOUNS)}_id)",
                    f"{exc}: {rng.choice(vocab.TECH_NOUNS)} {hex_id(rng, 8)} {rng.choice(('not found', 'timed out', 'is invalid'))}",
                ]
            )
        else:
            line = (
                f"{clock.iso()} {rng.choice(vocab.LOG_LEVELS):<5} [{rng.choice(('main', 'worker-1', 'worker-2', 'worker-3', 'scheduler', 'http-nio-8080-exec-4'))}] "
                f"{service}.{rng.choice(vocab.TECH_NOUNS)}: {_app_message(rng)}"
            )
        lines.append(line)
        size += len(line) + 1
    planted = []
    for text in inserts:
        clock.tick()
        planted.append(f"{clock.iso()} {rng.choice(('INFO', 'WARN')):<5} [main] {service}: {text}")
    return "\n".join(_splice(rng, lines, planted))


# -- tables ------------------------------------------------------------------------------------

_Column = tuple[str, bool, Callable[[Random, Clock], str]]

_COLUMNS: tuple[_Column, ...] = (
    ("customer_id", True, lambda r, c: str(r.randrange(1000, 999999))),
    ("status", False, lambda r, c: r.choice(vocab.STATUSES)),
    ("amount", True, lambda r, c: f"{r.uniform(1, 9000):.2f}"),
    ("created_at", False, lambda r, c: c.later()),
    (
        "region",
        False,
        lambda r, c: r.choice(("us-east", "us-west", "eu-central", "ap-south", "eu-west")),
    ),
    ("sku", False, lambda r, c: f"SKU-{r.randrange(10000, 99999)}"),
    ("qty", True, lambda r, c: str(r.randint(1, 40))),
    ("city", False, lambda r, c: r.choice(vocab.CITIES)),
    ("discount_pct", True, lambda r, c: f"{r.choice((0, 0, 5, 10, 15, 20, 25))}.00"),
    ("session_id", False, lambda r, c: hex_id(r, 12)),
    ("revenue", True, lambda r, c: f"{r.uniform(100, 250000):.2f}"),
    ("conversion_rate", True, lambda r, c: f"{r.uniform(0, 0.2):.4f}"),
)


def _table_rows(rng: Random, chars: int) -> tuple[list[str], list[bool], list[list[str]]]:
    clock = Clock(rng)
    table = rng.choice(vocab.SQL_TABLES)
    chosen = rng.sample(_COLUMNS, rng.randint(3, 7))
    names = [f"{table.rstrip('s')}_id"] + [c[0] for c in chosen]
    numeric = [True] + [c[1] for c in chosen]
    rows: list[list[str]] = []
    next_id = rng.randrange(1000, 90000)
    size = 0
    while size < chars:
        next_id += rng.randint(1, 7)
        row = [str(next_id)] + [c[2](rng, clock) for c in chosen]
        rows.append(row)
        size += sum(len(v) + 3 for v in row)
    return names, numeric, rows


def _sql_table(rng: Random, chars: int, inserts: list[str]) -> str:
    names, numeric, rows = _table_rows(rng, int(chars * 0.8))
    widths = [max(len(n), *(len(r[i]) for r in rows)) for i, n in enumerate(names)]
    header = "|".join(f" {n.center(w)} " for n, w in zip(names, widths))
    rule = "+".join("-" * (w + 2) for w in widths)
    body = [
        "|".join(
            f" {v.rjust(w) if num else v.ljust(w)} " for v, w, num in zip(row, widths, numeric)
        ).rstrip()
        for row in rows
    ]
    # a planted line is a server NOTICE before the result, or the tool's note after it
    before = [f"NOTICE:  {text}" for text in inserts if rng.random() < 0.25]
    after = [text for text in inserts if f"NOTICE:  {text}" not in before]
    lines = [
        *before,
        header.rstrip(),
        rule,
        *body,
        f"({len(rows)} row{'s' if len(rows) != 1 else ''})",
    ]
    if after:
        lines += ["", *after]
    return "\n".join(lines)


def _csv(rng: Random, chars: int, inserts: list[str]) -> str:
    names, _, rows = _table_rows(rng, chars)
    lines = [",".join(names)] + [",".join(row) for row in rows]
    return "\n".join(_splice(rng, lines, [f"# {text}" for text in inserts], start=1))


# -- Chinese -----------------------------------------------------------------------------------


def cjk_sentence(rng: Random) -> str:
    words = rng.choices(vocab.CJK_WORDS, k=rng.randint(6, 18))
    out: list[str] = []
    for i, word in enumerate(words):
        out.append(word)
        roll = rng.random()
        if roll < 0.08:
            out.append(f" {rng.randrange(2, 9999)} ")
        elif roll < 0.12:
            out.append(
                f" {rng.choice(('QPS', 'P99', 'SQL', 'API', 'CPU', 'Redis', 'Kafka', 'SLA'))} "
            )
        elif roll < 0.22 and i < len(words) - 1:
            out.append(rng.choice(("，", "，", "、")))
    return "".join(out).strip() + rng.choice(vocab.CJK_PUNCT_END)


def _cjk(rng: Random, chars: int, inserts: list[str]) -> str:
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        block = "".join(cjk_sentence(rng) for _ in range(rng.randint(2, 6)))
        paragraphs.append(block)
        size += len(block) + 1
    return "\n".join(_splice(rng, paragraphs, inserts))


_GENERATORS: dict[str, Callable[[Random, int, list[str]], str]] = {
    "prose": _prose,
    "code": _code,
    "json": _json,
    "logs": _logs,
    "sql_table": _sql_table,
    "csv": _csv,
    "cjk": _cjk,
}


# -- images ------------------------------------------------------------------------------------


def _png(width: int, height: int, pixels: bytes) -> bytes:
    """A PNG with stored (uncompressed) deflate blocks: the bytes depend on nothing but the
    pixels, whatever zlib build the machine has."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + tag
            + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    stride = width * 3
    raw = b"".join(b"\x00" + pixels[y * stride : (y + 1) * stride] for y in range(height))
    blocks = []
    for start in range(0, len(raw), 65535):
        piece = raw[start : start + 65535]
        final = 1 if start + 65535 >= len(raw) else 0
        blocks.append(struct.pack("<BHH", final, len(piece), len(piece) ^ 0xFFFF) + piece)
    stream = b"\x78\x01" + b"".join(blocks) + struct.pack(">I", zlib.adler32(raw) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stream) + chunk(b"IEND", b"")
    )


def image_part(rng: Random, width: int, height: int, detail: str) -> Part:
    """An ``image_url`` part holding a small seeded PNG (a bar chart on a light background)."""
    bars = [rng.randrange(height // 5, height) for _ in range(max(1, width // 8))]
    color = bytes((rng.randrange(40, 200), rng.randrange(40, 200), rng.randrange(40, 200)))
    rows = []
    for y in range(height):
        row = bytearray()
        for x in range(width):
            bar = bars[min(x // 8, len(bars) - 1)]
            row += color if (x % 8 < 6 and height - y <= bar) else b"\xf4\xf4\xf4"
        rows.append(bytes(row))
    data = base64.b64encode(_png(width, height, b"".join(rows))).decode("ascii")
    return Part(
        "image_url", data={"image_url": {"url": f"data:image/png;base64,{data}", "detail": detail}}
    )
