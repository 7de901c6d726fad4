"""Rulesets: every parameter of RULES.md §2, the five presets of §3, and overrides.

A :class:`RuleSet` holds parameters for every table size (exchange counts and scoring
tables are keyed by size); :meth:`RuleSet.resolve` fixes a table size and gives the
protocol's ``rules`` object (:class:`ResolvedRules`), which is what the engine runs on.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from referee.errors import RulesError
from referee.rules.cards import DECKS, DeckName, split_card
from referee.validation import describe

TABLE_SIZES = range(3, 7)

Scoring = Literal["below"] | dict[int, list[int]]


class RuleSet(BaseModel):
    """A variant of the game: a value of the parameters of RULES.md §2."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "custom"
    deck: DeckName
    ranks: list[str] = Field(description="rank tokens, low to high")
    deal: Literal["equal", "all"]
    pass_rule: Literal["reenter", "out"]
    equal_rank: Literal["forbidden", "skip_next"]
    top_card_ends_trick: bool
    no_finish_on: list[str] = []
    start_card: str
    exchange: dict[int, list[int]] = Field(description="exchange counts by table size")
    return_choice: Literal["choose", "lowest"]
    leftovers: Literal["out", "swap"]
    scoring: Scoring
    target: int | None = Field(default=None, ge=1)
    rounds: int | None = Field(default=None, ge=1)
    max_rounds: int = Field(default=100, ge=1, le=10_000)
    tie_break: Literal["shared", "last_round"]

    @model_validator(mode="after")
    def _check(self) -> RuleSet:
        deck = DECKS[self.deck]
        for r in self.ranks:
            if r not in deck.ranks:
                raise ValueError(
                    f"ranks: {r!r} is not a rank of the {self.deck} deck "
                    f"(allowed: {' '.join(deck.ranks)})"
                )
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError("ranks: a rank is listed twice")
        if len(self.ranks) < 2:
            raise ValueError("ranks: at least two ranks are needed")
        for r in self.no_finish_on:
            if r not in self.ranks:
                raise ValueError(
                    f"no_finish_on: {r!r} is not one of the ranks ({' '.join(self.ranks)})"
                )
        rank, suit = split_card(self.start_card)
        if rank not in deck.ranks or suit not in deck.suits:
            raise ValueError(
                f"start_card: {self.start_card!r} is not a card of the {self.deck} deck "
                f"(ranks {' '.join(deck.ranks)}; suits {' '.join(deck.suits)})"
            )
        for size, counts in self.exchange.items():
            if size not in TABLE_SIZES:
                raise ValueError(f"exchange: table size {size} is not allowed (3 to 6)")
            if any(c < 1 for c in counts):
                raise ValueError(f"exchange[{size}]: every count must be at least 1")
            if len(counts) > size // 2:
                raise ValueError(
                    f"exchange[{size}]: at most {size // 2} pairs exchange at {size} players"
                )
        if isinstance(self.scoring, dict):
            for size, points in self.scoring.items():
                if size not in TABLE_SIZES:
                    raise ValueError(f"scoring: table size {size} is not allowed (3 to 6)")
                if len(points) != size:
                    raise ValueError(
                        f"scoring[{size}]: needs {size} points (one per place), got {len(points)}"
                    )
        return self

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> RuleSet:
        """A preset by name, with parameters overridden (a custom ruleset)."""
        if name not in PRESETS:
            raise RulesError(f"unknown preset {name!r} (allowed: {', '.join(sorted(PRESETS))})")
        return PRESETS[name].with_overrides(**overrides)

    def with_overrides(self, **overrides: Any) -> RuleSet:
        """A copy with some parameters changed, validated like a new ruleset.

        ``exchange`` and ``scoring`` may be given as a plain list, which then applies to
        every table size.
        """
        data = self.model_dump()
        for key, value in overrides.items():
            if key not in type(self).model_fields:
                raise RulesError(
                    f"rules: unknown parameter {key!r} "
                    f"(allowed: {', '.join(type(self).model_fields)})"
                )
            if key == "exchange" and isinstance(value, list):
                value = {n: list(value)[: n // 2] for n in TABLE_SIZES}
            if key == "scoring" and isinstance(value, list):
                value = {len(value): list(value)}
            data[key] = value
        return build_ruleset(data)

    def resolve(self, table_size: int) -> ResolvedRules:
        """The ``rules`` object of PROTOCOL.md for a table of ``table_size`` players."""
        if not isinstance(table_size, int) or table_size not in TABLE_SIZES:
            raise RulesError(f"table size {table_size!r} is not allowed (allowed: 3 to 6)")
        if table_size not in self.exchange:
            raise RulesError(
                f"exchange: no counts for {table_size} players in ruleset {self.name!r}"
            )
        scoring: Literal["below"] | list[int]
        if isinstance(self.scoring, dict):
            if table_size not in self.scoring:
                raise RulesError(
                    f"scoring: no points for {table_size} players in ruleset {self.name!r}"
                )
            scoring = list(self.scoring[table_size])
        else:
            scoring = "below"
        deck = DECKS[self.deck]
        ncards = 4 * len(self.ranks)
        smallest_hand = ncards // table_size
        counts = self.exchange[table_size]
        if counts and max(counts) > smallest_hand:
            raise RulesError(
                f"exchange: {max(counts)} cards cannot be exchanged from hands of "
                f"{smallest_hand} cards"
            )
        return ResolvedRules(
            name=self.name,
            deck=self.deck,
            suits=list(deck.suits),
            ranks=list(self.ranks),
            deal=self.deal,
            pass_rule=self.pass_rule,
            equal_rank=self.equal_rank,
            top_card_ends_trick=self.top_card_ends_trick,
            no_finish_on=list(self.no_finish_on),
            start_card=self.start_card,
            exchange=list(counts),
            return_choice=self.return_choice,
            leftovers=self.leftovers,
            scoring=scoring,
            target=self.target,
            rounds=self.rounds,
            max_rounds=self.max_rounds,
            tie_break=self.tie_break,
            players=table_size,
        )


class ResolvedRules(BaseModel):
    """The rules for one table size: the ``rules`` object sent to bots and logged.

    ``players`` (the table size) is an added key; bots ignore keys they do not know.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    deck: DeckName
    suits: list[str]
    ranks: list[str]
    deal: Literal["equal", "all"]
    pass_rule: Literal["reenter", "out"]
    equal_rank: Literal["forbidden", "skip_next"]
    top_card_ends_trick: bool
    no_finish_on: list[str]
    start_card: str
    exchange: list[int]
    return_choice: Literal["choose", "lowest"]
    leftovers: Literal["out", "swap"]
    scoring: Literal["below"] | list[int]
    target: int | None
    rounds: int | None
    max_rounds: int
    tie_break: Literal["shared", "last_round"]
    players: int | None = None

    def as_protocol(self) -> dict[str, Any]:
        """The JSON object for ``match_start`` and the log header."""
        data = self.model_dump(mode="json")
        if data["players"] is None:
            del data["players"]
        return data

    @classmethod
    def from_protocol(cls, data: dict[str, Any], table_size: int) -> ResolvedRules:
        """Read a logged ``rules`` object back, checking it like a ruleset."""
        try:
            fields = {k: v for k, v in data.items() if k in cls.model_fields}
            fields["players"] = table_size
            rules = cls(**fields)
            size_exchange = {table_size: rules.exchange}
            RuleSet(
                name=rules.name,
                deck=rules.deck,
                ranks=rules.ranks,
                deal=rules.deal,
                pass_rule=rules.pass_rule,
                equal_rank=rules.equal_rank,
                top_card_ends_trick=rules.top_card_ends_trick,
                no_finish_on=rules.no_finish_on,
                start_card=rules.start_card,
                exchange=size_exchange,
                return_choice=rules.return_choice,
                leftovers=rules.leftovers,
                scoring=(
                    "below" if rules.scoring == "below" else {table_size: list(rules.scoring)}
                ),
                target=rules.target,
                rounds=rules.rounds,
                max_rounds=rules.max_rounds,
                tie_break=rules.tie_break,
            )
        except ValidationError as exc:
            raise RulesError(_explain(exc)) from None
        return rules


def _explain(exc: ValidationError) -> str:
    """One line naming each parameter and what is allowed, in the referee's words
    (:func:`referee.validation.describe`; a validator's own message as it wrote it)."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "value_error":
            msg = err["msg"].removeprefix("Value error, ")
        elif err["type"] == "extra_forbidden":
            msg = "unknown parameter"
        else:
            msg = describe(err["type"], err.get("input"), dict(err.get("ctx") or {}))
        parts.append(f"rules.{loc}: {msg}" if loc else f"rules: {msg}")
    return "; ".join(parts)


def build_ruleset(data: dict[str, Any]) -> RuleSet:
    """Validate ``data`` into a RuleSet, raising :class:`RulesError` with a clear message."""
    try:
        return RuleSet(**data)
    except ValidationError as exc:
        raise RulesError(_explain(exc)) from None
    except TypeError as exc:
        raise RulesError(f"rules: {exc}") from None


_SKAT = ["7", "8", "9", "10", "J", "Q", "K", "A"]
_ARSCHLOCH_EXCHANGE = {3: [1], 4: [2, 1], 5: [2, 1], 6: [2, 1]}
_TWO_EXCHANGE = {3: [2], 4: [2, 1], 5: [2, 1], 6: [2, 1]}

PRESETS: dict[str, RuleSet] = {
    "arschloch": RuleSet(
        name="arschloch",
        deck="skat32",
        ranks=_SKAT,
        deal="equal",
        pass_rule="reenter",
        equal_rank="forbidden",
        top_card_ends_trick=True,
        no_finish_on=["A"],
        start_card="7C",
        exchange=_ARSCHLOCH_EXCHANGE,
        return_choice="choose",
        leftovers="swap",
        scoring="below",
        target=15,
        tie_break="shared",
    ),
    "trou-du-cul": RuleSet(
        name="trou-du-cul",
        deck="french52",
        ranks=["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2"],
        deal="all",
        pass_rule="out",
        equal_rank="skip_next",
        top_card_ends_trick=False,
        no_finish_on=[],
        start_card="QH",
        exchange=_TWO_EXCHANGE,
        return_choice="choose",
        leftovers="out",
        # 001: the president scores 2, the vice-president 1 (a role that needs 4 players).
        scoring={
            3: [2, 0, 0],
            4: [2, 1, 0, 0],
            5: [2, 1, 0, 0, 0],
            6: [2, 1, 0, 0, 0, 0],
        },
        target=25,
        tie_break="shared",
    ),
    "president-es": RuleSet(
        name="president-es",
        deck="spanish40",
        ranks=["2", "3", "4", "5", "6", "7", "10", "11", "12", "1"],
        deal="all",
        pass_rule="out",
        equal_rank="skip_next",
        top_card_ends_trick=False,
        no_finish_on=[],
        start_card="2O",
        exchange=_TWO_EXCHANGE,
        return_choice="lowest",
        leftovers="out",
        # 003: president +2, trou -2; the vice roles (+1/-1) exist from 4 players.
        scoring={
            3: [2, 0, -2],
            4: [2, 1, -1, -2],
            5: [2, 1, 0, -1, -2],
            6: [2, 1, 0, 0, -1, -2],
        },
        rounds=5,
        tie_break="last_round",
    ),
}


# The Arschloch variants change only the deck, the rank order and the start card.
PRESETS = {
    "arschloch": PRESETS["arschloch"],
    "arschloch-high10": PRESETS["arschloch"].with_overrides(
        name="arschloch-high10", ranks=["7", "8", "9", "J", "Q", "K", "A", "10"]
    ),
    "arschloch-52": PRESETS["arschloch"].with_overrides(
        name="arschloch-52",
        deck="french52",
        ranks=["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"],
        start_card="2C",
    ),
    "trou-du-cul": PRESETS["trou-du-cul"],
    "president-es": PRESETS["president-es"],
}


def preset_names() -> list[str]:
    """The names of the built-in presets."""
    return list(PRESETS)
