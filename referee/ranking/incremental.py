"""A league's ratings: updated as each result is stored, settled per batch, checked by replay.

A round robin's leaderboard replays every stored match (:mod:`referee.ranking.ratings`); a
league of hundreds of thousands of matches would take minutes per call that way (one
TrueSkill update's cost: docs/performance.md, "Ranking"). So a league keeps its ratings in
its store (:mod:`referee.tournament.league`) and the leaderboard reads them: its cost grows
with the entrants, not the matches.

* **Live.** Each result updates the ratings of its seats (:func:`rate_result`) in the
  transaction that stores it: what the leaderboard shows while the league runs. Within a
  batch, results arrive in whatever order the workers finish them, and TrueSkill depends on
  the order, so live ratings depend on the arrival order.
* **Settled.** When every match of a batch is finished, its results are folded into the
  ratings settled before it in **key order** (:func:`settle_batch`), and the live ratings
  become those. Key order is batch order (the key starts with the batch), so the settled
  ratings are exactly a replay of every result in key order, made one batch at a time; the
  planner reads only these (:mod:`referee.ranking.matchmaking`), which is why the arrival
  order never changes a choice. Settling costs nearly nothing: a batch's tables are
  disjoint, so only the order of each table's own results matters, and a table whose
  results arrived in key order (nearly all, since its seat rotations are handed out a
  batch's width apart) already has its settled ratings (:func:`in_arrival_order`); only the
  others are rated again.
* **Checked.** :func:`check_league` (``referee league check``) replays every stored result
  in key order from the initial ratings and compares: the settled ratings must be exactly
  the replay of the settled batches, and every entrant's record (matches, places, firsts,
  forfeits, faults) exactly its results'; the live ratings may **drift** from the full
  replay only through the arrival order of the batch still open, which it reports (a few
  hundredths of mu, typically; zero once the batch is settled). Every stored suspension
  must be what the results before it show (that many forfeits of the version's own in a
  row, the last in the match it names), and a suspended version must have no result while
  it was held. Anything else is a problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import trueskill

from referee.ranking.ratings import rating_places, update
from referee.results import MatchResult
from referee.specs import MatchSpec, StoredMatch, StoredSeat
from referee.tournament.league import LeagueEntrant, LeagueLedger, SeatTally, batch_of

__all__ = [
    "Drift",
    "LeagueCheck",
    "Rating",
    "check_league",
    "in_arrival_order",
    "rate_result",
    "settle_batch",
    "stored_match",
    "tallies",
]

Rating = tuple[float, float]
"""``(mu, sigma)``."""

_EXACT = 0.0
"""Settled ratings and a replay are the same updates in the same order (through
:func:`rate_result`): equal to the last bit."""


def stored_match(spec: MatchSpec, result: MatchResult) -> StoredMatch:
    """A finished match as the store gives it back (seats by place, then seat), each seat
    named by ``spec``'s table."""
    seats = sorted(
        (
            StoredSeat(
                st.seat,
                spec.table[st.seat],
                st.place,
                st.score,
                st.forfeit,
                st.fault.kind if st.fault else None,
                st.fault.detail if st.fault else None,
            )
            for st in result.standings
        ),
        key=lambda seat: (seat.place, seat.seat),
    )
    return StoredMatch(spec, tuple(seats))


def tallies(match: StoredMatch) -> list[SeatTally]:
    """What ``match`` adds to each seat's record (a forfeit shares the last place, as in
    every rating: :func:`~referee.ranking.ratings.rating_places`)."""
    places = dict(rating_places(match))
    return [
        SeatTally(
            seat.name,
            places[seat.name],
            places[seat.name] == 1 and not seat.forfeit,
            seat.forfeit,
            seat.fault_kind,
        )
        for seat in sorted(match.seats, key=lambda s: s.seat)
    ]


