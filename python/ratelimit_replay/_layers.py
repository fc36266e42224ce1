"""Keyed layers beside global ones, on any engine: by key where every global layer
refuses nothing alone, else in one pass.

All or nothing, a global layer is charged only by the events every layer admits: a part
of the events it would be charged by alone. For the limiters that say so
(``Rule::ADMITS_ANY_PART``: a count, a log, a bucket's level, each a sum over the events
charged; a property test holds them to it), fewer events charged leave at least as much
room, so a global layer that refuses no event alone refuses none in the run, and the
keyed layers decide as if it were not there: each key alone, by key. Its own report is
then a replay of one stream over every row, the rows that passed decided so (for a
limiter that delays nothing). Which layers split so is the engine's to say
(``Parts.beside``, in Rust); whether each global layer refuses nothing alone is found
first, by a replay of it alone over every row, in parallel.
"""

from __future__ import annotations

import json
from typing import Any, Callable

# How layers run: split by key beside global layers that refuse nothing, or in one pass.
_BESIDE = "by key: the global layers refuse nothing"
_ONE_PASS = "sequential"


def _replay_beside(
    job: Any,
    limits: list[str],
    one_stream: Callable[..., dict[str, Any]],
    keyed_report: Callable[[Any, str, bool], bytes],
    keyed_decisions: Callable[[Any, str], Any],
) -> tuple[dict[str, Any] | None, str]:
    """The program's report of layers keyed by one column beside global ones (``job``'s,
    whose SPECs are ``limits``), by key, if every global layer refuses nothing alone, and
    the method; else ``None`` and the method of one pass, with why. The engine's own work:
    `one_stream(frame, job, light, decided)`, a replay of one limit over every row (of
    `frame`, whose ``passed`` says each row's decision if `decided`);
    `keyed_report(job, key, light)`, the merged report of layers by key; and
    `keyed_decisions(job, key)`, the rows with ``passed``, decided by key."""
    split = job.beside()
    if split is None:
        return None, _ONE_PASS
    keyed, key, apart = split
    for place, spec, weighed, alone in apart:
        report = one_stream(None, alone, not weighed, False)
        if report["dropped"]:
            return None, f"{_ONE_PASS}: `{limits[place]}` refuses {report['dropped']} alone"
    light = not any("cost=" in spec for spec in limits)
    report = json.loads(keyed_report(keyed, key, light))
    # The rows as the keyed layers decide them, which every global layer admits.
    decided = keyed_decisions(keyed, key)
    for place, spec, weighed, alone in apart:
        layer = one_stream(decided, alone, not weighed, True)
        report["layers"].insert(place, {"spec": spec, "refused": 0, "only": 0, "alone": 0, **layer})
    return report, _BESIDE
