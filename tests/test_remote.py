"""The judge calls the candidate in another process: values cross as exact built-in types,
anything else as handles that equal nothing but themselves, and garbage is a WireError."""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import json
import math
import os
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_prompteval.sandbox.client import Limits, Sandbox
from pytest_prompteval.sandbox.remote import Channel, Remote, WireError
from pytest_prompteval.scoring.code.measure import measure
from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest

from .conftest import processes_of


def crossed(value: Any) -> Any:
    """``value`` sent from one channel and read by another."""
    read, write = os.pipe()
    sender, receiver = Channel(read, write), Channel(read, write)
    try:
        sender.send({"ok": sender.encode(value)})
        return receiver.decode(receiver.receive()["ok"])
    finally:
        os.close(read)
        os.close(write)


Point = collections.namedtuple("Point", "x y")
VALUES = [
    None,
    True,
    0,
    -(2**200),
    3.5,
    -0.0,
    "naïve\n",
    b"\x00\xff",
    bytearray(b"ab"),
    [1, [2, (3,)]],
    {(1, 2): {"a": frozenset({1})}, 3: None},
    {1, 2},
    2 + 3j,
    fractions.Fraction(1, 3),
    decimal.Decimal("1.10"),
    datetime.datetime(2026, 11, 26, 7, 0, tzinfo=datetime.timezone.utc),
    datetime.date(2026, 1, 1),
    datetime.timedelta(days=1, microseconds=5),
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_values_cross_as_the_same_value_of_the_same_type(value: Any) -> None:
    back = crossed(value)
    assert back == value and type(back) is type(value)


def test_floats_that_json_cannot_write_cross_exactly() -> None:
    assert math.isnan(crossed(math.nan)) and crossed(-math.inf) == -math.inf
    assert math.copysign(1, crossed(-0.0)) == -1


def test_subclasses_cross_as_their_base_and_other_objects_as_handles() -> None:
    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    assert type(crossed(Liar(7))) is int and crossed(Liar(7)) != 8
    assert crossed(Point(1, 2)) == (1, 2) and type(crossed(Point(1, 2))) is tuple
    assert type(crossed(collections.Counter("aab"))) is dict
    handle = crossed(object())
    assert isinstance(handle, Remote) and repr(handle) == "<object object>"
    assert handle != handle.__class__ and handle == handle and handle != 42
    with pytest.raises(TypeError, match="no truth value"):
        bool(handle)


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json\n",
        b"[1, 2]\n",
        b'{"ok": [1, 2]}\n',
        b'{"ok": {"zz": 1}}\n',
        b'{"ok": {"s": [{"l": []}]}}\n',  # an unhashable member
        b'{"ok": {"b": "***"}}\n',
        b'{"ok": {"i": "not hex"}}\n',
        b'{"ok": {"dt": ["os", "x"]}}\n',
        b'{"ok": {"r": 99}}\n',
        b'{"ok": ' + b'{"l": [' * 300 + b"]}" * 300 + b"}\n",
    ],
)
def test_garbage_is_a_wire_error(payload: bytes) -> None:
    read, write = os.pipe()
    channel = Channel(read, write)
    try:
        os.write(write, payload)
        with pytest.raises(WireError):
            message = channel.receive()
            channel.decode(message["ok"])
    finally:
        os.close(read)
        os.close(write)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox()
    yield box
    box.close()


def verdicts(sandbox: Sandbox, code: str, *checks: str) -> list[Any]:
    """Each check's event: passed, or the failure's message."""
    spec = CodeSpec(
        entry_point="f",
        tests=tuple(CodeTest("check", check) for check in checks),
    )
    run = sandbox.run(spec.job(code), Limits(timeout=2.0))
    assert measure(spec, code, run).tests_total == len(checks)
    return [
        True if event.get("passed") else event.get("message")
        for _, event in sorted(run.tests.items())
    ]


