"""The project's Python tools: what a bare name in a prompt version's tools: calls."""

import pytest_prompteval

DAYS = {"Lyon": 2, "Berlin": 1}


@pytest_prompteval.tool("shipping_days")
def shipping_days(destination: str) -> dict[str, int]:
    """Days a parcel still needs to reach a destination city."""
    if destination not in DAYS:  # for the model: any other exception is a bug of the tool
        raise pytest_prompteval.ToolError(f"no shipping to {destination}")
    return {"days": DAYS[destination]}
