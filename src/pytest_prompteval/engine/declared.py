"""The fields a project declares for its cases and prompts: ini keys plus hooks."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pytest_prompteval.core.schema import Declared

DECLARED_KEY = pytest.StashKey[Declared]()


def declared_fields(config: pytest.Config) -> Declared:
    """Computed once per run (rootdir conftests are loaded by then), the same in workers."""
    if DECLARED_KEY not in config.stash:
        hook = config.hook

        def names(ini: str, answers: list[Iterable[str] | None]) -> frozenset[str]:
            found = set(config.getini(ini))
            for answer in answers:
                found.update(str(name) for name in answer or ())
            return frozenset(found)

        config.stash[DECLARED_KEY] = Declared(
            names("prompteval_case_fields", hook.pytest_prompteval_case_fields()),
            names("prompteval_prompt_fields", hook.pytest_prompteval_prompt_fields()),
        )
    return config.stash[DECLARED_KEY]
