# Type stubs of the native part: one call that runs a command of the engine.
from typing import Any

def call(args: list[str], data: Any | None = None, decisions: bool = False) -> tuple[bytes, Any | None]: ...
