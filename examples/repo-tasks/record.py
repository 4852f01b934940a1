"""Record these repository tasks against the loopback server playing a scripted fixing
agent (these recordings are NOT answers from Claude; each says so in its note):

    python record.py

The agent reads the code, fixes it with the text editor and runs the tests with bash;
replaying runs the same tool calls again in a fresh copy of each repository. With
ANTHROPIC_API_KEY, record real ones instead:
``pytest --prompt=fixer --prompteval-record=all``.
"""

import os
import sys

import pytest

from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call

EDIT = "str_replace_based_edit_tool"


def replace(path: str, old: str, new: str) -> dict:
    return call(EDIT, command="str_replace", path=path, old_str=old, new_str=new)


AGENT = ScriptedAgent(
    {
        "slugify('hello  world')": [
            ["Let me read the code.", call(EDIT, command="view", path="/repo/slug.py")],
            [
                "split(' ') keeps empty words; split() does not.",
                replace("/repo/slug.py", 'split(" ")', "split()"),
            ],
            [call("bash", command="cd /repo && python -m pytest -q -p no:cacheprovider")],
            ["Fixed: slugify splits on any run of whitespace."],
        ],
        "median([4, 1, 3, 2])": [
            [call(EDIT, command="view", path="/repo/stats.py")],
            [
                "The two middle values of an even list are middle - 1 and middle.",
                replace(
                    "/repo/stats.py",
                    "(ordered[middle] + ordered[middle + 1]) / 2",
                    "(ordered[middle - 1] + ordered[middle]) / 2",
                ),
            ],
            [call("bash", command="cd /repo && python -m pytest -q -p no:cacheprovider")],
            ["Fixed: median averages the two middle values."],
        ],
        "to_cents('0.29')": [
            [call("bash", command="cd /repo && grep -rn 'def ' shop")],
            [
                "Floats lose cents; parse the digits instead.",
                replace(
                    "shop/money.py",
                    "    return int(float(amount) * 100)",
                    '    euros, _, cents = amount.partition(".")\n'
                    '    return int(euros) * 100 + int((cents + "00")[:2])',
                ),
            ],
            [
                "And round the discount down to whole cents.",
                replace(
                    "shop/cart.py",
                    "cents * discount_percent / 100",
                    "cents * discount_percent // 100",
                ),
            ],
            [call("bash", command="cd /repo && python -m pytest -q -p no:cacheprovider")],
            ["Fixed in shop/money.py and shop/cart.py."],
        ],
        "to_meters(10, 'ft')": [
            [call("bash", command="cd /repo && grep -rn ft src")],
            [
                "A foot is 0.3048 m.",
                replace("src/units/__init__.py", '"ft": 0.348', '"ft": 0.3048'),
            ],
            [call("bash", command="cd /repo && python -m pytest -q -p no:cacheprovider")],
            ["Fixed the foot's factor."],
        ],
    }
)

if __name__ == "__main__":
    with AnthropicServer(AGENT) as server:
        os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="loopback")
        sys.exit(
            pytest.main(
                [
                    "--prompt=fixer",
                    "--prompteval-record=all",
                    "--prompteval-record-note=scripted by record.py on the loopback server, "
                    "not answers from Claude",
                    "-p",
                    "no:randomly",
                ]
            )
        )
