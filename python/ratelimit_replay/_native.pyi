# Type stubs of the native part: the limits as classes, and the calls that run the engine.
from typing import Any, final

def report(
    data: Any,
    path: str,
    limits: list[Limit],
    layered: bool,
    window: str | None = None,
    *,
    side_by_side: bool = False,
    options: dict[str, Any] | None = None,
) -> None: ...

def settled_replay(
    data: Any,
    limits: list[Limit],
    window: str | None = None,
    *,
    duration: str | None = None,
    end: str | None = None,
    retry: str | None = None,
    options: dict[str, Any] | None = None,
) -> bytes: ...
def min_limit(
    data: Any,
    *,
    per: str | None = None,
    cost: str | int | None = None,
    reserve: str | int | None = None,
    charge: str | None = None,
    duration: str | None = None,
    end: str | None = None,
    key: str | None = None,
    concurrency: bool = False,
    options: dict[str, Any] | None = None,
) -> bytes: ...
def min_tier(
    data: Any,
    preset: str,
    *,
    duration: str | None = None,
    end: str | None = None,
    options: dict[str, Any] | None = None,
) -> bytes: ...
def presets() -> bytes: ...
def replay(
    data: Any,
    limits: list[Limit],
    layered: bool,
    window: str | None = None,
    *,
    options: dict[str, Any] | None = None,
    needs: bool = False,
) -> tuple[bytes, list[Any]]: ...
def shorthand(function: str, flags: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]: ...
def compare(
    data: Any,
    rate: str,
    *,
    burst: int | None = None,
    algos: list[str] | None = None,
    key: str | None = None,
    cost: str | int | None = None,
    params: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
) -> bytes: ...
def configurations(data: Any, limits: list[Limit], *, options: dict[str, Any] | None = None) -> bytes: ...
def min_bucket(
    data: Any, rates: list[str], *, key: str | None = None, cost: str | int | None = None, options: dict[str, Any] | None = None
) -> bytes: ...
def min_rate(
    data: Any,
    bursts: int | str | list[int],
    *,
    key: str | None = None,
    cost: str | int | None = None,
    options: dict[str, Any] | None = None,
) -> bytes: ...
def recommend(
    data: Any,
    key: str,
    *,
    rates: list[str] = ...,
    untouched: str | None = None,
    cost: str | int | None = None,
    options: dict[str, Any] | None = None,
) -> bytes: ...
def curve(
    data: Any, *, key: str | None = None, cost: str | int | None = None, options: dict[str, Any] | None = None
) -> bytes: ...

class Sizing:
    def __init__(
        self, rates: list[str], key: str | None = None, cost: str | int | None = None, options: dict[str, Any] | None = None
    ) -> None: ...

def chunk_lines(sizing: Sizing, data: Any, name: str) -> list[str]: ...
def merge_chunks(sizing: Sizing, chunks: list[list[str]]) -> bytes: ...
def range_starts(lines: list[str]) -> list[int]: ...

@final
class Parts:
    def __init__(
        self, limits: list[Limit], layered: bool, window: str | None = None, options: dict[str, Any] | None = None
    ) -> None: ...
    def method(self, report: bool = False) -> tuple[str, bool, str | None]: ...
    @property
    def key(self) -> str | None: ...
    def beside(self) -> tuple[Parts, str, list[tuple[int, str, bool, Parts]]] | None: ...
    def replay(self, data: Any, decisions: bool = False, name: str | None = None) -> tuple[bytes, list[Any] | None]: ...
    def replay_part(self, data: Any, name: str) -> tuple[str, list[Any]]: ...
    def stream_part(self, data: Any, name: str, passed: list[bool | None], start: int | None = None) -> tuple[str, list[Any]]: ...
    def range_line(self, data: Any, name: str) -> tuple[int, int, int | None] | None: ...
    def range_transfer(self, data: Any, name: str) -> str | None: ...
    def decide_range(self, data: Any, name: str, start: int) -> Any: ...
    def blocks(self) -> tuple[int, int]: ...
    def block_lines(self, data: Any) -> list[str]: ...
    def merge_parts(self, parts: list[str], blocks: list[str]) -> bytes: ...

