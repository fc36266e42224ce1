"""The package's types hold: `mypy --strict` passes on the typed test file and on every
example of the Python docs, as a typed program that uses them would be checked."""

from __future__ import annotations

import doctest

from mypy import api

from conftest import REPO


def strict(*paths: str) -> None:
    """Runs `mypy --strict` on `paths` with the package's own settings, and fails with what
    it said unless it passes."""
    config = str(REPO / "python" / "pyproject.toml")
    cache = str(REPO / "target" / "mypy-cache")
    said, errors, status = api.run(["--strict", "--config-file", config, "--cache-dir", cache, *paths])
    assert status == 0, said + errors


def test_the_typed_test_file_passes_mypy_strict():
    strict(str(REPO / "python" / "tests" / "test_typed_api.py"))


def test_the_docs_examples_pass_mypy_strict(tmp_path):
    # The examples as one program, in order, as doctest runs them.
    text = (REPO / "docs" / "python.md").read_text()
    examples = doctest.DocTestParser().get_examples(text)
    assert examples
    program = tmp_path / "python_md_examples.py"
    program.write_text("".join(example.source for example in examples))
    strict(str(program))
