import pytest
from units import to_meters


def test_meters():
    assert to_meters(3, "km") == 3000.0


def test_feet():
    assert to_meters(10, "ft") == pytest.approx(3.048)
