"""The exceptions and the warning the package raises: one kind for each way a call fails.

Every exception is a :class:`RatelimitError`. Bad data and an impossible limit are
``ValueError`` too, as Python's own functions raise for a bad argument; a missing file is
Python's own ``FileNotFoundError`` (an ``OSError``), and Ctrl-C is ``KeyboardInterrupt``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RatelimitError", "InputError", "PolicyError", "BackendError", "RatelimitWarning"]


class RatelimitError(Exception):
    """What the engine refused or failed to do; its message is the program's one line."""


class InputError(RatelimitError, ValueError):
    """The data cannot be read: a field that is not what its column must hold, or data
    whose shape the call cannot take.

    Where the engine knows it, the error says where: ``path`` and ``line`` (counted from 1)
    for a file; ``row`` (counted from 0, as pyarrow counts) for Arrow data and for a
    Parquet file's rows; ``column``, the field's column.
    """

    path: str | None
    line: int | None
    row: int | None
    column: str | None

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.row = row
        self.column = column

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whole, fields and all, as Spark and Dask send an executor's error on.
        fields = dict(path=self.path, line=self.line, row=self.row, column=self.column)
        return (_input_error, (str(self), fields))


def _input_error(message: str, fields: dict[str, Any]) -> InputError:
    return InputError(message, **fields)


class PolicyError(RatelimitError, ValueError):
    """What was asked cannot be done: a limit that is no limit (``burst=0`` for GCRA), a
    value of the wrong form, or options that do not go together."""


class BackendError(RatelimitError):
    """Redis, or the way to it, failed: it cannot be reached, answered too late, or not as
    a Redis server does."""


class RatelimitWarning(UserWarning):
    """A note the engine has on what it was given, such as times that fall on whole
    seconds: the program's ``ratelimit: note:`` lines."""
