"""The Claude judge: a rubric from review templates, a verdict through a forced tool call.

The verdict's JSON schema is enforced: a verdict that does not match is asked for once more
(with the reason), then the item errors with the raw verdict shown; only a valid verdict is
recorded, and a recorded one that does not match is asked for again. Judge requests go
through the same Store as generations, so the key covers judge model, rubric and judged
response: a re-run pays nothing and a changed rubric re-judges.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Message, Request, canonical_json
from pytest_prompteval.core.result import Step, Trajectory
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.stats import spread
from pytest_prompteval.core.tables import load_table
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ledger import Ledger
from pytest_prompteval.providers.store import Check, Store
from pytest_prompteval.scoring.automatic import expected_topics
from pytest_prompteval.scoring.score import Score

DEFAULT_JUDGE_MODEL = "claude-sonnet-4-6"
DEFAULT_TEMPLATE = "default_review"
#: the rubric an agent's item is judged by unless its case or the run names another
AGENT_TEMPLATE = "agent_review"
#: characters of the trajectory the judge reads: the newest steps whole, older ones left out
TRAJECTORY_BUDGET = 40_000
#: characters of one tool result, message or turn in it
TRAJECTORY_PART = 4_000
VERDICT_TOOL = "submit_verdict"
JUDGE_MAX_TOKENS = 2048
TEMPLATE_FIELDS = ("system_prompt", "evaluation_dimensions")
DIMENSION_FIELDS = ("weight", "description")


class JudgeError(PromptevalError):
    kind = "judge_invalid"


@dataclass(frozen=True)
class ReviewTemplate:
    name: str
    system_prompt: str
    dimensions: Mapping[str, tuple[float, str]]  # name -> (weight, description)


def load_review_templates(path: Path | None) -> dict[str, ReviewTemplate]:
    """The shipped templates, or a project's file instead of them."""
    data = load_table("review_templates") if path is None else _project_templates(path)
    where = display(path) if path else "the plugin's review_templates.yaml"
    templates = {}
    for name, body in data.items():
        line = line_of(data, name)
        if not isinstance(body, Mapping) or not isinstance(body.get("system_prompt"), str):
            raise PromptevalError(f"template {name!r}: expected a system_prompt", where, line)
        check_keys(body, TEMPLATE_FIELDS, where, f"template {name!r}: ")
        dims = body.get("evaluation_dimensions")
        if not isinstance(dims, Mapping) or not dims:
            raise PromptevalError(
                f"template {name!r}: expected evaluation_dimensions {{name: {{weight, "
                "description}}}}",
                where,
                line_of(body, "evaluation_dimensions") or line,
            )
        parsed = {}
        for dim, spec in dims.items():
            if isinstance(spec, Mapping):
                check_keys(spec, DIMENSION_FIELDS, where, f"template {name!r}, dimension {dim!r}: ")
            weight = spec.get("weight") if isinstance(spec, Mapping) else None
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                raise PromptevalError(
                    f"template {name!r}, dimension {dim!r}: expected a positive weight",
                    where,
                    line_of(dims, dim),
                )
            parsed[str(dim)] = (float(weight), str(spec.get("description", "")).strip())
        templates[str(name)] = ReviewTemplate(str(name), body["system_prompt"].strip(), parsed)
    return templates


def _project_templates(path: Path) -> Any:
    from pytest_prompteval.core.yamlload import load_yaml

    data = load_yaml(path)
    if not isinstance(data, Mapping):
        raise PromptevalError("expected a mapping of review templates", path, 1)
    return data


def _string_list() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}}


def verdict_schema(template: ReviewTemplate) -> dict[str, Any]:
    score = {"type": "integer", "minimum": 0, "maximum": 100}
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "properties": {d: score for d in template.dimensions},
                "required": list(template.dimensions),
                "additionalProperties": False,
            },
            "missing_topics": _string_list(),
            "incorrect_claims": _string_list(),
            "notes": {"type": "string"},
        },
        "required": ["scores", "missing_topics", "incorrect_claims", "notes"],
    }


QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 100},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
}


@dataclass
class Verdict:
    score: Score
    template: str
    model: str
    repeats: list[float] = field(default_factory=list)

    @property
    def spread(self) -> float:
        return spread(self.repeats)


