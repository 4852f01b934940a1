from shop.cart import total
from shop.money import to_cents


def test_to_cents_whole():
    assert to_cents("2.00") == 200


def test_to_cents_exact():
    assert to_cents("0.29") == 29


def test_total_discount_in_whole_cents():
    assert total(["0.29", "1.00"], discount_percent=10) == 117
