"""Who pays whom: self-draw, discard, robbing a kong, 一炮多响 and every 承包 case.

:func:`settle` takes the wins of one hand (one, or several on a single discard) and returns a
:class:`Settlement`: each win's :class:`~controller.rules.scoring.Score` (or why it is refused),
each payment with its reason and shares, the net amount per seat (summing to zero), the next
dealer and the 荒番 counter for the next hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

from controller.rules.errors import WinInputError
from controller.rules.melds import SEATS
from controller.rules.profile import Profile
from controller.rules.scoring import Refusal, Score, huangfan_in_effect, score_win
from controller.rules.table import huangfan_after, next_dealer
from controller.rules.win import Win, WinType


class Payment(NamedTuple):
    """``payer`` pays ``payee`` ``amount`` (``shares`` x value x stake), for ``reason``."""

    payer: int
    payee: int
    shares: int
    amount: Fraction | int
    reason: str


class WinResult(NamedTuple):
    """One win's outcome: its score (None when refused, with ``refusal`` saying why), the
    partners it is bound to, and its payments."""

    win: Win
    score: Score | None
    refusal: str | None
    partners: tuple[int, ...]
    payments: tuple[Payment, ...]

    @property
    def valid(self) -> bool:
        return self.score is not None


class Settlement(NamedTuple):
    """The settlement of one hand's wins."""

    profile: str
    results: tuple[WinResult, ...]
    totals: tuple[Fraction | int, ...]
    cap_note: str | None
    next_dealer: int | None
    huangfan_next: int

    @property
    def valid(self) -> bool:
        return all(r.valid for r in self.results)


def bound_pairs(win: Win, profile: Profile) -> set[tuple[int, int]]:
    """The (a, b) pairs where a claimed ``min_claims`` or more discards from b: those given,
    and those the winner's own melds show (吃, 碰 and 明杠 each one claim from their source)."""
    pairs = set(win.bound_pairs)
    melds = win.hand.melds
    if len(melds) >= profile.chengbao.min_claims:
        claims = [0] * SEATS
        for m in melds:
            if m.source is not None:  # only claimed melds carry a source
                claims[m.source] += 1
        for seat, n in enumerate(claims):
            if n >= profile.chengbao.min_claims:
                pairs.add((win.winner, seat))
    return pairs


def _partners(winner: int, pairs: set[tuple[int, int]], profile: Profile) -> dict[int, int]:
    """Each partner of ``winner`` and the multiplier on their shares (mutual binding counts
    twice)."""
    out: dict[int, int] = {}
    for a, b in pairs:
        if a == winner or b == winner:
            other = b if a == winner else a
            mutual = (other, winner) in pairs and (winner, other) in pairs
            out[other] = profile.chengbao.mutual_multiplier if mutual else 1
    return out


# Enum members cost a class lookup on every access on 3.11: the hot path uses these.
_SELF_DRAW, _ROBBING, _EIGHT_FLOWERS = (
    WinType.SELF_DRAW,
    WinType.ROBBING_KONG,
    WinType.EIGHT_FLOWERS,
)
_OTHERS = tuple(tuple(s for s in range(SEATS) if s != w) for w in range(SEATS))


def _shares(
    win: Win, profile: Profile, partners: dict[int, int], co_winners: Sequence[int]
) -> list[tuple[int, int, str]]:
    """(payer, shares, reason) for one valid win."""
    cb = profile.chengbao
    others = _OTHERS[win.winner]
    how = win.how
    if how is _EIGHT_FLOWERS:
        return [(s, 1, "八花齐, paid as a self-draw") for s in others]
    if how is _SELF_DRAW:
        out = []
        for s in others:
            if s in partners:
                out.append((s, cb.self_draw * partners[s], _bound("self-draw", partners[s])))
            else:
                out.append((s, 1, "self-draw"))
        return out
    d = win.discarder
    assert d is not None
    if how is _ROBBING:
        out = [(d, profile.payments.robbing_kong_shares, "抢杠: the konger pays")]
        for s, mult in partners.items():
            out.append((s, cb.robbing_kong * mult, _bound("robbing a kong", mult)))
        return out
    if not partners:
        return [(d, 1, "discard")]
    if d in partners:
        return [(d, cb.partner_discard * partners[d], _bound("the partner's discard", partners[d]))]
    ready = win.discarder_ready
    if ready is None:
        raise WinInputError(
            f"the winner (seat {win.winner}) is bound to seat(s) "
            f"{', '.join(map(str, sorted(partners)))}, so whether the discarder was ready decides "
            "who pays: give discarder_ready or discarder_hand",
            field="discarder_ready",
        )
    state = "ready" if ready else "not ready"
    if any(w in partners for w in co_winners):
        shares = cb.both_win_ready if ready else cb.both_win_unready
        return [(d, shares, f"one discard wins for both partners, discarder {state}")]
    disc, part = cb.third_ready if ready else cb.third_unready
    out = [(d, disc, f"discard by a third player, {state}")]
    for s, mult in partners.items():
        out.append((s, part * mult, _bound(f"a third player's discard ({state})", mult)))
    return out