def test_what_tests_usually_do_works_across_the_processes(sandbox: Sandbox) -> None:
    code = (
        "import math\n"
        "class Stack:\n"
        "    def __init__(self):\n"
        "        self.items = []\n"
        "    def push(self, x):\n"
        "        self.items.append(x)\n"
        "    def pop(self):\n"
        "        return self.items.pop()\n"
        "def poly(xs, x):\n"
        "    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n"
        "def f(xs, key=None):\n"
        "    if xs is None:\n"
        "        raise ValueError('no xs')\n"
        "    return sorted(xs, key=key)\n"
        "def g(n):\n"
        "    yield from range(n)\n"
    )
    assert verdicts(
        sandbox,
        code,
        # a callback the test passes, run in the judge when the candidate calls it
        "def check(candidate):\n    assert candidate([3, -1, 2], key=abs) == [-1, 2, 3]\n",
        # the candidate's exception, as the built-in type
        "def check(candidate):\n"
        "    try:\n"
        "        candidate(None)\n"
        "    except ValueError as exc:\n"
        "        assert 'no xs' in str(exc)\n"
        "    else:\n"
        "        raise AssertionError('no exception')\n",
        # HumanEval style: helpers and imports of the candidate's module
        "def check(candidate):\n    assert math.fabs(poly([1, 2], 3)) == 7.0\n",
        # an object of the candidate's class, used through its methods
        "def check(candidate):\n    s = Stack()\n    s.push(5)\n    assert s.pop() == 5\n",
        # a generator, iterated
        "def check(candidate):\n    assert list(g(3)) == [0, 1, 2]\n",
        # a wrong expectation still fails, with its line
        "def check(candidate):\n    assert candidate([2, 1]) == [2, 1]\n",
    ) == [True] * 5 + ["AssertionError: assert candidate([2, 1]) == [2, 1]"]


def test_a_candidate_that_dies_mid_test_ends_the_sample_as_before(sandbox: Sandbox) -> None:
    code = "import os\ndef f():\n    os._exit(3)\n"
    spec = CodeSpec(entry_point="f", tests=(CodeTest("assert", "f() == 1"),))
    run = sandbox.run(spec.job(code), Limits(timeout=2.0))
    assert run.exit_code == 3 and run.tests == {} and run.done is None
    assert measure(spec, code, run).error_class == "runtime"


def test_the_candidate_cannot_reach_the_tests_globals(sandbox: Sandbox) -> None:
    code = (
        "def f(key):\n"
        "    try:\n"
        "        request = key._channel.request\n"  # the raw protocol, past the proxy
        "        return repr(request('getattr', key._handle, name='__globals__'))\n"
        "    except AttributeError as exc:\n"
        "        return 'refused'\n"
    )
    assert verdicts(
        sandbox, code, "def check(candidate):\n    assert candidate(lambda x: x) == 'refused'\n"
    ) == [True]


def test_the_wire_format_is_json_lines() -> None:
    read, write = os.pipe()
    channel = Channel(read, write)
    try:
        channel.send({"ok": channel.encode([1.5, (2,)])})
        assert json.loads(os.read(read, 1000)) == {
            "ok": {"l": [{"f": "0x1.8000000000000p+0"}, {"t": [2]}]}
        }
    finally:
        os.close(read)
        os.close(write)


def test_tests_that_finished_before_a_timeout_are_kept(sandbox: Sandbox) -> None:
    code = "def f(x):\n    while x < 0:\n        pass\n    return x\n"
    spec = CodeSpec(
        entry_point="f",
        tests=(
            CodeTest("assert", "f(1) == 1"),
            CodeTest("assert", "f(2) == 2"),
            CodeTest("assert", "f(-1) == -1", "edge"),
        ),
    )
    run = sandbox.run(spec.job(code), Limits(timeout=0.5))
    metrics = measure(spec, code, run)
    assert run.timed_out and metrics.error_class == "timeout"
    assert metrics.tests_passed == 2 and sorted(run.tests) == [0, 1]


