"""``prompteval view``: the results history in a browser, human review and calibration there."""
