"""The shoe service's decider: one shoe per table, from a CSPRNG shuffle, a supplied order or a physical shoe.

Commands (``shoe.commands``): ``LoadShoe``, ``DrawCard``, ``ReadCard``, ``ReadBurn`` (a physical shoe's
burn, read card by card), ``CloseShoe``. Inputs: ``dealing.events`` (the round in play, from ``RoundOpened`` to
its ``RoundResolved`` / ``RoundVoided``) and ``wagering.events`` ("No more bets": ``BettingClosed``), so that
a card leaves the shoe only for the round in play once betting is closed (a ``DrawCard`` for any other round,
or numbered outside 1..6, is refused ``round_not_dealing`` / ``card_out_of_bounds``), and the shoe is not
closed under a round in play (``CloseShoe`` refused ``round_in_play``: void the round first). Events
(``shoe.events``): ``ShoeLoaded`` (with the commitment), ``ShoeCut``, ``ShoeBurned``, ``CardDrawn``,
``CardReadRefused``, ``ShoeClosed`` (the reveal), ``CommandRejected`` (a chemin de fer card read is recorded under
the round's Banker, who deals, the dealer who keyed it as ``keyed_by``: :func:`read_by`); and on ``shoe.vault`` (read by this
service alone) ``ShoeOrderEncrypted``, so a restarted shoe service knows the order it committed to.

The shuffle and the salt are injected (:class:`Entropy`): the app passes ``secrets``-backed ones, tests
seeded ones. They are called only when a ``LoadShoe`` without an order is first decided; the result is
sealed in the vault, so a rebuild never shuffles again.

**The order is never held in clear.** It is sealed (AES-256-GCM, :mod:`contracts.vault`) by the injected
:class:`contracts.vault.Vault` (keys and a ``secrets`` nonce source from the app's edge) and the state keeps
only the sealed record and a *blind* shoe: the public bookkeeping of :class:`baccarat.shoe.Shoe` (position,
cards still in by rank and suit, the cut, the burn, the cutting card) with no cards, folded from the cards
the events show. The service's snapshots (msgpack of :class:`ShoeState` on ``shoe.snapshots``) therefore
reveal nothing without the key. A card is drawn by opening the sealed order, applying the cut and taking
the next card at the blind shoe's position (:meth:`ShoeCore._sighted`); a shoe whose record this service
cannot open (a key it does not have) is refused ``vault_unopenable``, never dealt from a guess.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from baccarat import shoe as S
from baccarat.cards import Card, parse_card, standard_deck
from baccarat.errors import BaccaratError
from contracts import topics as T
from services.configs import is_test_table
from contracts.commands import CloseShoe, DrawCard, LoadShoe, ReadBurn, ReadCard
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    BettingClosed,
    CardDrawn,
    CardReadRefused,
    CommandRejected,
    RoundOpened,
    RoundResolved,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeCut,
    ShoeLoaded,
    ShoeOrderEncrypted,
    ShoeOrderSealed,
)
from contracts.vault import Vault, VaultOpenError
from services.runtime.core import Emit, Send
from services.runtime.translate import shoe_rules


@dataclass(frozen=True, slots=True)
class Entropy:
    """Where randomness enters: ``shuffle(cards) -> cards`` and ``salt() -> bytes`` (16+ bytes)."""

    shuffle: Callable[[list[Card]], list[Card]]
    salt: Callable[[], bytes]


def commitment(order: Sequence[str], salt_hex: str) -> str:
    """SHA-256 hex of the salt bytes followed by the card texts joined by commas (as loaded, pre-cut)."""
    return hashlib.sha256(bytes.fromhex(salt_hex) + ",".join(order).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class SealedOrder:
    """A shoe's order as sealed on ``shoe.vault`` (:class:`contracts.events.ShoeOrderEncrypted`):
    ``key_id``, ``nonce`` (hex) and ``ciphertext``. ``key_id == ""``: a record of the deprecated clear
    ``ShoeOrderSealed`` (written before the vault was encrypted), whose ``ciphertext`` is the clear JSON of
    :func:`clear_record`; that order was readable on the vault already."""

    key_id: str
    nonce: str
    ciphertext: bytes


def clear_record(order: Sequence[str], salt_hex: str) -> bytes:
    """The :class:`SealedOrder` ciphertext of a legacy clear record: ``salt hex`` then the cards, by commas."""
    return ",".join((salt_hex, *order)).encode()


@dataclass(frozen=True, slots=True)
class ShoeState:
    """One table's shoe: a blind :class:`baccarat.shoe.Shoe` (``physical=True`` form: bookkeeping, no cards;
    for a physical shoe it is the shoe itself) plus the sealed orders the draws and the reveal open.

    ``source``: ``csprng`` / ``supplied`` (a sealed order) or ``physical`` (no order: cards are read).
    """

    table_id: str
    shoe_id: str | None = None
    shoe: S.Shoe | None = None
    #: shoe id -> its sealed order, from the vault; kept until the shoe closes
    sealed: dict[str, SealedOrder] = field(default_factory=dict)
    closed: bool = True
    source: str = ""
    drawn: frozenset[tuple[str, int]] = frozenset()
    #: the round in play at the table: from its ``RoundOpened`` (dealing.events) to its ``RoundResolved`` /
    #: ``RoundVoided``; "" between rounds. The shoe is not closed under it.
    round_in_play: str = ""
    #: the latest round past "No more bets" (its ``BettingClosed`` on wagering.events): cards are drawn only
    #: for the round in play once it is this one
    no_more_bets: str = ""
    #: chemin de fer: the latest round opened and its Banker (``RoundOpened.banker_player_id``), who deals its
    #: cards (13:69F-4.8(d)): a physical shoe's card read for it is recorded under the Banker, a card read after
    #: its result too; "" at other games
    banker_round: str = ""
    banker: str = ""


@functools.lru_cache(maxsize=64)
def _cards(order: tuple[str, ...], cut_at: int | None) -> tuple[Card, ...]:
    """The order as it leaves the shoe (after the cut), parsed."""
    cards = tuple(parse_card(c) for c in order)
    return cards[cut_at:] + cards[:cut_at] if cut_at is not None else cards


def draw_refusal(state: ShoeState, c: DrawCard) -> tuple[str, str] | None:
    """Why no card may leave the shoe for ``c``, as ``(reason code, detail)``, or None when one may.

    ``card_out_of_bounds``: ``card_number`` outside 1..:data:`baccarat.shoe.MAX_CARDS_PER_ROUND` (a round
    takes four cards and at most two third cards, 13:69F-3.7 and Tables 1-2); ``round_not_dealing``: the round
    is not the round in play, or it is and "No more bets" has not been called for it (cards are dealt only
    after "No more bets", 13:69F-3.7(b))."""
    if not 1 <= c.card_number <= S.MAX_CARDS_PER_ROUND:
        return "card_out_of_bounds", (f"card number {c.card_number} is outside 1..{S.MAX_CARDS_PER_ROUND}: "
                                      "a round takes at most six cards")
    if c.round_id != state.round_in_play:
        playing = f"round {state.round_in_play} is in play" if state.round_in_play else "no round is in play"
        return "round_not_dealing", f"round {c.round_id} is not the round in play ({playing})"
    if c.round_id != state.no_more_bets:
        return "round_not_dealing", (f"round {c.round_id} is still taking bets: cards are dealt only after "
                                     "\"No more bets\"")
    return None


def read_by(state: ShoeState, cmd: CommandEnvelope) -> tuple[str | None, str]:
    """Who dealt the card a physical shoe's ``ReadCard`` reports, and who keyed it: ``(actor, keyed_by)`` for
    its ``CardDrawn``. At chemin de fer the Banker of the round deals (13:69F-4.8(d)): a card read for the
    latest round opened (in play, or read after its result) is recorded under its Banker, and the console's
    actor who keyed the read (the dealer) is kept as ``keyed_by`` when that is someone else. Elsewhere
    ``(None, "")``: the command's actor read and dealt it."""
    c = cmd.payload
    if not state.banker or not isinstance(c, ReadCard) or c.round_id != state.banker_round:
        return None, ""
    return state.banker, (cmd.actor if cmd.actor != state.banker else "")


