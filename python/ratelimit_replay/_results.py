"""The typed answers of ``compare``, ``min_bucket`` and ``min_rate``: each is the object the
program prints in JSON (a ``dict``, equal to it, and written back by ``json.dumps``), whose
fields are also attributes, the main ones typed."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Window:
    """The busiest window of a stream: where it starts, how long it is, and how many events
    (or units) fell in it."""

    #: Its length, in seconds.
    length_s: float
    #: When it starts (RFC 3339), or None with no events.
    start: str | None
    #: How many events (units, with a cost) it holds.
    count: int

    @staticmethod
    def _of(fields: Any) -> Window | None:
        if fields is None:
            return None
        return Window(fields["length_s"], fields.get("start"), fields["count"])


@dataclasses.dataclass(frozen=True)
class Span:
    """A stretch of events: from the first's time to the last's (RFC 3339), and how many."""

    start: str
    end: str
    events: int

    @staticmethod
    def _of(fields: Any) -> Span | None:
        if fields is None:
            return None
        return Span(fields["start"], fields["end"], fields["events"])


class _Row(dict[str, Any]):
    """An object of the program's JSON, as a dict; a field that no dict method is named
    for is also an attribute (``row.worst_key``), and ``row["keys"]`` reads any."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_dict(self) -> dict[str, Any]:
        """Returns the object as the program prints it in JSON, as a new plain dict."""
        return copy.deepcopy(dict(self))


class _Figures:
    """A limiter's figures, as the program's JSON gives a report of one limit, each a typed
    attribute; where the fields are kept is the class's own (``_field``)."""

    def _field(self, name: str) -> Any:
        raise NotImplementedError

    @property
    def algorithm(self) -> str | None:
        """The limiter; None for a policy of several (see its ``layers``)."""
        return self._field("algorithm")

    @property
    def rate(self) -> str | None:
        """The rate, N per period, for one limit."""
        return self._field("rate")

    @property
    def burst(self) -> int | None:
        """The burst, for one limit whose limiter has one."""
        return self._field("burst")

    @property
    def events(self) -> int:
        """The events replayed (units, with a cost column: see ``to_dict()``)."""
        return int(self._field("events"))

    @property
    def passed(self) -> int:
        """The events that passed."""
        return int(self._field("passed"))

    @property
    def dropped(self) -> int:
        """The events that were dropped."""
        return int(self._field("dropped"))

    @property
    def busiest_window(self) -> Window | None:
        """The busiest window of what passed, for one limit."""
        return Window._of(self._field("busiest_window"))

    @property
    def demand_busiest_window(self) -> Window | None:
        """The busiest window of all the events, for one limit."""
        return Window._of(self._field("demand_busiest_window"))

    @property
    def min_bucket(self) -> int | None:
        """The smallest token bucket at the rate that loses no event, for one limit; with a
        key, the largest any key needs."""
        return self._field("min_bucket")


class Limited(_Row, _Figures):
    """One limiter's report beside others, as ``ratelimit compare --format json`` gives
    it: a limiter at a rate, or a whole configuration (with its ``spec``)."""

    def _field(self, name: str) -> Any:
        return self.get(name)

    @property
    def spec(self) -> str | None:
        """The configuration as ``--limit`` writes it; None for a limiter at the rate."""
        return self.get("spec")


class Configurations(_Row):
    """Whole configurations side by side, as ``ratelimit compare --limit ... --format
    json`` gives them: each one's report and, with two, what changes."""

    @property
    def events(self) -> int:
        """The events replayed."""
        return int(self["events"])

    @property
    def configurations(self) -> list[Limited]:
        """Each configuration's report, in order."""
        return [Limited(fields) for fields in self["configurations"]]

    @property
    def changes(self) -> dict[str, Any] | None:
        """With two configurations: the events newly refused and newly passed by the
        second, and the keys that change most."""
        return self.get("changes")


class MinBucket(_Row):
    """The smallest token bucket that loses nothing at one rate, as ``ratelimit min-bucket
    --format json`` gives it: of one stream, or with a key of the key that needs most."""

    @property
    def rate(self) -> str:
        """The rate, as asked."""
        return str(self["rate"])

    @property
    def min_bucket(self) -> int:
        """The smallest lossless bucket: of the stream, or of the key that needs most."""
        return int(self["min_bucket"])

    @property
    def span(self) -> Span | None:
        """The stretch of events that needs it: of the stream, or of the key that needs
        most."""
        return Span._of(self.get("span"))

    @property
    def worst_key(self) -> dict[str, Any] | None:
        """With a key: the key that needs the largest bucket, that bucket and its stretch."""
        return self.get("worst_key")


class MinRate(_Row):
    """The smallest rate at which a bucket of one burst loses nothing, as ``ratelimit
    min-rate --format json`` gives it."""

    @property
    def burst(self) -> int:
        """The burst, as asked."""
        return int(self["burst"])

    @property
    def rate(self) -> str | None:
        """The smallest lossless rate, exact (N per period); None if none is."""
        return self.get("rate")

    @property
    def per_hour(self) -> float | None:
        """That rate in events an hour (rounded, for reading)."""
        return self.get("per_hour")

    @property
    def span(self) -> Span | None:
        """The stretch of events that sets it."""
        return Span._of(self.get("span"))

    @property
    def worst_key(self) -> dict[str, Any] | None:
        """With a key: the key that needs the highest rate, each key with a bucket of its
        own (``rate`` and ``span`` are its)."""
        return self.get("worst_key")