def _tool_request(
    model: str,
    system: str,
    user: str,
    schema: dict[str, Any],
    rejection: str,
    temperature: float = 0.0,
) -> Request:
    if rejection:
        system += (
            f"\n\nYour previous answer was rejected: {rejection}. Call {VERDICT_TOOL} once, "
            "with every field the schema requires."
        )
    tool = {
        "name": VERDICT_TOOL,
        "description": "Submit the answer. Call this exactly once.",
        "input_schema": schema,
    }
    return Request.create(
        model,
        [Message("user", (user,))],
        system,
        max_tokens=JUDGE_MAX_TOKENS,
        temperature=temperature,
        tools=[tool],
        tool_choice={"type": "tool", "name": VERDICT_TOOL},
    )


def structured_call(
    store: Store,
    ledger: Ledger,
    model: str,
    context: CallContext,
    system: str,
    user: str,
    schema: dict[str, Any],
    temperature: float = 0.0,
) -> dict[str, Any]:
    """A forced tool call whose input must match ``schema``: the first answer, or one retry
    told what was wrong, or JudgeError with the raw answer shown. Only a valid answer is
    recorded, as the answer to the first request (so a replay needs no retry); a recorded
    answer that fails the schema is asked for again."""
    check = schema_check(schema)
    first: Request | None = None
    rejection = ""
    for _attempt in range(2):
        request = _tool_request(model, system, user, schema, rejection, temperature)
        fetched = ledger.get(store, request, context, "judge", check, answers=first)
        response = fetched.response
        verdict = response.tool_input
        if fetched.rejected is None and verdict is not None:
            return verdict
        rejection = fetched.rejected or ""
        raw = response.text if verdict is None else json.dumps(verdict, ensure_ascii=False)
        first = first or request
    subject = (
        f"the improve answer for prompt {context.prompt.version!r}"
        if context.purpose == "improve"
        else f"judge verdict for case {context.case.id!r}"
    )
    raise JudgeError(
        f"{subject} does not match the schema after one retry: {rejection}\n  verdict: {raw[:2000]}"
    )


def schema_check(schema: dict[str, Any]) -> Check:
    """What is wrong with an answer's forced tool call given ``schema``, or None."""
    import jsonschema  # slow to import: only when a judge runs

    validator = jsonschema.Draft202012Validator(schema)

    def problem(verdict: dict[str, Any] | None) -> str | None:
        if verdict is None:
            return f"no {VERDICT_TOOL} tool call (the answer was text instead)"
        errors = sorted(validator.iter_errors(verdict), key=lambda e: list(e.path))
        if not errors:
            return None
        return "; ".join(
            f"{'/'.join(map(str, e.path)) or '(verdict)'}: {e.message}" for e in errors
        )[:500]

    return lambda response: problem(response.tool_input)


def _clipped(text: str) -> str:
    if len(text) <= TRAJECTORY_PART:
        return text
    return f"{text[:TRAJECTORY_PART]}... ({len(text) - TRAJECTORY_PART} more characters)"


def _step_text(step: Step) -> str:
    lines = [f"step {step.number} (stopped for {step.stop_reason or 'unknown'})"]
    if step.text.strip():
        lines.append(f"assistant: {_clipped(step.text.strip())}")
    for call in step.calls:
        lines.append(f"tool call: {call.name} {_clipped(canonical_json(call.input))}")
        lines.append(f"tool {'error' if call.is_error else 'result'}: {_clipped(call.result)}")
    if step.turn is not None:
        lines.append(f"user: {_clipped(step.turn)}")
    return "\n".join(lines)


def trajectory_materials(trajectory: Trajectory, budget: int = TRAJECTORY_BUDGET) -> str:
    """What the agent did, for the judge: each step's text, tool calls with their input and
    result (or error) and the user's turn after it. Bounded: the newest steps are kept
    whole, the oldest left out (and counted) once ``budget`` characters are reached."""
    kept: list[str] = []
    used = 0
    for step in reversed(trajectory.steps):
        text = _step_text(step)
        if kept and used + len(text) > budget:
            break
        kept.append(text)
        used += len(text)
    left = trajectory.steps[: len(trajectory.steps) - len(kept)]
    parts = []
    if left:
        calls = sum(len(s.calls) for s in left)
        errors = sum(c.is_error for s in left for c in s.calls)
        parts.append(
            f"(steps 1-{len(left)} left out for length: {calls} tool calls, {errors} errors)"
        )
    parts += reversed(kept)
    if trajectory.failure is not None:
        parts.append(f"the conversation ended badly: {trajectory.failure}")
    return "\n\n".join(parts)


