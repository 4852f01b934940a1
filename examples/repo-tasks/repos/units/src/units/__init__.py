"""Lengths in other units, to meters."""

FACTORS = {"m": 1.0, "km": 1000.0, "ft": 0.348, "in": 0.0254}


def to_meters(value, unit):
    return value * FACTORS[unit]
