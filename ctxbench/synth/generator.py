"""The seeded generator: a scenario and a seed -> long ReAct traces with planted facts and probes.

Determinism: every random choice comes from one ``random.Random`` seeded with the string
``"ctxbench.synth/1:<trace id>"`` (never the global generator, never the clock), so the same
scenario and seed give byte-identical traces on every run.

A trace is: a system prompt (with the planted rules), the task as the first user message,
``rounds`` rounds of assistant turn + tool output, and a final answer. Facts are planted in
early, middle and late rounds, each at the place its kind calls for (a tool result, the
assistant's text, a tool-call argument, the system prompt, the first user message); each
fact's probe lists the message indices that hold it, and is asked at the end or at a call
mid-trace after all its evidence. A value the agent writes in a tool call also reaches it in a
tool result a few rounds before, so the trace has needed facts (probes of kind ``needed``,
found by :func:`ctxbench.probes.needed.needed_probes`, asked at the call that uses them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from random import Random
from typing import Any

from ctxbench.probes.model import Probe
from ctxbench.probes.needed import needed_probes
from ctxbench.probes.scoring import normalise
from ctxbench.synth import phrases
from ctxbench.synth.arguments import argument_kind, call_arguments
from ctxbench.synth.content import TAXONOMY, hex_id, image_part, render
from ctxbench.synth.facts import draw_value, expand, near_duplicate
from ctxbench.synth.scenario import (
    BANK_KINDS,
    MAX_CHARS,
    POSITIONS,
    FactSpec,
    ScenarioSpec,
    ToolDef,
)
from ctxbench.trace import Message, Part, ToolCall, Trace

GENERATOR_VERSION = 1

#: parameter kinds an artifact goes into when its fact names none, most specific first
_ARTIFACT_KINDS = ("path", "command", "sql", "id", "url")

_FALLBACK_TEXT = {"en": "Working on {value} now.", "zh": "现在处理 {value}。"}
#: a tool result that hands the agent a value it writes in a later call (a needed fact)
_LEARNED_TEXT = {"en": "found: {value}", "zh": "找到：{value}"}
#: rounds between that result and the call that uses the value
LEARNED_GAP = 2
_RULES_HEADER = {"en": "Rules:", "zh": "规则："}
_USER_RULES_HEADER = {"en": "Please keep in mind:", "zh": "请注意："}
_REACT_FORMAT = """You have access to the following tools:
{tools}

Use the following format:
Thought: think about what to do next
Action: the action to take, one of [{names}]
Action Input: the input to the action, as JSON
Observation: the result of the action
... (Thought/Action/Action Input/Observation repeats)
When the task is complete, use Action: terminate with the final answer as its input."""


def generate(spec: ScenarioSpec, seed: int, count: int = 1) -> Iterator[Trace]:
    """Yield ``count`` traces of ``spec``; ids are ``f"{spec.name}-s{seed}-{i}"``.

    The same (spec, seed, i) always gives the same trace, whatever ``count`` is.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    for i in range(count):
        trace_id = f"{spec.name}-s{seed}-{i}"
        yield _TraceBuilder(
            spec, Random(f"ctxbench.synth/{GENERATOR_VERSION}:{trace_id}"), trace_id
        ).build(seed, i)


@dataclass
class _Fact:
    """One planted fact while its trace is being built."""

    id: str
    spec: FactSpec
    value: str
    position: str
    round: int
    placement: str
    old: str = ""
    update_round: int = -1
    #: the round whose tool result hands the value over before the agent writes it (-1: none)
    learned_round: int = -1
    tool: str = ""
    argument: str = ""
    distractors: list[str] = field(default_factory=list)
    evidence: list[int] = field(default_factory=list)
    stale_evidence: list[int] = field(default_factory=list)


@dataclass
class _Slot:
    """Text to place in one round: where it goes, and which evidence list records its index."""

    where: str
    text: str
    evidence: list[int] | None = None
    tool: str = ""
    argument: str = ""
    value: str = ""


