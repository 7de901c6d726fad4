"""Updating one entrant: what a replacement retires, and the matches that play its tables again.

``referee tournament run FILE --replace NAME`` accepts new files for an entrant that already
has results, and keeps every other result. The results its old version played are
**retired**: kept in the store with their logs and their links in the results chain, shown
in the bot's history, and counted in no rating, neither the replaced bot's nor its
opponents'. Those tables are played again by the new version against the same opponents,
so counting the old matches as well would count each of those tables twice, and half of it
against a program no longer entered.

What a replacement does follows from the stored matches alone (:func:`plan_replacement`),
so ``referee verify`` can recompute it:

* every stored match the entrant sits at that still counts (not retired yet), played or
  not, is retired by it;
* each of those the schedule made (not a play-off match) is **played again**: the same
  table, seats, deal number and rotation, under the original key with the replacement's
  generation before the rotation (``rr/3f1c2a9b0d4e/d003/r1`` replayed by replacement 2 is
  ``rr/3f1c2a9b0d4e/d003/v2/r1``, :func:`replay_key`);
* play-off matches are retired and not played again: they were planned for the order the
  old version had, and the play-offs go on from the results kept, planning new rounds
  where the order is still unsure.

**Fresh cards.** The opponents at a replaced table have seen its cards, so the new version
must not be played on them: each replay is dealt a deal nobody has seen. With ``duplicate =
"tables"`` every replayed match gets a deal of its own, named by its key (the replaced
tables all seat the entrant, so no two are disjoint and none could share a deal, as in a
gauntlet); with ``"rotations"`` the seat rotations of a replayed table deal share one new
deal, named by the table deal's key. Its seed comes from the deal secret like every other
(:func:`referee.tournament.deals.deal_seed`): the secret dealing the run's new matches,
a fresh one once the tournament's secret is revealed.

A replacement is stored in one transaction (the replacement, the retired matches, the
replays and the entrant's new record), and its plan link (:mod:`referee.tournament.chain`)
is chained before any result played after it; a run interrupted afterwards resumes like any
other, and ``--replace`` given again with the same files resumes it rather than refusing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from referee.errors import UsageError
from referee.specs import EntrantRecord, MatchSpec, Replacement, deal_key, playoff_round
from referee.text import printable
from referee.tournament.deals import deal_seed
from referee.tournament.scheduler import Duplicate
from referee.tournament.store import DealSecret, Store

__all__ = [
    "Replaced",
    "key_generation",
    "live_at",
    "live_key",
    "plan_replacement",
    "replace_entrants",
    "replay_key",
    "replay_spec",
    "scheduled_key",
]

_KEY = re.compile(r"(?P<deal>.+?)(?:/v(?P<generation>[1-9][0-9]{0,8}))?/r(?P<rotation>[0-9]+)")


def _parts(key: str) -> re.Match[str]:
    found = _KEY.fullmatch(key)
    if found is None:
        raise ValueError(f"{key!r} is not a match key (no rotation)")
    return found


def replay_key(key: str, generation: int) -> str:
    """The key of the match that plays ``key``'s table deal and rotation again for
    replacement ``generation`` (``key`` may be a replay itself: its generation is replaced)."""
    found = _parts(key)
    return f"{found['deal']}/v{generation}/r{found['rotation']}"


def scheduled_key(key: str) -> str:
    """The key the schedule gave the match that ``key`` plays again (``key`` itself when it
    is the schedule's own)."""
    found = _parts(key)
    return f"{found['deal']}/r{found['rotation']}"


def key_generation(key: str) -> int:
    """The replacement whose replay ``key`` is; 0 for a match of the schedule or the
    play-offs (and for anything that is no match key)."""
    found = _KEY.fullmatch(key)
    if found is None or found["generation"] is None:
        return 0
    return int(found["generation"])


def replay_spec(
    spec: MatchSpec, generation: int, *, seed: int, secret: bytes, duplicate: Duplicate
) -> MatchSpec:
    """The replay of ``spec`` for replacement ``generation``, on a deal of its own (its key's
    with ``"tables"``, its table deal's with ``"rotations"``), dealt with ``secret``."""
    key = replay_key(spec.key, generation)
    deal_id = key if duplicate == "tables" else deal_key(key)
    dealt = deal_seed(secret, "deal", seed, deal_id)
    return spec.model_copy(
        update={"key": key, "deal_id": deal_id, "deal_seed": dealt, "match_seed": dealt}
    )


def plan_replacement(
    live: Sequence[MatchSpec],
    name: str,
    generation: int,
    *,
    seed: int,
    secret: bytes,
    duplicate: Duplicate,
) -> tuple[list[str], list[MatchSpec]]:
    """What replacement ``generation`` of ``name`` does to the ``live`` matches (those that
    count, played or not): the keys it retires, and the replays it schedules (module
    docstring), both in key order."""
    retired = sorted(spec.key for spec in live if name in spec.table)
    by_key = {spec.key: spec for spec in live}
    replays = [
        replay_spec(by_key[key], generation, seed=seed, secret=secret, duplicate=duplicate)
        for key in retired
        if playoff_round(key) is None
    ]
    return retired, replays


def live_key(key: str, retired: Mapping[str, int]) -> str:
    """The match that counts for the scheduled ``key``: itself, or its latest replay.

    Each replay comes from a later replacement than the match it replaces; a store that
    says otherwise is not followed further (``referee verify`` names it).
    """
    scheduled = key
    while True:
        generation = retired.get(key)
        if generation is None or generation <= key_generation(key):
            return key
        key = replay_key(scheduled, generation)


def live_at(generation: int, added: int, retired: int | None) -> bool:
    """Whether a match added under replacement ``added`` (0: before any) and retired by
    ``retired`` (``None``: never) counted once replacement ``generation`` was made."""
    return added <= generation and (retired is None or retired > generation)


@dataclass(frozen=True)
class Replaced:
    """What ``--replace`` did to one entrant, for the run to say: ``retired`` matches (of
    which ``played`` had results), ``replays`` scheduled on fresh cards; ``resumed`` when an
    earlier run made this replacement (the same files) and this one goes on with it."""

    replacement: Replacement
    retired: int
    played: int
    replays: int
    resumed: bool = False

    def describe(self) -> str:
        """One line: ``bob replaced (replacement 1, sha256 …): 12 matches retired, …``."""
        r = self.replacement
        made = "resumed" if self.resumed else "made now"
        return (
            f"{r.name} replaced (replacement {r.generation}, {made}; sha256 "
            f"{r.old_sha256[:12]}… is now {r.new_sha256[:12]}…): {self.retired} matches of "
            f"its old version retired ({self.played} played: kept, counted in no rating), "
            f"{self.replays} to play again on fresh cards"
        )


def replace_entrants(
    store: Store,
    current: Sequence[EntrantRecord],
    names: Sequence[str],
    *,
    seed: int,
    duplicate: Duplicate,
    secret: DealSecret,
    at: float,
) -> list[Replaced]:
    """Make the replacements ``--replace names`` asks for (module docstring), each stored
    in one transaction; ``current`` are the entrants as their files are now, ``at`` the
    run's wall time, stored with each replacement made now.

    Raises ``UsageError`` for a name that is no entrant, an entrant without stored
    results, or one whose files did not change (unless an earlier run already replaced it
    with these files: then that replacement is resumed).
    """
    now = {e.name: e for e in current}
    done: list[Replaced] = []
    for name in dict.fromkeys(names):
        new = now.get(name)
        if new is None:
            shown = ", ".join(sorted(now)[:20]) + (", …" if len(now) > 20 else "")
            raise UsageError(
                f"--replace {printable(name)!r}: no entrant of the tournament has that name "
                f"(its entrants: {printable(shown)})"
            )
        done.append(_replace_one(store, new, seed=seed, duplicate=duplicate, secret=secret, at=at))
    return done


def _replace_one(
    store: Store,
    new: EntrantRecord,
    *,
    seed: int,
    duplicate: Duplicate,
    secret: DealSecret,
    at: float,
) -> Replaced:
    name = new.name
    old = store.entrants().get(name)
    if old is None:
        raise UsageError(
            f"--replace {printable(name)!r}: it has no stored results to replace (an entrant "
            "new to the tournament is simply played: run without --replace)"
        )
    replacements = store.replacements()
    if old.sha256 == new.sha256:
        earlier = [r for r in replacements if r.name == name and r.new_sha256 == new.sha256]
        if earlier and earlier[-1] == _latest(replacements, name):
            return _counted(store, earlier[-1], resumed=True)
        raise UsageError(
            f"--replace {printable(name)!r}: its files did not change since its results were "
            f"stored (sha256 {old.sha256[:12]}…): there is nothing to replace"
        )
    replacement = Replacement(
        len(replacements) + 1, name, old.version, old.sha256, new.version, new.sha256, at
    )
    retired = store.retired()
    live = [spec for key, spec in store.specs().items() if key not in retired]
    retire, replays = plan_replacement(
        live, name, replacement.generation, seed=seed, secret=secret.key, duplicate=duplicate
    )
    store.replace_entrant(replacement, new, retire, replays, secret)
    return _counted(store, replacement, resumed=False)


def _latest(replacements: Sequence[Replacement], name: str) -> Replacement | None:
    return next((r for r in reversed(replacements) if r.name == name), None)


def _counted(store: Store, replacement: Replacement, *, resumed: bool) -> Replaced:
    generation = replacement.generation
    retired = [key for key, g in store.retired().items() if g == generation]
    records = store.match_records()
    played = sum(records[key].status == "done" for key in retired if key in records)
    replays = sum(key_generation(key) == generation for key in records)
    return Replaced(replacement, len(retired), played, replays, resumed)