class LayerNeeds(_Row):
    """What each layer of a policy needs, as ``ratelimit min-bucket --limit ... --format
    json`` gives it: each layer's smallest lossless bucket (of its worst key, if keyed),
    whether its own burst fits it, and the layer that refuses most."""

    @property
    def layers(self) -> list[dict[str, Any]]:
        """Each layer's need, in order: its ``spec``, ``burst``, ``min_bucket``, ``fits``
        and, if keyed, ``worst_key``."""
        return list(self["layers"])

    @property
    def tightest(self) -> str | None:
        """The layer whose burst falls furthest short of its need, as ``--limit`` writes it."""
        return self.get("tightest")


class SettledLayer(_Row):
    """What one layer settled after the response did: an object of ``ratelimit replay
    --duration --format json``'s ``layers``."""

    @property
    def spec(self) -> str:
        """The layer, as ``--limit`` writes it."""
        return str(self["spec"])

    @property
    def charge(self) -> str:
        """When it charges: ``arrival``, ``reserve`` or ``completion``."""
        return str(self["charge"])

    @property
    def refused(self) -> int:
        """The requests it refused when asked."""
        return int(self["refused"])

    @property
    def largest_debt(self) -> int:
        """The most units one key owed right after a settlement."""
        return int(self["largest_debt"])

    @property
    def most_spent(self) -> int | None:
        """The most real cost one key spent in any window of the period; None for a cap."""
        spent = self["most_spent"]
        return None if spent is None else int(spent)

    @property
    def overshot(self) -> bool:
        """Whether ``most_spent`` is over the limit."""
        return bool(self["overshot"])

    @property
    def peak_in_flight(self) -> int:
        """The most admitted requests of one key in flight at once."""
        return int(self["peak_in_flight"])


class Settled(_Row):
    """What a replay of requests settled after the response found: the object ``ratelimit
    replay --duration --format json`` prints."""

    @property
    def requests(self) -> int:
        """The requests read."""
        return int(self["requests"])

    @property
    def passed(self) -> int:
        """The requests every layer admitted."""
        return int(self["passed"])

    @property
    def refused(self) -> int:
        """The requests some layer refused."""
        return int(self["refused"])

    @property
    def peak_in_flight(self) -> int:
        """The most admitted requests in flight at once, of all keys."""
        return int(self["peak_in_flight"])

    @property
    def layers(self) -> list[SettledLayer]:
        """Each layer, in the order given."""
        return [SettledLayer(layer) for layer in self["layers"]]

    @property
    def retry(self) -> dict[str, Any] | None:
        """With ``retry=``: what refused clients coming back would have done, a simulation
        (``served_first``, ``served_after_retry``, ``gave_up``, ``returns``,
        ``added_latency_us``)."""
        retried = self.get("retry")
        return None if retried is None else copy.deepcopy(dict(retried))


class MinLimit(_Row):
    """The smallest limit that refuses no request: the object ``ratelimit min-limit
    --format json`` prints."""

    @property
    def limit(self) -> int | None:
        """The smallest limit (with a key, of the key that needs the most); None if none up
        to the largest rate does."""
        limit = self["limit"]
        return None if limit is None else int(limit)

    @property
    def kind(self) -> str:
        """What ``limit`` counts: ``rate`` or ``concurrency``."""
        return str(self["kind"])

    @property
    def worst_key(self) -> str | None:
        """With a key, the key that needs the largest limit."""
        keys = self.get("keys")
        return None if keys is None else str(keys["worst_key"])


class MinTier(_Row):
    """What each tier of a provider's preset refused of a log's requests, and the smallest
    that refused none: the object ``ratelimit min-limit --preset --format json`` prints."""

    @property
    def smallest(self) -> str | None:
        """The first tier, in the provider's order, that refuses no request; None if none
        does."""
        smallest = self["smallest"]
        return None if smallest is None else str(smallest)

    @property
    def tiers(self) -> list[dict[str, Any]]:
        """Each tier: its ``name``, the ``date`` it was read, the requests it ``refused``, and
        each layer's refusals."""
        return copy.deepcopy(list(self["tiers"]))


class FrontierPoint(_Row):
    """One rate of ``recommend``'s frontier: the least burst that leaves the share of keys
    untouched there, and what the other keys lose."""

    @property
    def rate(self) -> str:
        """The rate, as given or spread."""
        return str(self["rate"])

    @property
    def burst(self) -> int:
        """The least burst (a token bucket's capacity) that leaves the share untouched."""
        return int(self["burst"])

    @property
    def untouched_keys(self) -> int:
        """The keys that lose nothing here."""
        return int(self["untouched_keys"])

    @property
    def refused(self) -> int:
        """The events the other keys lose here."""
        return int(self["refused"])


class Recommendation(_Row):
    """``recommend``'s answer, as ``ratelimit recommend --format json`` gives it: the
    frontier, a point a rate, and the one recommended, with why."""

    @property
    def key_count(self) -> int:
        """How many keys there are: the JSON's ``keys`` (``dict.keys`` keeps its name)."""
        return int(self["keys"])

    @property
    def frontier(self) -> list[FrontierPoint]:
        """For each rate, the least burst that leaves the share untouched."""
        return [FrontierPoint(point) for point in self["frontier"]]

    @property
    def recommended(self) -> FrontierPoint:
        """The point recommended; its ``why`` says why."""
        return FrontierPoint(self["recommended"])

    @property
    def window(self) -> dict[str, Any] | None:
        """With ``window=``: the keys' busiest counts in it, and the limit at the share."""
        return self.get("window")

    @property
    def system(self) -> dict[str, Any] | None:
        """With ``system=``: the point in the system's own terms, and its configuration."""
        return self.get("system")