def rate_result(
    env: trueskill.TrueSkill, ratings: Mapping[str, Rating], match: StoredMatch
) -> dict[str, Rating]:
    """The seats' ratings after ``match``, from ``ratings`` (theirs before it; a seat not
    there starts at the environment's initial rating).

    Ratings go in and out as ``(mu, sigma)``, as the league stores them: TrueSkill keeps a
    rating as precision and precision-adjusted mean, and the way there and back may change
    the last bit of ``mu``, so every way of rating a league (live, settled, the check's
    replay) goes through here, one result at a time, and they agree to the last bit.
    """
    initial = (env.mu, env.sigma)
    current = {
        seat.name: env.create_rating(*ratings.get(seat.name, initial)) for seat in match.seats
    }
    update(env, current, match)
    return {seat.name: (current[seat.name].mu, current[seat.name].sigma) for seat in match.seats}


def settle_batch(
    env: trueskill.TrueSkill, settled: Mapping[str, Rating], matches: Iterable[StoredMatch]
) -> dict[str, Rating]:
    """The settled ratings of the seats of ``matches``: ``settled`` (theirs before the
    batch), then the matches in key order."""
    current = dict(settled)
    seated: set[str] = set()
    for match in sorted(matches, key=lambda m: m.spec.key):
        current.update(rate_result(env, current, match))
        seated.update(seat.name for seat in match.seats)
    return {name: current[name] for name in sorted(seated)}


def in_arrival_order(matches: Sequence[StoredMatch], arrival: Mapping[str, int]) -> bool:
    """Whether ``matches`` (one table's, in key order) were stored in key order
    (``arrival``: the results chain's position of each, :meth:`~referee.tournament.league.
    LeagueLedger.arrival`). The tables of a batch are disjoint and TrueSkill updates of
    disjoint seats commute, so a table whose results arrived in key order has its live
    ratings equal, to the last bit, to the key-order replay: settling re-rates only the
    other tables."""
    positions = [arrival.get(m.spec.key, -1) for m in matches]
    return positions == sorted(positions)


@dataclass(frozen=True)
class Drift:
    """One entrant whose live rating is not the full replay's: by how much."""

    label: str
    mu: float
    sigma: float
    replay_mu: float
    replay_sigma: float

    @property
    def size(self) -> float:
        return max(abs(self.mu - self.replay_mu), abs(self.sigma - self.replay_sigma))


@dataclass(frozen=True)
class LeagueCheck:
    """What :func:`check_league` found (see the module docstring)."""

    matches: int
    settled_batches: int
    open_matches: int
    """Results of the batch still open (their arrival order is the drift's one source)."""
    entrants: int
    drift: tuple[Drift, ...] = ()
    problems: tuple[str, ...] = ()
    order_changed: bool = False
    """Whether the live ranking orders any two entrants otherwise than the replay."""

    @property
    def largest(self) -> float:
        return max((d.size for d in self.drift), default=0.0)


@dataclass
class _Record:
    matches: int = 0
    place_sum: int = 0
    firsts: int = 0
    forfeits: int = 0
    faults: dict[str, int] = field(default_factory=dict)

    def add(self, tally: SeatTally) -> None:
        self.matches += 1
        self.place_sum += tally.place
        self.firsts += tally.first
        self.forfeits += tally.forfeit
        if tally.fault is not None:
            self.faults[tally.fault] = self.faults.get(tally.fault, 0) + 1