class SettlingLimiter:
    def __init__(
        self,
        limits: list[Limit],
        *,
        redis: list[str] = ...,
        redis_prefix: str | None = None,
        redis_timeout: str | None = None,
    ) -> None: ...
    def decide(
        self, micros: int | None, key: bytes | None, values: dict[str, int]
    ) -> tuple[bool, int | None, list[int], int | None]: ...
    def settle(self, ticket: int, micros: int | None, cost: int | None, values: dict[str, int]) -> None: ...
    def open(self) -> int: ...

class Limiter:
    def __init__(
        self,
        limits: list[Limit],
        *,
        redis: list[str] = ...,
        redis_prefix: str | None = None,
        redis_timeout: str | None = None,
        empty_key: bytes | None = None,
        stop_counting_over_limit: bool = False,
    ) -> None: ...
    def decide(self, micros: int | None, key: bytes | None, cost: int | None) -> tuple[bool, int, int, int | None]: ...


def limiters() -> list[tuple[str, bool, bool]]: ...


@final
class Limit:
    """One limit: a limiter at a rate, with its burst, the column that keys it, what each
    event costs it, its own parameters, and the length of its busiest window; or a layer
    settled after the response (``charge=``, ``reserve=``, a cost summed over columns, or
    ``Limit("concurrency", max=N)``), which ``replay`` with ``duration=`` or ``end=``
    takes. Checked whole when built: a name no limit takes is a ``TypeError``, a value that
    makes no limit a ``PolicyError``."""

    def __init__(
        self,
        algo: str,
        rate: str | None = None,
        *,
        burst: int | None = None,
        window: str | None = None,
        cost: str | int | None = None,
        key: str | None = None,
        charge: str | None = None,
        reserve: str | int | None = None,
        max: int | None = None,
        **params: str | int | bool,
    ) -> None: ...
    @staticmethod
    def parse(spec: str) -> Limit:
        """The limit a ``--limit`` SPEC writes, as ``str(limit)`` gives it."""
    @property
    def algo(self) -> str: ...
    @property
    def rate(self) -> str | None: ...
    @property
    def burst(self) -> int | None: ...
    @property
    def window(self) -> str | None: ...
    @property
    def cost(self) -> int | str: ...
    @property
    def charge(self) -> str: ...
    @property
    def reserve(self) -> int | str | None: ...
    @property
    def max(self) -> int | None: ...
    @property
    def _of_requests(self) -> bool: ...
    @property
    def key(self) -> str | None: ...
    @property
    def params(self) -> dict[str, str | bool]: ...
    def __eq__(self, other: object) -> bool: ...


@final
class Policy:
    """Limits that decide together, all or nothing: an event passes only if every one
    admits it, and one refused charges none. Checked whole when built."""

    def __init__(self, limits: list[Limit] | tuple[Limit, ...]) -> None: ...
    @staticmethod
    def preset(name: str) -> Policy:
        """The layers of a provider's preset, ``PROVIDER:TIER:MODEL``."""
    @property
    def limits(self) -> list[Limit]: ...
    def __len__(self) -> int: ...

def settled_method(limits: list[Limit], *, duration: str | None = None, end: str | None = None) -> tuple[str, str]: ...
def settled_part(
    data: Any,
    limits: list[Limit],
    window: str | None = None,
    *,
    duration: str | None = None,
    end: str | None = None,
    options: dict[str, Any] | None = None,
) -> tuple[bytes, list[int], list[int], list[int]]: ...
def settled_merge(
    limits: list[Limit], parts: list[bytes], blocks: list[tuple[int, int, int]], *, input: str, window: str | None = None
) -> bytes: ...
def flight_block(first: int, kinds: list[int]) -> tuple[int, int, int]: ...
