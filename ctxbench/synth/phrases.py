"""What the synthetic agent says: thoughts before a call, remarks on the last output, and the
unrelated sentences that carry distractor values. English and Chinese."""

from __future__ import annotations

import re
from random import Random

from ctxbench.synth import vocabulary as vocab

_INTENT = {
    "en": {
        "path": (
            "Let me open {arg} to see how the {noun} is handled.",
            "I'll look at {arg} next.",
            "The {noun} logic probably lives in {arg}; checking it.",
            "Reading {arg} to confirm the {noun} behaviour.",
        ),
        "command": (
            "Running `{arg}` to check the current state.",
            "Let me run `{arg}`.",
            "I'll use `{arg}` to narrow this down.",
            "Next, `{arg}` should show whether the {noun} change worked.",
        ),
        "sql": (
            "Let me query the data.",
            "I'll run a query to check the {noun} numbers.",
            "Checking the aggregates per {noun}.",
            "A quick query should settle whether the {noun} rows are complete.",
        ),
        "url": (
            "I'll fetch {arg} for the details.",
            "Reading {arg}, which looks relevant to the {noun} question.",
            "Let me open {arg}.",
        ),
        "id": (
            "Looking up {arg}.",
            "Let me fetch the record for {arg}.",
            "I need the details of {arg} before changing anything.",
        ),
        "query": (
            "Searching for {arg}.",
            "Let me search for {arg} to find related {noun} material.",
        ),
        "other": (
            "Calling {tool} to get more information about the {noun}.",
            "Let me use {tool} here.",
            "I'll call {tool} to check the {noun}.",
        ),
    },
    "zh": {
        "path": (
            "我先打开 {arg}，看看{noun}是怎么处理的。",
            "接下来查看 {arg}。",
            "相关逻辑应该在 {arg} 里，我检查一下。",
        ),
        "command": (
            "执行 `{arg}`，确认当前状态。",
            "我运行一下 `{arg}`。",
            "用 `{arg}` 进一步定位问题。",
        ),
        "sql": ("我查询一下数据。", "执行一条 SQL 核对统计结果。"),
        "url": ("打开 {arg} 查看详细说明。", "读取 {arg}，这和当前问题相关。"),
        "id": ("查询 {arg} 的详细信息。", "修改之前，先确认 {arg} 的记录。"),
        "query": ("搜索 {arg}。", "检索与 {arg} 相关的资料。"),
        "other": ("调用 {tool} 获取更多信息。", "我用 {tool} 检查一下。"),
    },
}

_REMARKS = {
    "en": (
        "The output shows {n} {noun} entries; nothing unusual there.",
        "That confirms the {noun} path works as expected.",
        "The {noun} numbers look consistent with the previous step.",
        "No errors in that output, so the {noun} is not the cause.",
        "Some {noun} entries are {adj}, which is worth keeping in mind.",
        "OK, {n} results. Moving on.",
    ),
    "zh": (
        "输出里有 {n} 条{noun}记录，没有发现异常。",
        "这说明{noun}这部分是正常的。",
        "结果和上一步一致，继续排查。",
        "没有报错，问题不在{noun}。",
        "共 {n} 条结果，继续下一步。",
    ),
}

_CJK_NOUNS = ("订单", "日志", "配置", "缓存", "接口", "数据", "索引", "任务")

_DISTRACTORS = {
    "en": (
        "Cross-reference: {value} belongs to an unrelated {noun} record.",
        "Skipped {value}: it is from another {noun} batch.",
        "Archived entry {value} ({noun}, not part of this task).",
        "Similar value {value} seen in the {adj} {noun} export; unrelated.",
    ),
    "zh": (
        "参考：{value} 属于另一条无关的记录。",
        "跳过 {value}：它来自另一个批次。",
        "归档条目 {value}，与本任务无关。",
    ),
}


def intent(rng: Random, language: str, kind: str, arg: str, tool: str) -> str:
    """A thought announcing a call whose main argument is ``arg`` of ``kind``."""
    table = _INTENT[language]
    templates = table.get(kind, table["other"]) if arg else table["other"]
    return rng.choice(templates).format(arg=arg, tool=tool, noun=_noun(rng, language))


_INTERJECTIONS = {
    "en": (
        "Thanks, keep going.",
        "Looks good so far. One more thing:",
        "Quick note before you continue.",
        "Sorry to interrupt, something came up.",
        "Good progress. Please also keep this in mind:",
    ),
    "zh": (
        "谢谢，继续。",
        "目前看起来不错。还有一件事：",
        "继续之前先说明一下。",
        "打断一下，有新情况。",
    ),
}


def interjection(rng: Random, language: str) -> str:
    """The first line of a user message that comes mid-run (the fact stands on a later line)."""
    return rng.choice(_INTERJECTIONS[language])


def remark(rng: Random, language: str) -> str:
    """A remark on the previous output."""
    return rng.choice(_REMARKS[language]).format(
        n=rng.randint(2, 400), noun=_noun(rng, language), adj=rng.choice(vocab.ADJECTIVES)
    )


def distractor(rng: Random, language: str, value: str) -> str:
    """An unrelated sentence carrying a distractor value."""
    return rng.choice(_DISTRACTORS[language]).format(
        value=value, noun=_noun(rng, language), adj=rng.choice(vocab.ADJECTIVES)
    )


def _noun(rng: Random, language: str) -> str:
    return rng.choice(_CJK_NOUNS if language == "zh" else vocab.TECH_NOUNS)


# -- probes on the opening --------------------------------------------------------------------

_CLAUSE = re.compile(r"[.!?;:,\n。！？；：，、]+")
_SENTENCE = re.compile(r"[.!?。！？\n]+")
_LEADING = ("and ", "or ", "but ", "then ", "also ", "please ")
#: the shortest clause worth asking about, and how much of a long one the answer keeps
_MIN_WORDS, _MAX_WORDS, _MIN_CJK = 4, 12, 6

_OPENING_QUESTIONS = {
    "en": {
        "task": "What did the user ask for at the start?",
        "system": "Which rule does the system prompt set?",
    },
    "zh": {"task": "用户一开始交代的任务是什么？", "system": "系统提示规定了哪条规则？"},
}


def opening_question(name: str, language: str) -> str:
    """The question of a probe on the task ("task") or the system prompt ("system")."""
    return _OPENING_QUESTIONS[language][name]


def opening_phrases(text: str, language: str, *, rules: bool = False) -> list[str]:
    """The clauses of an opening message worth a probe, longest first (ties in text order):
    at least four words (six characters in Chinese), at most the first twelve words of a
    clause, without a leading conjunction. Every phrase is a substring of ``text``.

    ``rules`` (a system prompt) leaves out its first sentence when others follow: that one
    says who the agent is ("You are ..."); the rules come after it."""
    if rules:
        first = _SENTENCE.search(text.strip())
        if first and text.strip()[first.end() :].strip():
            text = text.strip()[first.end() :]
    out: list[tuple[int, int, str]] = []
    for position, clause in enumerate(_CLAUSE.split(text)):
        clause = " ".join(clause.split())
        lowered = clause.lower()
        for lead in _LEADING:
            if lowered.startswith(lead):
                clause, lowered = clause[len(lead) :], lowered[len(lead) :]
        if language == "zh":
            if len(clause) >= _MIN_CJK:
                out.append((-len(clause), position, clause))
            continue
        words = clause.split()
        if len(words) >= _MIN_WORDS:
            kept = " ".join(words[:_MAX_WORDS])
            out.append((-len(kept), position, kept))
    return [phrase for _, _, phrase in sorted(out)]
