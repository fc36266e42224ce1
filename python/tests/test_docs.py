"""Every example in the Python docs runs as it is written."""

from __future__ import annotations

import doctest

import pytest

from conftest import REPO


@pytest.mark.parametrize("page", ["docs/python.md", "python/README.md"])
def test_the_examples_in_the_docs_run_as_written(page):
    result = doctest.testfile(
        str(REPO / page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted > 0, f"{page} has no example"
    assert result.failed == 0