def check_league(ledger: LeagueLedger, env: trueskill.TrueSkill) -> LeagueCheck:
    """Replay every result of the league in key order and compare (module docstring).

    Reads one match at a time (:meth:`LeagueLedger.completed`): memory stays flat however
    many matches are stored. Call it inside :meth:`~referee.tournament.store.Store.snapshot`
    to check a running league at one moment.
    """
    entrants = ledger.entrants()
    settled_batches = ledger.settled_batches()
    ratings: dict[str, Rating] = {label: (env.mu, env.sigma) for label in entrants}
    records = {label: _Record() for label in entrants}
    at_settled: dict[str, Rating] | None = None
    matches = open_matches = 0
    problems: list[str] = []
    for match in ledger.completed():
        if (batch_of(match.spec.key) or 0) >= settled_batches:
            if at_settled is None:
                at_settled = dict(ratings)
            open_matches += 1
        ratings.update(rate_result(env, ratings, match))
        for tally in tallies(match):
            records.setdefault(tally.label, _Record()).add(tally)
        matches += 1
    if at_settled is None:
        at_settled = dict(ratings)
    for label, entrant in entrants.items():
        mu, sigma = at_settled.get(label, (env.mu, env.sigma))
        if not _same((entrant.settled_mu, entrant.settled_sigma), (mu, sigma)):
            problems.append(
                f"{label}: settled rating {entrant.settled_mu:.6f} ± {entrant.settled_sigma:.6f} "
                f"is not the replay's {mu:.6f} ± {sigma:.6f}"
            )
        problems += _record_problems(label, entrant, records.get(label, _Record()))
    for label in sorted(set(records) - set(entrants)):
        problems.append(f"{label}: has results but is no entrant of the league")
    problems += _suspension_problems(ledger, entrants)
    drift = tuple(
        Drift(label, e.mu, e.sigma, *ratings[label])
        for label, e in entrants.items()
        if label in ratings and not _same((e.mu, e.sigma), ratings[label])
    )
    return LeagueCheck(
        matches,
        settled_batches,
        open_matches,
        len(entrants),
        drift,
        tuple(problems),
        _order(entrants, ratings),
    )


def _suspension_problems(ledger: LeagueLedger, entrants: Mapping[str, LeagueEntrant]) -> list[str]:
    """Each stored suspension against the results: the ``forfeits`` results before it are
    forfeits of the version's own (since it joined or was last seated again), the last in
    its match, and the version has no result while it held."""
    problems = []
    start: dict[str, int] = {label: e.joined for label, e in entrants.items()}
    for held in ledger.suspensions():
        since = start.get(held.label, 0)
        faults = ledger.own_forfeits(held.label, held.forfeits, since, before=held.since)
        if len(faults) < held.forfeits or faults[0].key != held.match_key:
            problems.append(
                f"{held.label}: suspended from batch {held.since} after {held.forfeits} "
                "forfeits of its own in a row, which its results before it do not show"
            )
        if ledger.results_between(held.label, held.since, held.lifted):
            problems.append(
                f"{held.label}: has results while it was suspended (from batch {held.since})"
            )
        if held.lifted is not None:
            start[held.label] = held.lifted
    return problems


def _same(a: Rating, b: Rating) -> bool:
    return abs(a[0] - b[0]) <= _EXACT and abs(a[1] - b[1]) <= _EXACT


def _record_problems(label: str, entrant: LeagueEntrant, found: _Record) -> list[str]:
    pairs = {
        "matches": (entrant.matches, found.matches),
        "place_sum": (entrant.place_sum, found.place_sum),
        "firsts": (entrant.firsts, found.firsts),
        "forfeits": (entrant.forfeits, found.forfeits),
        "faults": (entrant.faults, dict(sorted(found.faults.items()))),
    }
    return [
        f"{label}: {name} stored as {stored}, its results say {replayed}"
        for name, (stored, replayed) in pairs.items()
        if stored != replayed
    ]


def _order(entrants: Mapping[str, LeagueEntrant], replay: Mapping[str, Rating]) -> bool:
    """Whether ranking by the live ratings and by the replay's differ."""

    def ranked(ratings: Mapping[str, Rating]) -> Sequence[str]:
        return sorted(ratings, key=lambda n: (-(ratings[n][0] - 3 * ratings[n][1]), n))

    live = {n: (e.mu, e.sigma) for n, e in entrants.items()}
    return list(ranked(live)) != list(ranked({n: replay[n] for n in live if n in replay}))