def _bound(case: str, mult: int) -> str:
    return f"承包 partner, {case}" + (" (mutual, counted twice)" if mult > 1 else "")


def settle(wins: Sequence[Win], profile: Profile) -> Settlement:
    """Settle the wins of one hand: one win, or several on the same discard (一炮多响)."""
    if not wins:
        raise WinInputError("no win to settle")
    if len(wins) > 1:
        _check_together(wins, profile)
    first = wins[0]
    stake = first.stake
    results: list[WinResult] = []
    totals: list[Fraction | int] = [0] * SEATS
    bound = profile.chengbao.enabled
    # a binding is a fact about the hand, not about one claim: on one discard every win is
    # settled with the pairs any of them gives or shows
    if not bound:
        pairs: set[tuple[int, int]] = set()
    elif len(wins) == 1:  # the usual case, on the hot path: no union to build
        pairs = bound_pairs(first, profile)
    else:
        pairs = set().union(*(bound_pairs(w, profile) for w in wins))
    # every win is scored before any is paid: a claim that is refused is no co-winner
    outcomes = [score_win(win, profile) for win in wins]
    valid_winners = [
        w.winner for w, o in zip(wins, outcomes, strict=True) if type(o) is not Refusal
    ]
    for win, outcome in zip(wins, outcomes, strict=True):
        winner = win.winner
        partners = (
            _partners(winner, pairs, profile) if bound and win.how is not _EIGHT_FLOWERS else {}
        )
        partner_seats = tuple(sorted(partners)) if partners else ()
        if type(outcome) is Refusal:
            results.append(WinResult(win, None, outcome.reason, partner_seats, ()))
            continue
        co = [w for w in valid_winners if w != winner]
        value = outcome.value * stake
        payments = []
        for payer, shares, reason in _shares(win, profile, partners, co):
            if shares:
                amount = shares * value
                payments.append(Payment(payer, winner, shares, amount, reason))
                totals[payer] -= amount
                totals[winner] += amount
        results.append(WinResult(win, outcome, None, partner_seats, tuple(payments)))
    if profile.payments.payer_cap:
        cap_note = _apply_payer_cap(results, profile, stake)
        totals = [0] * SEATS
        for r in results:
            for pay in r.payments:
                totals[pay.payer] -= pay.amount
                totals[pay.payee] += pay.amount
    else:
        cap_note = None
    nd = (
        next_dealer(first.dealer, valid_winners, first.discarder) if valid_winners else first.dealer
    )
    during = huangfan_in_effect(first, profile)
    h_next = huangfan_after(during, len(valid_winners), profile) if valid_winners else during
    return Settlement(profile.name, tuple(results), tuple(totals), cap_note, nd, h_next)


def _apply_payer_cap(
    results: list[WinResult], profile: Profile, stake: Fraction | int
) -> str | None:
    """The house cap on what one player pays in one hand: a payer over it pays each winner
    in proportion, the total cut to the cap."""
    cap_lezi = profile.payments.payer_cap
    if not cap_lezi:
        return None
    cap = Fraction(cap_lezi * profile.units.lezi * stake)
    owed: list[Fraction | int] = [0] * SEATS
    for r in results:
        for p in r.payments:
            owed[p.payer] += p.amount
    over = {s: cap / owed[s] for s in range(SEATS) if owed[s] > cap}
    if not over:
        return None
    for i, r in enumerate(results):
        scaled = tuple(
            Payment(
                p.payer,
                p.payee,
                p.shares,
                p.amount * over[p.payer],
                p.reason + f", capped at {cap_lezi} 勒子",
            )
            if p.payer in over
            else p
            for p in r.payments
        )
        results[i] = WinResult(r.win, r.score, r.refusal, r.partners, scaled)
    seats = ", ".join(str(s) for s in sorted(over))
    return f"seat(s) {seats} pay at most {cap_lezi} 勒子 in one hand"


def _check_together(wins: Sequence[Win], profile: Profile) -> None:
    """Several wins settle together only as 一炮多响: one discard, different winners."""
    if not profile.play.multiple_winners:
        raise WinInputError(
            f"one discard cannot win for several players in the {profile.name} profile"
        )
    first = wins[0]
    seen = set()
    for i, w in enumerate(wins):
        where = f"wins[{i}]"
        if w.how is not WinType.DISCARD:
            raise WinInputError(
                "several wins settle together only on one discard", field=f"{where}.win.type"
            )
        if w.winner in seen:
            raise WinInputError(f"seat {w.winner} wins twice", field=f"{where}.winner")
        seen.add(w.winner)
        for name in ("discarder", "dice", "huangfan", "stake", "dealer", "discarder_ready"):
            if getattr(w, name) != getattr(first, name):
                field = {"discarder": "win.from"}.get(name, name)
                raise WinInputError(
                    "must be the same for every win on one discard", field=f"{where}.{field}"
                )
        if w.hand.winning_tile != first.hand.winning_tile:
            raise WinInputError("one discard is one tile", field=f"{where}.winning_tile")
