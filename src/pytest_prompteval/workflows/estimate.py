"""``--prompteval-estimate``: calls, tokens and dollars of a run before it runs, no generation
calls made. A sample with a recording replays (free); a new one is priced with its input
tokens counted by the API and its output tokens taken from a recording of another sample of
the same request, else its ``max_tokens`` (an upper bound).

An agent item is walked through its recordings as a replay would (scripted tool results, the
Python tools' outcomes the recordings hold); from its first step with no recording on, it is
priced as up to ``max_steps`` calls, each at that step's input tokens."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.interaction.agent import AgentSpec
from pytest_prompteval.interaction.recorded import walk_recorded
from pytest_prompteval.interaction.toolkinds import recording_key
from pytest_prompteval.providers.ledger import Purpose
from pytest_prompteval.providers.store import Store
from pytest_prompteval.providers.tokencount import TokenCounter


@dataclass
class VersionEstimate:
    version: str
    replayed: int = 0
    replayed_tokens: int = 0
    new: int = 0
    new_input_tokens: int = 0
    new_output_tokens: int = 0
    output_from_max_tokens: int = 0  # new samples with no recording to take output from
    cost_usd: float = 0.0
    unpriced: int = 0
    #: agent items with steps to make, and the calls their ``max_steps`` allow them
    agents: int = 0
    agent_calls: int = 0


@dataclass(frozen=True)
class Planned:
    version: str
    request: Request
    sample: int
    samples: int
    #: an agent case's spec, and its case (its scripted world)
    agent: AgentSpec | None = None
    case: Case | None = None


def estimate(
    planned: Iterable[Planned], store: Store, counter: TokenCounter, prices: PriceTable
) -> list[VersionEstimate]:
    by_version: dict[str, VersionEstimate] = {}
    for item in planned:
        figures = by_version.setdefault(item.version, VersionEstimate(item.version))
        if item.agent is not None:
            _agent(figures, item, item.agent.max_steps, store, counter, prices)
            continue
        recorded = _recording(store, item.request, item.sample)
        if recorded is not None and store.mode != "all":
            figures.replayed += 1
            figures.replayed_tokens += recorded.input_tokens + recorded.output_tokens
            continue
        _new(figures, item, item.request, 1, store, counter, prices)
    return list(by_version.values())


def _new(
    figures: VersionEstimate,
    item: Planned,
    request: Request,
    calls: int,
    store: Store,
    counter: TokenCounter,
    prices: PriceTable,
) -> None:
    """``calls`` new calls, each priced as ``request``."""
    input_tokens = counter.count(request)
    others = [_recording(store, request, s) for s in range(item.samples)]
    outputs = [r.output_tokens for r in others if r is not None]
    if outputs:
        output_tokens = round(sum(outputs) / len(outputs))
    else:
        output_tokens = int(request.params.get("max_tokens", 0))
        figures.output_from_max_tokens += calls
    figures.new += calls
    figures.new_input_tokens += input_tokens * calls
    figures.new_output_tokens += output_tokens * calls
    planned_answer = Response(
        "", request.model, input_tokens=input_tokens, output_tokens=output_tokens
    )
    # as the budget counts it: a model no table knows at the highest known prices, so a
    # model a pull request names cannot pass --prompteval-max-cost for free
    figures.unpriced += (prices.cost(planned_answer) is None) * calls
    figures.cost_usd += prices.budget_cost(planned_answer) * calls


def _agent(
    figures: VersionEstimate,
    item: Planned,
    max_steps: int,
    store: Store,
    counter: TokenCounter,
    prices: PriceTable,
) -> None:
    assert item.case is not None and item.agent is not None

    key = recording_key(item.agent.kinds, item.agent.other)

    def known(asked: Request, purpose: Purpose) -> Response | None:
        if store.mode == "all":
            return None
        return _recording(store, asked if key is None else key(asked), item.sample)

    walked = walk_recorded(item.agent, item.case, item.request, known)
    done = walked.steps + walked.user
    figures.replayed += len(done)
    figures.replayed_tokens += sum(r.input_tokens + r.output_tokens for r in done)
    if walked.missing is not None:
        simulator = item.agent.simulator
        # the user's calls: each turn it sends, and the one saying it is done
        user = simulator.max_turns + 1 - len(walked.user) if simulator is not None else 0
        calls = max_steps - len(walked.steps) + user
        figures.agents += 1
        figures.agent_calls += calls
        _new(figures, item, walked.missing, calls, store, counter, prices)


def _recording(store: Store, request: Request, sample: int) -> Response | None:
    path: Path = store.path_for(request.key(sample))
    return Store.read(path) if path.exists() else None


def estimate_lines(estimates: Sequence[VersionEstimate], counting_calls: int) -> list[str]:
    lines = [
        f"{'version':<20} {'replayed':>8} {'tokens':>9} {'new':>6} {'in tok':>9} "
        f"{'out tok':>9} {'cost $':>9}"
    ]
    for e in estimates:
        lines.append(
            f"{e.version:<20} {e.replayed:>8} {e.replayed_tokens:>9} {e.new:>6} "
            f"{e.new_input_tokens:>9} {e.new_output_tokens:>9} {e.cost_usd:>9.4f}"
        )
    total = sum(e.cost_usd for e in estimates)
    new = sum(e.new for e in estimates)
    bounded = sum(e.output_from_max_tokens for e in estimates)
    unpriced = sum(e.unpriced for e in estimates)
    lines.append(
        f"total: {new} new calls, ${total:.4f} (replays are free); {counting_calls} token-counting "
        "calls made, no generation calls"
    )
    agents = sum(e.agents for e in estimates)
    if agents:
        lines.append(
            f"{agents} agent items priced as up to max_steps calls each "
            f"({sum(e.agent_calls for e in estimates)} of the new calls), each at the input "
            "tokens of the item's first unrecorded step: an upper bound on calls, not on "
            "input tokens (a conversation's input grows with each step); a simulated user's "
            "calls as up to its max_turns + 1"
        )
    if bounded:
        lines.append(f"{bounded} new calls priced at max_tokens output: an upper bound")
    if unpriced:
        lines.append(
            f"{unpriced} new calls to models missing from the price table: priced at the "
            "highest known prices"
        )
    return lines
