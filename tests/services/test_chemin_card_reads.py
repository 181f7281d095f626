"""Chemin de fer card reads under the Banker who deals (issue 28, item 8; 13:69F-4.8(d): "the Banker shall deal").

A physical shoe's card is keyed at the console by the dealer (the command's actor); at chemin de fer the Banker
deals it, so the shoe service records its ``CardDrawn`` under the round's Banker and keeps the dealer who keyed
it as ``keyed_by``. The audit's provenance check matches the keyer with the command's actor, and the chemin de
fer check flags a read logged under anyone but the Banker (``card_dealer_mismatch``); the replay's card line
says who dealt and who keyed each card.
"""

from __future__ import annotations

import msgspec

from contracts import topics as T
from contracts.events import CardDrawn
from croupier.audit import audit
from croupier.replay import describe, replay
from tests.services.helpers import events
from tests.services.test_chemin import Table
from tests.unit.test_audit_provenance import command_records

NATURAL = ("9s", "2s", "Ks", "3s")  # a Player natural: four cards


async def _round() -> tuple[Table, str]:
    t = Table()
    rid = await t.open(banker=(1, "banker"), bank=100_000)
    t.bet(rid, 2, "ann", 20_000)
    await t.close(rid)
    await t.read(rid, NATURAL)  # sent by the console: actor "dealer-CH1" (services.runtime.core.command)
    return t, rid


def _draws(t: Table) -> list:  # type: ignore[type-arg]
    return [e for e in events(t.bus, T.SHOE_EVENTS) if isinstance(e.payload, CardDrawn)]


async def test_a_card_read_is_recorded_under_the_banker_with_the_dealer_who_keyed_it():
    t, rid = await _round()
    draws = _draws(t)
    assert [(e.payload.card_number, e.payload.card, e.actor, e.payload.keyed_by, e.principal) for e in draws] == [
        (1, "9s", "banker", "dealer-CH1", "console"), (2, "2s", "banker", "dealer-CH1", "console"),
        (3, "Ks", "banker", "dealer-CH1", "console"), (4, "3s", "banker", "dealer-CH1", "console")]
    rep = audit(events(t.bus), commands=command_records(t.bus))
    assert rep.provenance.status == "checked" and rep.provenance.events_checked > 0
    assert rep.clean, [str(d) for d in rep.discrepancies]
    # the replay's card line names the Banker who dealt it and the dealer who keyed it
    view = replay(events(t.bus), "CH1", round_id=rid)
    cards = [describe(x)[1] for x in view["timeline"] if x.get("event") == "card"]
    assert len(cards) == 4 and all("dealt by banker, keyed by dealer-CH1" in c for c in cards), cards


async def test_a_read_the_banker_keys_names_no_other_keyer():
    t = Table()
    rid = await t.open(banker=(1, "banker"), bank=100_000)
    t.bet(rid, 2, "ann", 20_000)
    await t.close(rid)
    from contracts.commands import ReadCard
    for n, card in enumerate(NATURAL, 1):
        t.send(T.SHOE_COMMANDS, ReadCard(shoe_id="PS", round_id=rid, card_number=n, card=card), actor="banker")
    await t.bus.pump()
    assert {(e.actor, e.payload.keyed_by) for e in _draws(t)} == {("banker", "")}
    assert audit(events(t.bus), commands=command_records(t.bus)).clean


async def test_the_audit_flags_a_read_logged_under_the_dealer_or_a_keyer_hidden_behind_another():
    t, _ = await _round()
    log = events(t.bus)
    cmds = command_records(t.bus)
    first = next(i for i, e in enumerate(log) if isinstance(e.payload, CardDrawn))
    e = log[first]
    # as before the fix: the read logged under the dealer who keyed it, no keyer
    as_before = msgspec.structs.replace(e, actor="dealer-CH1",
                                        payload=msgspec.structs.replace(e.payload, keyed_by=""))
    rep = audit([*log[:first], as_before, *log[first + 1:]], commands=cmds)
    assert [(d.kind, d.where) for d in rep.discrepancies] == [("card_dealer_mismatch", "R1")]
    # a forged keyer: the command's actor is the dealer, the record says someone else keyed it
    forged = msgspec.structs.replace(e, payload=msgspec.structs.replace(e.payload, keyed_by="ann"))
    kinds = [d.kind for d in audit([*log[:first], forged, *log[first + 1:]], commands=cmds).discrepancies]
    assert kinds == ["actor_mismatch"]
