from shop.money import to_cents


def total(prices, discount_percent=0):
    """The cart's total in cents, the discount rounded down to whole cents."""
    cents = sum(to_cents(p) for p in prices)
    return cents - cents * discount_percent / 100
