"""Table-level rules: who deals next, the 荒番 counter, 开宝, and where the dice break the wall.

Seats are numbered 0-3 in turn order: play runs counter-clockwise, so seat ``s + 1`` (mod 4)
sits to seat ``s``'s right and plays after it (its 下家).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.rules.errors import WinInputError
from controller.rules.melds import SEATS
from controller.rules.profile import Profile


def next_dealer(dealer: int | None, winners: Sequence[int], discarder: int | None) -> int | None:
    """The dealer of the next hand.

    A drawn hand (no winner) keeps the dealer; the winner deals next; when one discard wins
    for several players, the winner nearest the discarder in turn order deals next.
    """
    if not winners:
        return dealer
    if len(winners) == 1:
        return winners[0]
    if discarder is None:
        raise WinInputError("several winners need the discarder's seat", field="win.from")
    for step in range(1, SEATS):
        seat = (discarder + step) % SEATS
        if seat in winners:
            return seat
    raise WinInputError("the discarder cannot be among the winners", field="win.from")


def kaibao(dice: tuple[int, int] | None, profile: Profile) -> bool:
    """开宝: whether the dice of this hand double a win (1-1 or 4-4 by default)."""
    if dice is None or profile.bonuses.kaibao == "none" or dice[0] != dice[1]:
        return False
    return profile.bonuses.kaibao == "any_double" or dice[0] in (1, 4)


def dice_huangfan(dice: tuple[int, int] | None) -> int:
    """What the dice add to the 荒番 counter under dice-荒番 (seed 001 §03): 1-1 or 4-4 add 2;
    1-n, 4-n and the other doubles add 1."""
    if dice is None:
        return 0
    a, b = sorted(dice)
    if a == b and a in (1, 4):
        return 2
    if a in (1, 4) or b in (1, 4) or a == b:
        return 1
    return 0


def huangfan_after(counter: int, winners: int, profile: Profile) -> int:
    """The 荒番 counter after a hand that started with ``counter`` and had ``winners`` winners
    (0 for a drawn hand)."""
    hf = profile.huangfan
    if not hf.enabled:
        return 0
    if winners == 0:
        return counter + 1 if hf.accumulate else 1
    if not hf.accumulate:
        return 0
    take = winners if hf.decrement == "per_winner" else 1
    return max(0, counter - take)


@dataclass(frozen=True, slots=True)
class HuangfanCounter:
    """The 荒番 counter across hands. Immutable: each event returns the next state.

    ``value`` is the counter as a hand starts (before any dice-荒番).
    """

    value: int = 0

    def start(self, dice: tuple[int, int] | None, profile: Profile) -> int:
        """The counter in effect during a hand; above zero it is a 荒番 hand (doubled)."""
        if not profile.huangfan.enabled:
            return 0
        return self.value + (dice_huangfan(dice) if profile.huangfan.dice else 0)

    def after_hand(
        self, dice: tuple[int, int] | None, winners: int, profile: Profile
    ) -> HuangfanCounter:
        """The counter for the next hand, after this one was drawn (0) or won."""
        return HuangfanCounter(huangfan_after(self.start(dice, profile), winners, profile))

    def player_left(self) -> HuangfanCounter:
        """Anyone leaving the table ends the 荒番 run."""
        return HuangfanCounter(0)


@dataclass(frozen=True, slots=True)
class WallBreak:
    """Where the dice open the wall.

    ``wall`` is the seat whose wall is broken; ``stacks`` are counted clockwise along it (from
    its owner's right-hand end) and drawing starts after them. Replacement tiles (补张) come
    from the other side of the break, the far end of the wall.
    """

    roller: int
    dice: tuple[int, int]
    wall: int
    stacks: int

    @property
    def total(self) -> int:
        return sum(self.dice)


def wall_break(roller: int, dice: tuple[int, int]) -> WallBreak:
    """Apply the dice: count the sum counter-clockwise from the roller (the roller is 1) to
    find the wall, then as many stacks clockwise along it.

    Seed 000's example: 2 + 5 = 7 breaks the wall of the player opposite the roller, after
    7 stacks.
    """
    if isinstance(roller, bool) or not isinstance(roller, int) or not 0 <= roller < SEATS:
        raise WinInputError(f"a seat is 0-3, not {roller!r}", field="roller")
    if len(dice) != 2 or any(
        isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 6 for d in dice
    ):
        raise WinInputError(f"two dice, each 1-6, not {dice!r}", field="dice")
    total = dice[0] + dice[1]
    return WallBreak(roller, (dice[0], dice[1]), (roller + total - 1) % SEATS, total)
