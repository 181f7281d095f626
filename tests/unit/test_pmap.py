"""The projection's persistent map against a dict model: same items, order-independent equality, msgpack."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from services.projection.pmap import PMap

ops = st.lists(st.tuples(st.booleans(), st.text(max_size=6), st.integers(-2**63, 2**63 - 1)), max_size=200)


@given(ops)
def test_matches_a_dict_and_round_trips(steps):
    m: PMap[int] = PMap()
    model: dict[str, int] = {}
    versions = []
    for put, k, v in steps:
        versions.append((m, dict(model)))
        if put:
            m, model[k] = m.set(k, v), v
        else:
            m = m.remove(k)
            model.pop(k, None)
        assert len(m) == len(model) and dict(m.items()) == model
    for old, snapshot in versions:  # every older version is untouched
        assert dict(old.items()) == snapshot
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(m), type=PMap[int]) == m
    rebuilt: PMap[int] = PMap()
    for k in sorted(model, reverse=True):  # another insertion order, same value
        rebuilt = rebuilt.set(k, model[k])
    assert rebuilt == m
    assert all(m.get(k) == v and k in m for k, v in model.items())


def test_emptied_map_equals_the_empty_map():
    m = PMap().set("a", 1).set("b", 2)
    assert m.remove("a").remove("b") == PMap() and m.remove("zz") is m and m.get("zz", 7) == 7
