"""Keyed layers beside global ones, on any engine: by key where every global layer
refuses nothing alone, else in one pass.

All or nothing, a global layer is charged only by the events every layer admits: a part
of the events it would be charged by alone. For the limiters that say so
(``Rule::ADMITS_ANY_PART``: a count, a log, a bucket's level, each a sum over the events
charged; a property test holds them to it), fewer events charged leave at least as much
room, so a global layer that refuses no event alone refuses none in the run, and the
keyed layers decide as if it were not there: each key alone, by key. Its own report is
then a replay of one stream over every row, the rows that passed decided so (for a
limiter that delays nothing: ``splits_beside``). Whether each global layer refuses nothing alone is found first, by a replay
of it alone over every row, in parallel.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from . import _argv, _native

# A layer spelled in the keys a limit has on its own.
_PLAIN = {"algo", "rate", "burst", "cost"}

# How layers run: split by key beside global layers that refuse nothing, or in one pass.
_BESIDE = "by key: the global layers refuse nothing"
_ONE_PASS = "sequential"


class Split:
    """Layers keyed by one column beside global ones: the keyed layers' command line and
    column, and each global layer's place, SPEC and command line as the only limit."""

    def __init__(self, given: dict[str, Any]) -> None:
        limits = given["limits"]
        keyed, self.apart = [], []
        self.keyed: list[str] = []
        self.argv: list[str] = []
        self.key: str | None = None
        for place, spec in enumerate(limits):
            pairs = [item.split("=", 1) for item in spec.split(",")]
            if any(len(pair) != 2 for pair in pairs):
                return
            limit = dict(pairs)
            if "key" in limit:
                keyed.append(spec)
            elif set(limit) <= _PLAIN and _native.splits_beside(limit.get("algo", "")):
                alone = _argv("replay", {**{k: v for k, v in given.items() if k != "limits"}, **limit})
                self.apart.append((place, spec, limit["algo"], "cost" not in limit, alone))
            else:
                return
        self.keyed = keyed
        self.argv = _argv("replay", {**given, "limits": keyed})
        if keyed and self.apart:
            self.key = _native.layers_key(self.argv)


def _replay_beside(
    given: dict[str, Any],
    one_stream: Callable[..., dict[str, Any]],
    keyed_report: Callable[[list[str], str, bool], bytes],
    keyed_decisions: Callable[[list[str], str], Any],
) -> tuple[dict[str, Any] | None, str]:
    """The program's report of layers keyed by one column beside global ones (`given`'s
    ``limits``), by key, if every global layer refuses nothing alone, and the method;
    else ``None`` and the method of one pass, with why. The engine's own work:
    `one_stream(frame, argv, algo, light, decided)`, a replay of one limit over every row
    (of `frame`, whose ``passed`` says each row's decision if `decided`);
    `keyed_report(argv, key, light)`, the merged report of layers by key; and
    `keyed_decisions(argv, key)`, the rows with ``passed``, decided by key."""
    split = Split(given)
    if split.key is None:
        return None, _ONE_PASS
    for place, spec, algo, light, alone in split.apart:
        report = one_stream(None, alone, algo, light, False)
        if report["dropped"]:
            return None, f"{_ONE_PASS}: `{spec}` refuses {report['dropped']} alone"
    light = not any("cost=" in spec for spec in given["limits"])
    report = json.loads(keyed_report(split.argv, split.key, light))
    # The rows as the keyed layers decide them, which every global layer admits.
    decided = keyed_decisions(split.argv, split.key)
    for place, spec, algo, light, alone in split.apart:
        layer = one_stream(decided, alone, algo, light, True)
        report["layers"].insert(place, {"spec": spec, "refused": 0, "only": 0, "alone": 0, **layer})
    return report, _BESIDE