def test_the_candidate_cannot_shadow_the_tests_builtins(sandbox: Sandbox) -> None:
    code = "def abs(x):\n    return 0\ndef all(*args):\n    return True\ndef f(x):\n    return 0\n"
    assert verdicts(
        sandbox,
        code,
        "def check(candidate):\n    assert abs(candidate(2.0) - 4.0) < 1e-6\n",
        "def check(candidate):\n    assert all(candidate(x) == x * x for x in range(1, 5))\n",
    ) == [
        "AssertionError: assert abs(candidate(2.0) - 4.0) < 1e-6",
        "AssertionError: assert all(candidate(x) == x * x for x in range(1, 5))",
    ]


def test_the_candidate_cannot_inspect_the_judges_objects(sandbox: Sandbox) -> None:
    # a generator's frame leads to the judge's builtins, exec among them
    code = "def f(xs):\n    return xs.gi_frame.f_builtins['exec']('import os; os._exit(0)')\n"
    assert verdicts(
        sandbox, code, "def check(candidate):\n    assert candidate(x for x in [1, 2]) is None\n"
    ) == ["AttributeError: no public attribute 'gi_frame'"]


def test_a_candidates_stop_iteration_does_not_end_the_tests_loops(sandbox: Sandbox) -> None:
    code = "def f(x):\n    raise StopIteration\n"
    assert verdicts(
        sandbox,
        code,
        "def check(candidate):\n    assert all(map(lambda x: candidate(x) == x, [1]))\n",
    ) == ["StopIteration:"]


def test_honest_code_keeps_its_python_semantics(sandbox: Sandbox) -> None:
    code = (
        "import dataclasses, itertools\n"
        "class Invalid(ValueError):\n    pass\n"
        "@dataclasses.dataclass\n"
        "class P:\n    x: int\n"
        "RED = P(1)\n"
        "def f(x):\n"
        "    if x < 0:\n"
        "        raise Invalid('negative')\n"
        "    return RED\n"
        "def naturals():\n"
        "    return itertools.count()\n"
    )
    assert verdicts(
        sandbox,
        code,
        "def check(candidate):\n"
        "    try:\n        candidate(-1)\n    except ValueError as exc:\n"
        "        assert 'negative' in str(exc)\n",
        "def check(candidate):\n    assert candidate(1) == candidate(2) and candidate(1).x == 1\n",
        "def check(candidate):\n"
        "    import itertools\n"
        "    numbers = naturals()\n"
        "    assert next(numbers) == 0 and list(itertools.islice(numbers, 3)) == [1, 2, 3]\n",
    ) == [True, True, True]


def test_cpu_spent_in_children_it_waited_for_counts(sandbox: Sandbox) -> None:
    code = (
        "import os\n"
        "def f():\n"
        "    child = os.fork()\n"
        "    if child == 0:\n"
        "        n = 0\n"
        "        for i in range(3_000_000):\n"
        "            n += i\n"
        "        os._exit(0)\n"
        "    os.waitpid(child, 0)\n"
        "    return 1\n"
    )
    spec = CodeSpec(entry_point="f", tests=tuple(CodeTest("assert", "f() == 1") for _ in range(8)))
    run = sandbox.run(spec.job(code), Limits(timeout=0.25))
    assert run.timed_out and measure(spec, code, run).error_class == "timeout"


@pytest.mark.skipif(os.geteuid() != 0, reason="under root only: the user namespace counts apart")
def test_processes_of_others_do_not_count_against_a_sample(sandbox: Sandbox) -> None:
    # other programs' processes under ``nobody`` (as other samples' would be) reach the
    # sample's process limit; its fork must still succeed: its verdict is its own
    code = (
        "import os\n"
        "def f():\n"
        "    child = os.fork()\n"
        "    if child == 0:\n"
        "        os._exit(0)\n"
        "    os.waitpid(child, 0)\n"
        "    return 1\n"
    )
    with processes_of(65534, Limits().processes + 2):
        check = "def check(candidate):\n    assert candidate() == 1\n"
        assert verdicts(sandbox, code, check) == [True]
