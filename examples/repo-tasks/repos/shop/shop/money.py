def to_cents(amount):
    """Euros (a string such as '1.10') to whole cents."""
    return int(float(amount) * 100)