@dataclass
class _Call:
    tool: ToolDef
    id: str
    arguments: str
    main_arg: str
    main_kind: str
    output_class: str
    inserts: list[str] = field(default_factory=list)
    evidence: list[list[int]] = field(default_factory=list)


class _TraceBuilder:
    def __init__(self, spec: ScenarioSpec, rng: Random, trace_id: str) -> None:
        self.spec = spec
        self.rng = rng
        self.trace_id = trace_id
        self.language = spec.language
        self.react = spec.format == "react_text"
        self.messages: list[Message] = []
        self.slots: dict[int, list[_Slot]] = {}
        self.taken: set[str] = set()
        self.call_ids: set[str] = set()
        self.argument_rounds: set[int] = set()
        self.learned = 0

    # -- planning ---------------------------------------------------------------------------------
    def _band(self, position: str) -> tuple[int, int]:
        r = self.spec.rounds
        lo, hi = {
            "early": (0, r // 3),
            "middle": (r // 3, 2 * r // 3),
            "late": (2 * r // 3, r - 1),
        }[position]
        return lo, max(lo + 1, hi)

    def _pick_round(
        self, position: str, *, free_for_argument: bool = False, last: int | None = None
    ) -> int:
        """A round in the position's band; an artifact gets a round with no other artifact
        (a text ReAct turn has a single action to carry it)."""
        lo, hi = self._band(position)
        if last is not None:
            hi = max(min(hi, last + 1), lo + 1)
        taken = self.argument_rounds if free_for_argument else set()
        choices = [r for r in range(lo, hi) if r not in taken]
        choices = choices or [r for r in range(self.spec.rounds) if r not in taken] or [lo]
        return self.rng.choice(choices)

    def _add_slot(self, r: int, slot: _Slot) -> None:
        self.slots.setdefault(r, []).append(slot)

    def _chosen_facts(self) -> list[FactSpec]:
        """Facts drawn from the bank per kind (``repeat`` draws); a fact whose value has no
        placeholder is drawn once, since a second copy could only plant the same value."""
        chosen: list[FactSpec] = []
        for kind in BANK_KINDS:
            bank = list(self.spec.domain.bank(kind))
            for _ in range(self.spec.probes.repeat):
                drawn = self.rng.sample(bank, self.spec.probes.count(kind))
                chosen += [f for f in drawn if "{" in f.value or f not in chosen]
            chosen += [f for f in self.spec.facts if f.kind == kind]
        return chosen

    def _plan(self) -> list[_Fact]:
        facts: list[_Fact] = []
        offsets = {kind: self.rng.randrange(3) for kind in BANK_KINDS}
        seen: dict[str, int] = {}
        for spec in self._chosen_facts():
            n = seen.get(spec.kind, 0)
            seen[spec.kind] = n + 1
            if spec.position:
                position = spec.position
            elif spec.kind == "finished_task":
                position = ("early", "middle")[(offsets[spec.kind] + n) % 2]
            else:
                position = POSITIONS[(offsets[spec.kind] + n) % 3]
            value = draw_value(spec.value, self.rng, self.taken)
            fact = _Fact(f"{spec.kind}-{n + 1}", spec, value, position, -1, spec.placement)
            self._place(fact)
            facts.append(fact)
        self._plan_learned(facts)
        for fact in facts:
            self._plan_distractors(fact)
        return facts

    def _plan_learned(self, facts: list[_Fact]) -> None:
        """Needed facts: a value the agent later writes in a tool call first reaches it in a
        tool result a few rounds before (a listing, a search hit), so it needed that result.
        Its own generator: the draws of the rest of the trace do not move."""
        rng = Random(f"ctxbench.synth/learned:{self.trace_id}")
        for fact in facts:
            if fact.placement != "argument" or fact.round < LEARNED_GAP + 1:
                continue
            fact.learned_round = rng.randint(
                max(0, fact.round - 4 * LEARNED_GAP), fact.round - LEARNED_GAP
            )
            text = _LEARNED_TEXT[self.language].format(value=fact.value)
            self._add_slot(fact.learned_round, _Slot("tool", text, fact.evidence))
            self.learned += 1

    def _place(self, fact: _Fact) -> None:
        """Choose the round (or the opening) and the slot of a fact's text."""
        spec = fact.spec
        redirected = fact.placement == "turn" and self.react
        if redirected:
            # a text-ReAct agent runs until it terminates: its user speaks in the task message
            # (after a tool result a user message would read as a second observation), so the
            # rule goes there, outside the system prompt all the same, and does not change
            fact.placement = "user"
        if spec.update and not redirected:
            self._place_superseded(fact)
            return
        text = expand(spec.text, self.rng, fact.value) if spec.text else ""
        if fact.placement == "turn":  # a user message mid-run, the fact on a later line
            fact.round = self._pick_round(fact.position)
            text = f"{phrases.interjection(self.rng, self.language)}\n{text}"
            self._add_slot(fact.round, _Slot("user", text, fact.evidence))
            return
        if fact.placement in ("system", "user"):
            fact.round, fact.position = -1, "start"
            self._add_slot(-1, _Slot(fact.placement, text, fact.evidence))
            return
        if fact.placement == "argument":
            target = self._argument_target(spec)
            if target is None:  # no tool takes such an argument: the agent says it instead
                fact.placement = "assistant"
                text = text or _FALLBACK_TEXT[self.language].format(value=fact.value)
            else:
                fact.tool, fact.argument = target
        if spec.kind == "continuation" and fact.position == "late":
            fact.round = self.spec.rounds  # the plan stated in the final message
        else:
            argument = fact.placement == "argument"
            fact.round = self._pick_round(fact.position, free_for_argument=argument)
        if fact.placement == "argument":
            self.argument_rounds.add(fact.round)
        slot = _Slot(fact.placement, text, fact.evidence, fact.tool, fact.argument, fact.value)
        self._add_slot(fact.round, slot)

    def _place_superseded(self, fact: _Fact) -> None:
        """The old value in the fact's band, the update in a later round, both where it says."""
        spec, last = fact.spec, self.spec.rounds - 1
        fact.old, fact.value = fact.value, draw_value(spec.value, self.rng, self.taken)
        fact.round = self._pick_round(fact.position, last=last - 2)
        gap = max(1, (last - fact.round) // 4)
        fact.update_round = self.rng.randint(min(fact.round + gap, last), last)
        turn = fact.placement == "turn"
        fact.placement = "user" if turn else fact.placement
        fact.placement = fact.placement if fact.placement in ("user", "assistant") else "tool"
        old = expand(spec.text, self.rng, fact.old)
        new = expand(spec.update, self.rng, fact.value)
        if turn:  # each value in a user message of its own, on a later line
            old = f"{phrases.interjection(self.rng, self.language)}\n{old}"
            new = f"{phrases.interjection(self.rng, self.language)}\n{new}"
        self._add_slot(fact.round, _Slot(fact.placement, old, fact.stale_evidence))
        self._add_slot(fact.update_round, _Slot(fact.placement, new, fact.evidence))

    def _argument_target(self, spec: FactSpec) -> tuple[str, str] | None:
        """(tool, parameter) an artifact value goes into: by name first, then by kind."""
        tools = [t for t in self.spec.tools if not spec.tool or t.name == spec.tool]
        wanted = (spec.argument,) if spec.argument else _ARTIFACT_KINDS
        for want in wanted:
            for tool in tools:
                if want in tool.properties:
                    return tool.name, want
            for tool in tools:
                for name, schema in tool.properties.items():
                    if argument_kind(name, schema if isinstance(schema, dict) else {}) == want:
                        return tool.name, name
        return None

    def _plan_distractors(self, fact: _Fact) -> None:
        busy = {fact.round, fact.update_round, fact.learned_round}
        for _ in range(self.spec.probes.distractors):
            dup = near_duplicate(fact.value, self.rng)
            if dup is None or dup in self.taken or any(dup in t or t in dup for t in self.taken):
                continue
            self.taken.add(dup)
            fact.distractors.append(dup)
            choices = [r for r in range(self.spec.rounds) if r not in busy]
            r = self.rng.choice(choices) if choices else 0
            self._add_slot(r, _Slot("tool", phrases.distractor(self.rng, self.language, dup)))

    # -- messages -----------------------------------------------------------------------------------
    def _append(self, message: Message, evidence: Sequence[list[int]] = ()) -> int:
        index = len(self.messages)
        self.messages.append(message)
        for target in evidence:
            if index not in target:
                target.append(index)
        return index

    def _opening(self) -> None:
        slots = self.slots.get(-1, [])
        system = self.spec.system_prompt.strip()
        if self.react:
            tools = "\n".join(
                f"{t.name}: {t.description} Args: {json.dumps(t.parameters, ensure_ascii=False)}"
                for t in self.spec.tools
            )
            system += "\n\n" + _REACT_FORMAT.format(
                tools=tools, names=", ".join(t.name for t in self.spec.tools)
            )
        rules = [s for s in slots if s.where == "system"]
        if rules:
            system += f"\n\n{_RULES_HEADER[self.language]}\n" + "\n".join(
                f"- {s.text}" for s in rules
            )
        self._append(
            Message("system", system), [s.evidence for s in rules if s.evidence is not None]
        )
        task = self.spec.task.strip()
        asks = [s for s in slots if s.where == "user"]
        if asks:
            task += f"\n\n{_USER_RULES_HEADER[self.language]}\n" + "\n".join(
                f"- {s.text}" for s in asks
            )
        self._append(Message("user", task), [s.evidence for s in asks if s.evidence is not None])

    def _pick_class(self, tool: ToolDef | None) -> str:
        output = self.spec.output
        classes = (
            list(tool.produces)
            if tool is not None and tool.produces
            else [c for c, o in output.items() if o.weight > 0]
        )
        weights = [output[c].weight if c in output else 0.0 for c in classes]
        if sum(weights) <= 0:
            weights = [1.0] * len(classes)
        return self.rng.choices(classes, weights=weights)[0]

    def _tool_for(self, cls: str) -> ToolDef:
        tools = self.spec.tools
        producers = (
            [t for t in tools if cls in t.produces]
            or [t for t in tools if not t.produces]
            or list(tools)
        )
        return self.rng.choice(producers)

    def _size(self, cls: str) -> tuple[int, bool]:
        large = self.spec.large
        if large.probability and self.rng.random() < large.probability:
            size = self.rng.lognormvariate(math.log(large.median_chars), large.sigma)
            return int(min(size, MAX_CHARS)), True
        out = self.spec.output.get(cls)
        if out is None:
            return 2000, False
        size = (
            int(self.rng.lognormvariate(math.log(out.median_chars), out.sigma))
            if out.sigma
            else out.median_chars
        )
        return min(max(size, out.min_chars), out.max_chars), False

    def _call_id(self) -> str:
        while True:
            cid = f"call_{hex_id(self.rng, 24)}"
            if cid not in self.call_ids:
                self.call_ids.add(cid)
                return cid

    def _make_call(self, tool: ToolDef | None, fixed: dict[str, Any]) -> _Call:
        cls = self._pick_class(tool)
        tool = tool or self._tool_for(cls)
        props = tool.properties
        required = list(tool.parameters.get("required") or [])
        arguments = call_arguments(props, required, self.rng, fixed)
        parsed = json.loads(arguments)
        main_arg, main_kind = "", "other"
        for name, value in parsed.items():
            kind = argument_kind(name, props.get(name) or {})
            if kind in ("path", "command", "sql", "url", "id", "query") and isinstance(value, str):
                main_arg, main_kind = value, kind
                break
        return _Call(tool, self._call_id(), arguments, main_arg, main_kind, cls)

    def _round(self, r: int) -> None:
        """Round ``r``: a user interjection if one is planted, the assistant turn, its outputs."""
        slots = self.slots.get(r, [])
        user = [s for s in slots if s.where == "user"]
        if user:
            message = Message("user", "\n\n".join(s.text for s in user))
            self._append(message, [s.evidence for s in user if s.evidence is not None])
        calls = self._calls(slots)
        said = [s for s in slots if s.where == "assistant"]
        thought = []
        if r > 0 and self.rng.random() < 0.5:
            thought.append(phrases.remark(self.rng, self.language))
        thought += [s.text for s in said]
        first = calls[0]
        thought.append(
            phrases.intent(
                self.rng, self.language, first.main_kind, first.main_arg, first.tool.name
            )
        )
        text = " ".join(thought)
        evidence = [
            s.evidence
            for s in slots
            if s.where in ("assistant", "argument") and s.evidence is not None
        ]
        if self.react:
            content = f"Thought: {text}\nAction: {first.tool.name}\nAction Input: {first.arguments}"
            self._append(Message("assistant", content), evidence)
        else:
            tool_calls = tuple(ToolCall(c.id, c.tool.name, c.arguments) for c in calls)
            self._append(Message("assistant", text, tool_calls=tool_calls), evidence)
        for call in calls:
            self._observe(call)

    def _calls(self, slots: list[_Slot]) -> list[_Call]:
        """The round's calls: one per planted artifact, then seeded ones (parallel or single);
        planted tool-output lines go to a seeded call of the round."""
        arg_slots = [s for s in slots if s.where == "argument"]
        n_calls = 1
        parallel = self.spec.parallel
        if not self.react and parallel.probability and self.rng.random() < parallel.probability:
            n_calls = self.rng.randint(2, max(2, parallel.max_calls))
        calls: list[_Call] = []
        for slot in arg_slots:
            tool = next(t for t in self.spec.tools if t.name == slot.tool)
            call = self._make_call(tool, {slot.argument: slot.value})
            if slot.text:  # the tool echoes the value back
                call.inserts.append(slot.text)
                if slot.evidence is not None:
                    call.evidence.append(slot.evidence)
            calls.append(call)
        while len(calls) < n_calls:
            calls.append(self._make_call(None, {}))
        for slot in (s for s in slots if s.where == "tool"):
            call = self.rng.choice(calls)
            call.inserts.append(slot.text)
            if slot.evidence is not None:
                call.evidence.append(slot.evidence)
        return calls

    def _observe(self, call: _Call) -> None:
        chars, large = self._size(call.output_class)
        body = render(call.output_class, self.rng, chars, call.inserts)
        # ground truth for drift analysis: the shared class name, and the generator's own
        meta: dict[str, Any] = {"content_class": TAXONOMY.get(call.output_class, call.output_class)}
        if call.output_class in TAXONOMY:
            meta["synth_class"] = call.output_class
        if large:
            meta["large"] = True
        images = self.spec.images
        with_image = (
            images.probability > 0
            and (not images.tools or call.tool.name in images.tools)
            and self.rng.random() < images.probability
        )
        if self.react:
            text = f"Observation: {body}"
            if with_image:
                parts = (
                    Part("text", text),
                    image_part(self.rng, images.width, images.height, images.detail),
                )
                message = Message.from_parts("user", parts, meta=meta)
            else:
                message = Message("user", text, meta=meta)
        elif with_image:
            parts = (
                Part("text", body),
                image_part(self.rng, images.width, images.height, images.detail),
            )
            message = Message.from_parts(
                "tool", parts, tool_call_id=call.id, name=call.tool.name, meta=meta
            )
        else:
            message = Message("tool", body, tool_call_id=call.id, name=call.tool.name, meta=meta)
        self._append(message, call.evidence)

    def _final(self) -> None:
        slots = self.slots.get(self.spec.rounds, [])
        said = [s for s in slots if s.where in ("assistant", "tool", "argument", "user")]
        text = " ".join(
            [
                phrases.remark(self.rng, self.language),
                *(s.text for s in said),
                self.spec.domain.final_answer.strip(),
            ]
        )
        evidence = [s.evidence for s in said if s.evidence is not None]
        if self.react:
            answer = json.dumps(
                {"output": self.spec.domain.final_answer.strip()}, ensure_ascii=False
            )
            text = f"Thought: {text}\nAction: terminate\nAction Input: {answer}"
        self._append(Message("assistant", text), evidence)

    # -- probes ---------------------------------------------------------------------------------------
    def _probes(self, facts: list[_Fact]) -> tuple[Probe, ...]:
        visible_from: list[int] = []  # calls whose prompt includes message i
        calls = 0
        for message in self.messages:
            if message.role == "assistant":
                calls += 1
            visible_from.append(calls)
        last_call = calls - 1
        probes = []
        for fact in facts:
            first_ask = visible_from[max(fact.evidence)]
            ask_at: int | None = None
            if fact.spec.kind == "continuation":
                if fact.round < self.spec.rounds:
                    ask_at = min(
                        first_ask + self.rng.randint(1, max(2, self.spec.rounds // 6)), last_call
                    )
            else:
                mid = fact.spec.ask == "mid" or (
                    not fact.spec.ask and self.rng.random() < self.spec.probes.mid_trace
                )
                if mid and first_ask + 1 <= last_call:
                    ask_at = self.rng.randint(first_ask + 1, last_call)
            meta: dict[str, Any] = {
                "position": fact.position,
                "planted": fact.placement,
                "round": fact.round,
            }
            if fact.old:
                meta["update_round"] = fact.update_round
                meta["stale_evidence"] = sorted(fact.stale_evidence)
            if fact.distractors:
                meta["distractors"] = list(fact.distractors)
            probes.append(
                Probe(
                    id=fact.id,
                    kind=fact.spec.kind,
                    question=fact.spec.question,
                    answers=(fact.value,),
                    evidence=tuple(sorted(fact.evidence)),
                    ask_at=ask_at,
                    stale_answers=(fact.old,) if fact.old else (),
                    meta=meta,
                )
            )
        return tuple(probes)

    def _opening_probes(self) -> list[Probe]:
        """Probes on the opening itself: the task (the first user message) and the system
        prompt, each a phrase found in no other message (a strategy that drops the task, or
        the system prompt, loses them)."""
        probes = []
        asks = (
            ("task", "task", self.spec.task, 1, self.spec.probes.task, False),
            ("constraint", "system", self.spec.system_prompt, 0, self.spec.probes.system, True),
        )
        for kind, name, text, index, count, rules in asks:
            others = [normalise(m.content) for i, m in enumerate(self.messages) if i != index]
            unique = [
                p
                for p in phrases.opening_phrases(text, self.language, rules=rules)
                if not any(normalise(p) in other for other in others)
            ]
            for n, phrase in enumerate(unique[:count], start=1):
                probes.append(
                    Probe(
                        id=f"{name}-{n}",
                        kind=kind,
                        question=phrases.opening_question(name, self.language),
                        answers=(phrase,),
                        evidence=(index,),
                        meta={"position": "start", "planted": self.messages[index].role},
                    )
                )
        return probes

    def build(self, seed: int, index: int) -> Trace:
        facts = self._plan()
        self._opening()
        for r in range(self.spec.rounds):
            self._round(r)
        self._final()
        meta = {
            "source": "ctxbench.synth",
            "scenario": self.spec.name,
            "seed": seed,
            "index": index,
            "format": self.spec.format,
            "language": self.language,
            "generator_version": GENERATOR_VERSION,
        }
        tools = () if self.react else self.spec.tool_specs
        probes = self._probes(facts) + tuple(self._opening_probes())
        trace = Trace(self.trace_id, tuple(self.messages), tools, (), meta)
        return replace(trace, probes=probes + self._needed_probes(trace))

    def _needed_probes(self, trace: Trace) -> tuple[Probe, ...]:
        """The needed facts of the built trace (as many as values were handed over), with the
        position and placement every planted probe carries."""
        thirds = ("early", "middle", "late")
        n = len(trace.messages)
        return tuple(
            replace(
                p,
                meta={
                    **p.meta,
                    "position": thirds[min(2, 3 * int(p.meta["source_message"]) // n)],
                    "planted": "learned",
                },
            )
            for p in needed_probes(trace, self.learned)
        )
