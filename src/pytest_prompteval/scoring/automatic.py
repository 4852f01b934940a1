"""The seed's automatic scorer: topic coverage, incorrect claims, clarity, completeness, length
and consistency, weighted 25/25/20/15/10/5 by default. Every table is data (``scoring.yaml``);
its patterns run on RE2 (``core/patterns``), so a project's table cannot hang a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.patterns import SPACE, boundary, escape, pattern, whole_word
from pytest_prompteval.scoring.score import Score

# on RE2 (core/patterns): with Python's ``re``, ``"!" * n + "x"`` took quadratic time here
_WORD = pattern(r"[A-Za-z0-9_][A-Za-z0-9_'+-]*")
_SENTENCE_END = pattern(rf"[.!?]+(?:{SPACE}+|$)|\n{SPACE}*\n|\n{SPACE}*[-*\p{{Nd}}]+[.)]?{SPACE}")
_ASM_MNEMONIC = pattern(rf"^{SPACE}+([a-z][a-z0-9.]*)\b", ignore_case=True)
_TOPIC_SEPARATOR = pattern(rf"(?:_|-|{SPACE})+")


def expected_topics(case: Case) -> tuple[str, ...]:
    """The case's topics; for the compat format, ``expected_topics_by_audience[audience]``."""
    if case.expected_topics:
        return case.expected_topics
    by_audience = case.raw.get("expected_topics_by_audience")
    audience = case.raw.get("audience")
    if isinstance(by_audience, Mapping) and isinstance(by_audience.get(audience), list):
        return tuple(str(t) for t in by_audience[audience])
    return ()


def key_terms(case: Case) -> tuple[str, ...]:
    """What a complete answer mentions: a case's ``key_terms``, else its assembly mnemonics."""
    explicit = case.raw.get("key_terms")
    if isinstance(explicit, list):
        return tuple(str(t) for t in explicit)
    asm = case.input.get("asm")
    if not isinstance(asm, list):
        return ()
    found = []
    for line in asm:
        text = line.get("text", "") if isinstance(line, Mapping) else str(line)
        match = _ASM_MNEMONIC.match(text)
        if match:
            found.append(match.group(1).lower())
    return tuple(dict.fromkeys(found))


def _ramp(value: float, low: float, high: float, falloff: float) -> float:
    """1.0 inside [low, high], falling linearly to 0 at ``falloff`` beyond either edge."""
    if low <= value <= high:
        return 1.0
    distance = low - value if value < low else value - high
    return max(0.0, 1.0 - distance / falloff)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


class AutomaticScorer:
    def __init__(self, table: Mapping[str, Any]):
        self.weights: dict[str, float] = {k: float(v) for k, v in table["weights"].items()}
        self.topics = {
            name: [pattern(p, ignore_case=True) for p in patterns]
            for name, patterns in table.get("topics", {}).items()
        }
        claims = table.get("incorrect_claims", {})
        self.claim_penalty = float(claims.get("penalty", 0.2))
        self.claims = [
            (pattern(p, ignore_case=True), why) for p, why in claims.get("patterns", {}).items()
        ]
        self.clarity = table["clarity"]
        terms = table.get("technical_terms", [])
        joined = "|".join(f"(?:{t})" for t in terms)
        self.terms = pattern(joined, ignore_case=True) if terms else None
        self.length_ranges = {k: tuple(v) for k, v in table["length_ranges"].items()}
        self.aliases = table.get("difficulty_aliases", {})
        #: the difficulties a case may give: the table's levels and their aliases
        self.difficulties = frozenset(self.length_ranges) | frozenset(self.aliases)

    def covers(self, topic: str, text: str) -> bool:
        patterns = self.topics.get(topic)
        if patterns:
            return any(p.search(text) for p in patterns)
        words = [w for w in _TOPIC_SEPARATOR.split(topic) if w]
        if not words:
            return True
        phrase = _TOPIC_SEPARATOR.pattern.join(map(escape, words))
        if pattern(boundary(words[0][0], True) + phrase, ignore_case=True).search(text):
            return True
        return all(
            pattern(boundary(w[0], True) + escape(w), ignore_case=True).search(text) for w in words
        )

    def incorrect_claims(self, text: str) -> list[str]:
        claims = []
        for claim, why in self.claims:
            match = claim.search(text)
            if match:
                claims.append(f"{match.group(0)!r}: {why}")
        return claims

    def clarity_score(self, text: str) -> float:
        words = _WORD.findall(text)
        if not words:
            return 0.0
        sentences = [s for s in _SENTENCE_END.split(text) if _WORD.search(s)]
        per_sentence = len(words) / max(1, len(sentences))
        terms = self.terms
        density = sum(1 for w in words if terms and terms.fullmatch(w)) / len(words)
        s, d = self.clarity["sentence_words"], self.clarity["term_density"]
        return (
            _ramp(per_sentence, s["low"], s["high"], s["falloff"])
            + _ramp(density, d["low"], d["high"], d["falloff"])
        ) / 2

    def length_score(self, text: str, difficulty: str | None) -> float:
        level = self.aliases.get(difficulty, difficulty)
        low, high = map(float, self.length_ranges.get(level, self.length_ranges["intermediate"]))
        n = len(text.strip())
        if n < low:
            return n / low
        if n > high:
            return max(0.0, 1.0 - (n - high) / high)
        return 1.0

    @staticmethod
    def consistency(samples: Sequence[str]) -> float | None:
        """Mean pairwise Jaccard similarity of the samples' word sets; None for one sample."""
        if len(samples) < 2:
            return None
        sets = [{w.lower() for w in _WORD.findall(s)} for s in samples]
        pairs = list(combinations(sets, 2))
        return sum(_jaccard(a, b) for a, b in pairs) / len(pairs)

    def score(self, case: Case, text: str, samples: Sequence[str] = ()) -> Score:
        topics = expected_topics(case)
        covered = [t for t in topics if self.covers(t, text)]
        accuracy = len(covered) / len(topics) if topics else 1.0
        claims = self.incorrect_claims(text)
        terms = key_terms(case)
        mentioned = [t for t in terms if whole_word(t).search(text)]
        completeness = (accuracy + len(mentioned) / len(terms)) / 2 if terms else accuracy
        dimensions = {
            "accuracy": accuracy,
            "technical_accuracy": max(0.0, 1.0 - self.claim_penalty * len(claims)),
            "clarity": self.clarity_score(text),
            "completeness": completeness,
            "length": self.length_score(text, case.difficulty),
        }
        consistency = self.consistency(samples)
        if consistency is not None:
            dimensions["consistency"] = consistency
        weights = {k: w for k, w in self.weights.items() if k in dimensions}
        total = sum(weights.values())
        value = sum(dimensions[k] * w for k, w in weights.items()) / total if total else 0.0
        return Score(
            value=round(value, 6),
            dimensions={k: round(v, 6) for k, v in dimensions.items()},
            missing_topics=[t for t in topics if t not in covered],
            incorrect_claims=claims,
            details={
                "covered_topics": covered,
                "missing_terms": [t for t in terms if t not in mentioned],
            },
        )