def _reject(cmd: CommandEnvelope, reason: str, detail: str) -> list[Emit | Send]:
    tag = type(cmd.payload).__struct_config__.tag
    return [Emit(CommandRejected(command_id=cmd.command_id, command=tag, reason=reason, detail=detail))]


class ShoeCore:
    """The shoe service's pure decide/evolve over :class:`ShoeState`.

    ``entropy`` shuffles and salts; ``vault`` seals each new order (``ShoeOrderEncrypted``) and opens it when
    a card is drawn or the shoe closes. ``evolve`` never needs the key (the shoe is folded blind from the
    cards the events show), so a restore without the right key still rebuilds, and only the draws and the
    close of that shoe are refused ``vault_unopenable``.
    """

    name = "shoe"
    state_type = ShoeState
    own_stream = T.SHOE_EVENTS
    private_streams = (T.SHOE_VAULT,)
    command_streams = (T.SHOE_COMMANDS, T.SHOE_DRAWS)
    same_time_first: tuple[str, ...] = ()
    #: a command is decided only once the round's progress the log held when it was read is folded: the
    #: dealing service asks for a card after it read "No more bets" (so the ``BettingClosed`` is in the log
    #: before its ``DrawCard``), the dealer closes the shoe after the round's result; on a cluster the
    #: partitions come in different fetches, and a call decided before them would be refused wrongly
    catch_up = tuple((cmd, inp) for cmd in (T.SHOE_COMMANDS, T.SHOE_DRAWS)
                     for inp in (T.DEALING_EVENTS, T.WAGERING_EVENTS))
    input_streams = (T.DEALING_EVENTS, T.WAGERING_EVENTS)

    def __init__(self, entropy: Entropy, vault: Vault, test_tables: tuple[str, ...] = ()):
        """``test_tables``: ``fnmatch`` patterns of the table ids whose profile makes them test tables, the
        only tables that may load a supplied order (``LoadShoe.order``); on any other a supplied order is
        refused ``supplied_order_not_allowed``: the shoe service alone chooses a live shoe's order
        (issue 9; ``CROUPIER_TEST_TABLES``)."""
        self.entropy = entropy
        self.vault = vault
        self.test_tables = tuple(test_tables)

    def is_test_table(self, table_id: str) -> bool:
        """True when ``table_id`` matches one of :attr:`test_tables`."""
        return is_test_table(table_id, self.test_tables)

    def open_order(self, state: ShoeState, shoe_id: str) -> tuple[tuple[str, ...], str]:
        """``(order as loaded, salt hex)`` of a sealed shoe of this table. Raises :class:`VaultOpenError`
        when there is no sealed record or it does not open with this service's keys."""
        box = state.sealed.get(shoe_id)
        if box is None:
            raise VaultOpenError(f"no sealed order of shoe {shoe_id} on this table's vault")
        if not box.key_id:  # a legacy clear record
            salt, *order = box.ciphertext.decode().split(",")
            return tuple(order), salt
        return self.vault.open(state.table_id, shoe_id, box.key_id, box.nonce, box.ciphertext)

    def _sighted(self, state: ShoeState) -> S.Shoe:
        """The open shoe with its cards: the blind shoe plus the opened order after the cut (raises
        :class:`VaultOpenError`)."""
        assert state.shoe is not None and state.shoe_id is not None
        order, _ = self.open_order(state, state.shoe_id)
        return replace(state.shoe, cards=_cards(order, state.shoe.cut_at), physical=False)

    def initial(self, table_id: str) -> ShoeState:
        return ShoeState(table_id)

    # -- evolve ----------------------------------------------------------------------------------
    def evolve(self, state: ShoeState, env: Envelope) -> ShoeState:
        e = env.payload
        # The shoe is folded blind, from the cards the events show: a sealed shoe's bookkeeping is exactly a
        # physical shoe's (reading the card drawn takes it out of the counts and moves the position).
        if isinstance(e, ShoeOrderEncrypted):
            box = SealedOrder(e.key_id, e.nonce, e.ciphertext)
            return replace(state, sealed={**state.sealed, e.shoe_id: box})
        if isinstance(e, ShoeOrderSealed):
            box = SealedOrder("", "", clear_record(e.order, e.salt))
            return replace(state, sealed={**state.sealed, e.shoe_id: box})
        if isinstance(e, ShoeLoaded):
            shoe = S.load_physical(shoe_rules(e.rules))
            return replace(state, shoe_id=e.shoe_id, shoe=shoe, closed=False, source=e.source, drawn=frozenset())
        if isinstance(e, ShoeCut) and state.shoe is not None:
            return replace(state, shoe=S.cut(state.shoe, e.cut_at))
        if isinstance(e, ShoeBurned) and state.shoe is not None:
            exposed = parse_card(e.exposed)
            if state.shoe.rules.burn is S.BurnRule.NONE:  # the first card is shown and stays in the shoe
                return replace(state, shoe=replace(state.shoe, burn_record=S.BurnRecord(exposed, ())))
            burned = [parse_card(x) for x in e.burned]
            return replace(state, shoe=S.read_burn(state.shoe, exposed, burned)[0])
        if isinstance(e, CardDrawn) and state.shoe is not None:
            shoe, _ = S.read(state.shoe, parse_card(e.card))
            return replace(state, shoe=shoe, drawn=state.drawn | {(e.round_id, e.card_number)})
        if isinstance(e, ShoeClosed):
            sealed = {k: v for k, v in state.sealed.items() if k != e.shoe_id}
            return replace(state, closed=True, sealed=sealed)
        return state

    def absorb(self, state: ShoeState, env: Envelope) -> ShoeState:
        """Fold the round's progress: ``RoundOpened`` / ``RoundResolved`` / ``RoundVoided`` (the round in
        play) and ``BettingClosed`` ("No more bets"); every other input is ignored."""
        e = env.payload
        if isinstance(e, RoundOpened):
            return replace(state, round_in_play=e.round_id, banker_round=e.round_id, banker=e.banker_player_id)
        if isinstance(e, (RoundResolved, RoundVoided)) and e.round_id == state.round_in_play:
            return replace(state, round_in_play="")
        if isinstance(e, BettingClosed):
            return replace(state, no_more_bets=e.round_id)
        return state

    def sent(self, state: ShoeState, send: Send) -> ShoeState:
        return state

    def react(self, state: ShoeState, last: Envelope | None) -> list[Emit | Send]:
        return []

    # -- decide ----------------------------------------------------------------------------------
    def decide(self, state: ShoeState, cmd: CommandEnvelope) -> list[Emit | Send]:
        c = cmd.payload
        if isinstance(c, LoadShoe):
            return self._load(state, cmd, c)
        if isinstance(c, (DrawCard, ReadCard)):
            return self._card(state, cmd, c)
        if isinstance(c, ReadBurn):
            return self._read_burn(state, cmd, c)
        if isinstance(c, CloseShoe):
            if state.shoe is None or state.closed or c.shoe_id != state.shoe_id:
                return _reject(cmd, "no_open_shoe", f"shoe {c.shoe_id} is not the open shoe of this table")
            if state.round_in_play:
                return _reject(cmd, "round_in_play",
                               f"round {state.round_in_play} is in play on shoe {c.shoe_id}: the shoe closes between "
                               "rounds (let the round finish, or void it first)")
            order: Sequence[str] = ()
            salt = ""
            if state.source != "physical":
                try:
                    order, salt = self.open_order(state, c.shoe_id)
                except VaultOpenError as e:
                    return _reject(cmd, "vault_unopenable", str(e))
            return [Emit(ShoeClosed(shoe_id=c.shoe_id, reason=c.reason, cards_dealt=state.shoe.position,
                                    order=list(order), salt=salt), shoe_id=c.shoe_id)]
        return _reject(cmd, "not_a_shoe_command", f"{type(c).__name__} is not handled by the shoe service")

    def _load(self, state: ShoeState, cmd: CommandEnvelope, c: LoadShoe) -> list[Emit | Send]:
        if not state.closed:
            return _reject(cmd, "shoe_open", f"shoe {state.shoe_id} is still open: close it first")
        try:
            rules = shoe_rules(c.rules)
            if c.physical:
                shoe = S.load_physical(rules)
                order: list[str] = []
                source = "physical"
            else:
                if c.order:
                    if not self.is_test_table(state.table_id):
                        return _reject(cmd, "supplied_order_not_allowed",
                                       f"table {state.table_id} is not a test table: the shoe service shuffles "
                                       "its shoes itself (a supplied order is taken only on a table matching "
                                       "CROUPIER_TEST_TABLES)")
                    cards = [parse_card(t) for t in c.order]
                    source = "supplied"
                else:
                    cards = self.entropy.shuffle(list(standard_deck() * rules.decks))
                    source = "csprng"
                shoe = S.load(cards, rules)
                order = [str(x) for x in cards]
            if c.cut_at is not None:
                shoe = S.cut(shoe, c.cut_at)
        except BaccaratError as e:
            return _reject(cmd, "invalid_shoe", str(e))
        out: list[Emit | Send] = []
        salt = ""
        if not c.physical:
            salt = self.entropy.salt().hex()
            key_id, nonce, sealed = self.vault.seal(state.table_id, c.shoe_id, order, salt)
            out.append(Emit(ShoeOrderEncrypted(shoe_id=c.shoe_id, key_id=key_id, nonce=nonce, ciphertext=sealed),
                            shoe_id=c.shoe_id, stream=T.SHOE_VAULT))
        out.append(Emit(ShoeLoaded(shoe_id=c.shoe_id, rules=c.rules, cards=rules.size, source=source,
                                   commitment=commitment(order, salt) if order else ""), shoe_id=c.shoe_id))
        if c.cut_at is not None:
            out.append(Emit(ShoeCut(shoe_id=c.shoe_id, cut_at=c.cut_at), shoe_id=c.shoe_id))
        if not c.physical:
            _, rec = S.burn(shoe)
            out.append(Emit(ShoeBurned(shoe_id=c.shoe_id, exposed=str(rec.exposed), burned_count=len(rec.burned),
                                       burned=[str(x) for x in rec.burned]), shoe_id=c.shoe_id))
        return out

    def _read_burn(self, state: ShoeState, cmd: CommandEnvelope, c: ReadBurn) -> list[Emit | Send]:
        """A physical shoe's burn, checked card by card (:func:`baccarat.shoe.burn_refusal` gives the codes;
        ``invalid_card`` for a text that is not a card)."""
        if state.shoe is None or state.closed or c.shoe_id != state.shoe_id:
            return _reject(cmd, "no_open_shoe", f"shoe {c.shoe_id} is not the open shoe of this table")
        if state.source != "physical":
            return _reject(cmd, "not_physical", "this shoe's order is known: it was burned when loaded")
        try:
            exposed = parse_card(c.exposed)
            burned = [parse_card(t) for t in c.burned]
        except BaccaratError as e:
            return _reject(cmd, "invalid_card", str(e))
        why = S.burn_refusal(state.shoe, exposed, burned)
        if why:
            return _reject(cmd, *why)
        return [Emit(ShoeBurned(shoe_id=c.shoe_id, exposed=str(exposed), burned_count=len(burned),
                                burned=[str(x) for x in burned]), shoe_id=c.shoe_id)]

    def _card(self, state: ShoeState, cmd: CommandEnvelope, c: DrawCard | ReadCard) -> list[Emit | Send]:
        if state.shoe is None or state.closed or c.shoe_id != state.shoe_id:
            return _reject(cmd, "no_open_shoe", f"shoe {c.shoe_id} is not the open shoe of this table")
        if (c.round_id, c.card_number) in state.drawn:
            return []  # that card of that round already left the shoe: nothing new
        shoe = state.shoe
        physical = state.source == "physical"
        if isinstance(c, DrawCard):
            if physical:
                return []  # the card reader of a physical shoe reports the card (ReadCard) as it comes out
            why = draw_refusal(state, c)
            if why:
                return _reject(cmd, *why)
            try:
                shoe = self._sighted(state)
            except VaultOpenError as e:
                return _reject(cmd, "vault_unopenable", str(e))
            try:
                shoe, card, reached = S.draw(shoe)
            except BaccaratError as e:
                return _reject(cmd, "insufficient_cards", str(e))
        else:
            if not physical:
                return _reject(cmd, "not_physical", "this shoe's order is known: cards are drawn")
            try:
                card = parse_card(c.card)
                shoe, reached = S.read(shoe, card)
            except BaccaratError as e:
                return [Emit(CardReadRefused(shoe_id=c.shoe_id, round_id=c.round_id, card_number=c.card_number,
                                             card=c.card, reason=str(e)), round_id=c.round_id, shoe_id=c.shoe_id)]
        dealt_to = c.hand if isinstance(c, ReadCard) else ""
        dealer, keyer = read_by(state, cmd) if isinstance(c, ReadCard) else (None, "")
        return [Emit(CardDrawn(shoe_id=c.shoe_id, round_id=c.round_id, card_number=c.card_number, card=str(card),
                               position=shoe.position - 1, cards_left=shoe.cards_left, cutting_card_out=reached,
                               dealt_to=dealt_to, keyed_by=keyer),
                     round_id=c.round_id, shoe_id=c.shoe_id, actor=dealer)]