class Judge:
    def __init__(
        self,
        store: Store,
        model: str,
        templates: Mapping[str, ReviewTemplate],
        template: str | None,
        repeats: int = 1,
    ):
        self.store = store
        self.model = model
        self.templates = templates
        self.default = template or (
            DEFAULT_TEMPLATE if DEFAULT_TEMPLATE in templates else next(iter(templates))
        )
        if self.default not in templates:
            raise PromptevalError(
                f"unknown review template {self.default!r}; known: {', '.join(templates)}"
            )
        self.repeats = repeats
        #: the agent rubric: the project's own, else the shipped one, unless the run names one
        self.agent = None if template else templates.get(AGENT_TEMPLATE)
        if self.agent is None and not template:
            self.agent = load_review_templates(None)[AGENT_TEMPLATE]

    def template_for(self, case: Case, agent: bool = False) -> ReviewTemplate:
        if agent and self.agent is not None and "review_template" not in case.raw:
            return self.agent
        name = case.raw.get("review_template") or self.default
        if name not in self.templates:
            raise PromptevalError(
                f"case {case.id!r}: unknown review_template {name!r}; known: "
                f"{', '.join(self.templates)}",
                case.path,
                line_of(case.raw, "review_template"),
            )
        return self.templates[name]

    @staticmethod
    def _materials(case: Case, text: str, trajectory: Trajectory | None = None) -> str:
        topics = ", ".join(expected_topics(case)) or "(none given)"
        did = (
            ""
            if trajectory is None
            else f"<trajectory>\n{trajectory_materials(trajectory)}\n</trajectory>\n"
        )
        return (
            f"<request>\n{json.dumps(dict(case.input), ensure_ascii=False, indent=1)}\n"
            f"</request>\n<difficulty>{case.difficulty or 'unspecified'}</difficulty>\n"
            f"<expected_topics>{topics}</expected_topics>\n{did}<answer>\n{text}\n</answer>"
        )

    def verdict(
        self,
        case: Case,
        prompt: PromptVersion,
        text: str,
        ledger: Ledger,
        trajectory: Trajectory | None = None,
    ) -> Verdict:
        """The rubric's verdict on the answer; an agent's (``trajectory`` given) is judged
        on what it did as well, by the agent rubric unless one is named."""
        template = self.template_for(case, agent=trajectory is not None)
        dims = "\n".join(
            f"- {name} (weight {weight:g}): {description}"
            for name, (weight, description) in template.dimensions.items()
        )
        system = (
            f"{template.system_prompt}\n\nScore the answer from 0 to 100 on each dimension:\n"
            f"{dims}\n\nList the expected topics the answer misses and every incorrect claim "
            f"it makes (quote it). Submit with the {VERDICT_TOOL} tool."
        )
        user = self._materials(case, text, trajectory)
        schema = verdict_schema(template)
        runs = [
            structured_call(
                self.store,
                ledger,
                self.model,
                CallContext(case, prompt, n, "judge"),
                system,
                user,
                schema,
            )
            for n in range(self.repeats)
        ]
        total = sum(w for w, _ in template.dimensions.values())
        dimensions = {
            d: sum(r["scores"][d] for r in runs) / len(runs) / 100 for d in template.dimensions
        }
        overalls = [
            sum(r["scores"][d] / 100 * w for d, (w, _) in template.dimensions.items()) / total
            for r in runs
        ]
        first = runs[0]
        return Verdict(
            score=Score(
                value=round(sum(overalls) / len(overalls), 6),
                dimensions={k: round(v, 6) for k, v in dimensions.items()},
                missing_topics=list(first["missing_topics"]),
                incorrect_claims=list(first["incorrect_claims"]),
                notes=first["notes"],
            ),
            template=template.name,
            model=self.model,
            repeats=[round(o, 6) for o in overalls],
        )

    def ask(
        self,
        case: Case,
        prompt: PromptVersion,
        text: str,
        question: str,
        ledger: Ledger,
        trajectory: Trajectory | None = None,
        vote: int | None = None,
    ) -> tuple[float, str]:
        """A one-off rubric question about the answer: score in [0, 1] and the reason.
        ``vote``: one of several independent votes (each its own recorded call, sampled at
        temperature 1 so that they can differ)."""
        system = (
            "You judge one aspect of an answer an AI assistant gave. Answer the question "
            f"with a score from 0 (not at all) to 100 (fully) and a one-sentence reason, "
            f"using the {VERDICT_TOOL} tool.\n\nQuestion: {question}"
        )
        context = CallContext(case, prompt, vote or 0, "judge")
        verdict = structured_call(
            self.store,
            ledger,
            self.model,
            context,
            system,
            self._materials(case, text, trajectory),
            QUESTION_SCHEMA,
            0.0 if vote is None else 1.0,
        )
        return verdict["score"] / 100, verdict["reason"]
