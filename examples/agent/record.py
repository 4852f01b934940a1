"""Record this suite's conversations against the loopback server playing a scripted agent
(these recordings are NOT answers from Claude; each says so in its note):

    python record.py

With ANTHROPIC_API_KEY, record real ones instead:
``pytest --prompt=support --prompteval-record=all``.
"""

import sys

import pytest

from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call

AGENT = ScriptedAgent(
    {
        "Order A-1001": [
            ["Let me look the order up.", call("lookup_order", order_id="A-1001")],
            ["It was delivered; refunding 42.0.", call("issue_refund", order_id="A-1001")],
            ["The refund failed: the refund limit is exceeded."],
            ["Done: I issued store credit of 42.0 instead."],
        ],
        "order B-2002": [
            [call("lookup_order", order_id="B-2002")],
            [call("shipping_days", destination="Lyon")],
            ["Order B-2002 has shipped with DHL and reaches Lyon in 2 days."],
        ],
        "Delete my account": [["Sorry, I cannot delete accounts; a colleague will help you."]],
    }
)

if __name__ == "__main__":
    with AnthropicServer(AGENT) as server:
        import os

        os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="loopback")
        sys.exit(
            pytest.main(
                [
                    "--prompt=support",
                    "--prompteval-record=all",
                    "--prompteval-record-note=scripted by record.py on the loopback server, "
                    "not answers from Claude",
                    "-p",
                    "no:randomly",
                ]
            )
        )
