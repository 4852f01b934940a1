"""Data tables shipped with the plugin (``data/*.yaml``), merged with a project's own file.

A project's file has the shipped table's shape: its fixed mappings (``weights``, ``clarity``,
a price entry) accept only the shipped keys, with a did-you-mean; open ones (``topics``, model
prefixes, difficulty names) accept any.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.patterns import PatternError, pattern
from pytest_prompteval.core.pricing import PRICE_FIELDS, PriceTable
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.yamlload import SafeLoader, line_of, load_yaml

# Mappings whose keys are the project's to choose, by table; "*" is any top-level key.
_OPEN = {
    "scoring": {"topics", "length_ranges", "difficulty_aliases", "incorrect_claims.patterns"},
    "prices": {"*"},
}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; any other value in ``override`` replaces the base one."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = value
    return result


def load_table(
    name: str, override: Path | None = None, *, allow_lower_prices: bool = False
) -> dict[str, Any]:
    """The shipped table ``name`` merged with the project's file ``override``; a price file
    may not price a model below the shipped table unless ``allow_lower_prices``."""
    text = resources.files("pytest_prompteval").joinpath(f"data/{name}.yaml").read_text()
    table: dict[str, Any] = yaml.load(text, Loader=SafeLoader)
    if override is None:
        return table
    extra = load_yaml(override)
    if not isinstance(extra, dict):
        raise PromptevalError(f"expected a mapping shaped like the plugin's {name}.yaml", override)
    if name == "prices":
        check_prices(extra, override)
        if not allow_lower_prices:
            check_not_lower(extra, table, override)
    else:
        check_shape(extra, table, override, "", _OPEN.get(name, set()))
    if name == "scoring":
        check_patterns(extra, override)
    return merge(table, extra)


def check_patterns(table: dict[str, Any], path: Path) -> None:
    """A project's topic, claim and term patterns compile on RE2 (see ``core/patterns``)."""
    found: list[tuple[str, Any, Any, str]] = []
    topics = table.get("topics")
    if isinstance(topics, dict):
        for topic, patterns in topics.items():
            for source in patterns if isinstance(patterns, list) else [patterns]:
                found.append((f"topics.{topic}", source, topics, topic))
    claims = table.get("incorrect_claims")
    if isinstance(claims, dict) and isinstance(claims.get("patterns"), dict):
        for source in claims["patterns"]:
            found.append(("incorrect_claims.patterns", source, claims["patterns"], source))
    terms = table.get("technical_terms")
    for source in terms if isinstance(terms, list) else []:
        found.append(("technical_terms", source, table, "technical_terms"))
    for where, source, parent, key in found:
        try:
            if not isinstance(source, str):
                raise PatternError("expected a regular expression")
            pattern(source, ignore_case=True)
        except PatternError as exc:
            raise PromptevalError(f"{where}: {exc}", path, line_of(parent, key)) from None


def check_shape(
    node: dict[str, Any], base: dict[str, Any], path: Path, where: str, open_: set[str]
) -> None:
    """Every fixed mapping in ``node`` uses only the keys of the same mapping in ``base``."""
    if (where or "*") not in open_:
        check_keys(node, base, path, f"{where}: " if where else "")
    for key, value in node.items():
        inner = f"{where}.{key}" if where else key
        if isinstance(value, dict) and isinstance(base.get(key), dict) and inner not in open_:
            check_shape(value, base[key], path, inner, open_)


def check_prices(table: dict[str, Any], path: Path) -> None:
    for model, prices in table.items():
        if not isinstance(prices, dict):
            raise PromptevalError(
                f"{model}: expected {{{', '.join(PRICE_FIELDS)}}} in USD per million tokens",
                path,
                line_of(table, model),
            )
        check_keys(prices, PRICE_FIELDS, path, f"{model}: ")
        for field, value in prices.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise PromptevalError(
                    f"{model}.{field}: expected a number >= 0 (USD per million tokens)",
                    path,
                    line_of(prices, field),
                )


def check_not_lower(table: dict[str, Any], shipped: dict[str, Any], path: Path) -> None:
    """No entry of a project's price file below what the shipped table charges that model
    (a model it does not know: the highest known price, as the budget counts it), so a pull
    request's file of zeros cannot switch ``--prompteval-max-cost`` off."""
    known = PriceTable(shipped)
    for model, prices in table.items():
        floor = known.prices_for(model)
        what = "the shipped price" if floor is not None else "the highest known price"
        floor = floor or known.highest()
        base = shipped.get(model, {})  # a shipped model's fields the file leaves out stay
        for field in PRICE_FIELDS:
            price = float(prices.get(field, base.get(field, 0)))
            least = float(floor.get(field, 0))
            if price < least:
                raise PromptevalError(
                    f"{model}.{field}: {price:g} is below {what}, {least:g}; give "
                    "--prompteval-allow-lower-prices on the command line to use it",
                    path,
                    line_of(prices, field) if field in prices else line_of(table, model),
                )
