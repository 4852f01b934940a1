"""Code-generation cases, by job: ``spec`` (a case's fields, validated once), ``extract``
(the code in an answer), ``measure`` (a run's metrics against the case's tests) and
``runner`` (runs in the sandbox pool: the reference's calibration, samples queued ahead,
one run per distinct code).
"""
