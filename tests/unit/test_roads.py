"""Roadmaps (odds-and-roads.md §5): hand-worked boards, the three known public faults, and properties.

Notation in comments: Big Road logical columns are numbered n = 1, 2, … and rows m = 1, 2, … as in §5;
``L`` lists the logical column lengths. Entry indices (``DerivedRoad.entries``) are 0-based.
"""

import itertools
import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.budget import examples

from baccarat.errors import BaccaratError
from baccarat.roads import (
    BigRoad,
    Cell,
    InvalidResult,
    InvalidRoadLayout,
    bead_plate,
    big_road,
    big_road_display,
    derived_road,
    derived_road_display,
    parse_results,
    roads,
)
from baccarat.round import Winner
from croupier.roads import as_json, render, roads_command


def marks(seq: str) -> tuple[str, str, str]:
    r = roads(seq)
    return r.big_eye_boy.marks, r.small_road.marks, r.cockroach_pig.marks


def B(ties: int = 0) -> Cell:
    return Cell("B", ties)


def P(ties: int = 0) -> Cell:
    return Cell("P", ties)


# ----------------------------------------------------------------------------------------- parsing


def test_parse_results_case_and_spaces():
    assert parse_results("bP t\tB\nP ") == ("B", "P", "T", "B", "P")
    assert parse_results("") == ()
    assert parse_results("   ") == ()


@pytest.mark.parametrize(
    "text,char,position",
    [("BPX", "X", 3), ("B P x", "x", 5), ("1", "1", 1), ("BP,B", ",", 3), ("BBBBBBBBBBD", "D", 11)],
)
def test_parse_results_names_bad_character_and_position(text, char, position):
    with pytest.raises(InvalidResult) as e:
        parse_results(text)
    assert (e.value.char, e.value.position) == (char, position)
    assert repr(char) in str(e.value) and f"position {position}" in str(e.value)
    assert isinstance(e.value, BaccaratError)


def test_sequences_and_winners_are_accepted():
    assert roads(["b", "P", "T"]).results == ("B", "P", "T")
    assert roads([Winner.BANKER, Winner.TIE, Winner.PLAYER]).results == ("B", "T", "P")
    with pytest.raises(InvalidResult) as e:
        roads(["B", "P", "BP"])
    assert e.value.position == 3
    with pytest.raises(InvalidResult):
        big_road([Winner.BANKER, 7])


@pytest.mark.parametrize("rows", [0, -1, 2.0, True])
def test_bad_rows_is_typed(rows):
    with pytest.raises(InvalidRoadLayout):
        roads("BP", rows=rows)
    with pytest.raises(InvalidRoadLayout):
        bead_plate("BP", rows=rows)


def test_bad_k_is_typed():
    with pytest.raises(InvalidRoadLayout):
        derived_road(big_road("BPB"), 0)


# -------------------------------------------------------------------------------------- bead plate


def test_bead_plate_column_major_six_rows():
    assert bead_plate("BPTBPPB") == [["B", "P", "T", "B", "P", "P"], ["B"]]
    assert bead_plate("BPTBPPBTTP", rows=3) == [["B", "P", "T"], ["B", "P", "P"], ["B", "T", "T"], ["P"]]
    assert bead_plate("") == []
    assert roads("BPTBPPB").bead_plate == (("B", "P", "T", "B", "P", "P"), ("B",))


# ---------------------------------------------------------------------------------------- Big Road


def test_big_road_alternating():
    br = big_road("BPBPBPBP")
    assert br.columns == ((B(),), (P(),)) * 4
    assert br.leading_ties == 0 and br.entries == 8


def test_big_road_ties_at_start_middle_end_and_several_on_one_cell():
    br = big_road("TTBTPTTTBBT")
    # 2 leading ties; B gets 1 tie; P gets 3; then B, B with the final tie on the last B.
    assert br.leading_ties == 2
    assert br.columns == ((B(1),), (P(3),), (B(), B(1)))
    # a tie between two entries of the same side does not break the run
    assert big_road("BTB").columns == ((B(1), B()),)
    assert big_road("PTTTTP").columns == ((P(4), P()),)


def test_big_road_only_ties_and_empty():
    assert big_road("TTT") == BigRoad((), 3)
    assert big_road("") == BigRoad((), 0)
    assert roads("TTT").big_eye_boy.marks == ""


def test_big_road_long_runs_are_single_logical_columns():
    br = big_road("B" * 9 + "P" * 2 + "B" * 13)
    assert br.lengths == (9, 2, 13)
    assert [c[0].side for c in br.columns] == ["B", "P", "B"]


def test_display_dragon_tail_bends_along_bottom_row():
    disp = big_road_display(big_road("B" * 8 + "P" * 8 + "B"))
    # B×8: rows 0-5 of column 0, then right along row 5.
    b1 = [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 5), (2, 5)]
    # P×8 starts at column 1: (1,5) is taken by the B tail, so it turns right early at row 4.
    p = [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4), (3, 4), (4, 4)]
    b2 = [(2, 0)]
    assert list(disp) == b1 + p + b2
    assert [disp[x].side for x in b1 + p + b2] == ["B"] * 8 + ["P"] * 8 + ["B"]


def test_display_cascading_early_turns():
    seq = "B" * 7 + "P" * 7 + "B" * 6 + "P" * 4
    disp = big_road_display(big_road(seq))
    assert list(disp) == [
        (0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 5),  # B×7: tail at row 5
        (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4), (3, 4),  # P×7: blocked at row 5, tail at row 4
        (2, 0), (2, 1), (2, 2), (2, 3), (3, 3), (4, 3),  # B×6: blocked at row 4, tail at row 3
        (3, 0), (3, 1), (3, 2), (4, 2),  # P×4: blocked at row 3, tail at row 2
    ]  # fmt: skip
    assert big_road(seq).lengths == (7, 7, 6, 4)  # display never shortens logical columns


def test_display_start_cell_taken_by_row_zero_tail_moves_right():
    # rows=2: B×3 → (0,0),(0,1),(1,1); P×2 starts (1,0), blocked below → (2,0); next B cannot start at
    # (2,0) (taken by the P tail) so it starts at the first free row-0 cell, (3,0).
    assert list(big_road_display(big_road("BBBPPB"), rows=2)) == [
        (0, 0),
        (0, 1),
        (1, 1),
        (1, 0),
        (2, 0),
        (3, 0),
    ]


def test_display_with_ties_keeps_cells():
    disp = big_road_display(big_road("TBTTPP"))
    assert disp == {(0, 0): B(2), (1, 0): P(), (1, 1): P()}


# ----------------------------------------------------------------------------- derived: hand-worked


def test_alternating_all_red():
    # L = 1,1,1,1,1,1,1,1: every new column compares two equal (length-1) columns → red.
    r = roads("BPBPBPBP")
    assert (r.big_eye_boy.marks, r.small_road.marks, r.cockroach_pig.marks) == ("R" * 6, "R" * 5, "R" * 4)
    assert r.big_eye_boy.entries == (2, 3, 4, 5, 6, 7)
    assert r.small_road.entries == (3, 4, 5, 6, 7)
    assert r.cockroach_pig.entries == (4, 5, 6, 7)
    assert r.big_eye_boy.columns == (("R",) * 6,)
    assert derived_road_display(r.big_eye_boy) == {(0, i): "R" for i in range(6)}


def test_mixed_shoe_with_ties_all_three_roads():
    # B B(T) B | P P | B | P(T) P P P | B B | P | B | P P P(T)      L = 3,2,1,4,2,1,1,3
    seq = "BBTBPPBPTPPPBBPBPPPT"
    r = roads(seq)
    assert r.big_road.lengths == (3, 2, 1, 4, 2, 1, 1, 3)
    assert r.big_road.columns[0] == (B(), B(1), B())
    assert r.big_road.columns[3] == (P(1), P(), P(), P())
    assert r.big_road.columns[7] == (P(), P(), P(1))
    # Big Eye Boy (k=1):
    #  (2,2) p=L1=3 → R | (3,1) L2≠L1 → B | (4,1) L3≠L2 → B | (4,2) p=L3=1, m=p+1 → B | (4,3),(4,4) m>p+1 → R R
    #  (5,1) L4≠L3 → B | (5,2) p=L4=4 → R | (6,1) L5≠L4 → B | (7,1) L6≠L5 → B
    #  (8,1) L7=L6 → R | (8,2) p=L7=1 → B | (8,3) straight drop → R
    assert r.big_eye_boy.marks == "RBBBRRBRBBRBR"
    assert r.big_eye_boy.columns == (
        ("R",),
        ("B", "B", "B"),
        ("R", "R"),
        ("B",),
        ("R",),
        ("B", "B"),
        ("R",),
        ("B",),
        ("R",),
    )
    assert r.big_eye_boy.first_entry == 4
    # Small Road (k=2): first mark col 4 row 1 (col 3 row 2 never reached)
    #  (4,1) L3≠L1 → B | (4,2) p=L2=2 → R | (4,3) m=p+1 → B | (4,4) straight drop → R
    #  (5,1) L4≠L2 → B | (5,2) p=L3=1 → B | (6,1) L5≠L3 → B | (7,1) L6≠L4 → B | (8,1) L7≠L5 → B
    #  (8,2) p=L6=1 → B | (8,3) straight drop → R
    assert r.small_road.marks == "BRBRBBBBBBR"
    assert r.small_road.columns == (("B",), ("R",), ("B",), ("R",), ("B",) * 6, ("R",))
    assert r.small_road.first_entry == 6
    # Cockroach Pig (k=3): first mark col 4 row 2
    #  (4,2),(4,3) p=L1=3 → R R | (4,4) m=p+1 → B | (5,1) L4≠L1 → B | (5,2) p=L2=2 → R
    #  (6,1) L5=L2 → R | (7,1) L6=L3 → R | (8,1) L7≠L4 → B | (8,2) p=L5=2 → R | (8,3) m=p+1 → B
    assert r.cockroach_pig.marks == "RRBBRRRBRB"
    assert r.cockroach_pig.columns == (("R", "R"), ("B", "B"), ("R", "R", "R"), ("B",), ("R",), ("B",))
    assert r.cockroach_pig.first_entry == 7


def test_long_columns_cascade_marks():
    # L = 7,7,6,4 (the cascading display above).
    # BEB: (2,2..7) p=7 → R×6 | (3,1) L2=L1 → R | (3,2..6) p=7 → R×5 | (4,1) L3≠L2 → B | (4,2..4) p=6 → R×3
    # SR:  (3,2..6) p=L1=7 → R×5 | (4,1) L3≠L1 → B | (4,2..4) p=L2=7 → R×3
    # CP:  (4,2..4) p=L1=7 → R×3
    seq = "B" * 7 + "P" * 7 + "B" * 6 + "P" * 4
    assert marks(seq) == ("R" * 12 + "B" + "RRR", "RRRRRBRRR", "RRR")


def test_derived_road_display_has_a_dragon_tail_too():
    # L = 8,8,1: BEB (2,2..8) p=8 → R×7, (3,1) L2=L1 → R: one logical column of 8 reds.
    r = roads("B" * 8 + "P" * 8 + "B")
    assert r.big_eye_boy.marks == "R" * 8 and r.big_eye_boy.columns == (("R",) * 8,)
    assert list(r.derived_display(r.big_eye_boy)) == [(0, i) for i in range(6)] + [(1, 5), (2, 5)]
    assert (r.small_road.marks, r.cockroach_pig.marks) == ("", "")


# ---------------------------------------------------------------------- the three known public faults


def display_based_marks(seq: str, k: int) -> str:
    """The public fault (a), for contrast: derived marks read off the bent display grid.

    Display columns stand in for logical columns (height = cells in that display column) and each entry is
    judged at its display position — what a scoreboard does when it only keeps the drawn grid.
    """
    disp = big_road_display(big_road(seq))
    height = Counter(c for c, _ in disp)
    out = []
    for c, r in disp:
        if r == 0:
            if c - 1 - k >= 0:
                out.append("R" if height[c - 1] == height[c - 1 - k] else "B")
        elif c - k >= 0:
            out.append("B" if (c - k, r - 1) in disp and (c - k, r) not in disp else "R")
    return "".join(out)


def test_fault_a_derived_roads_use_logical_columns_not_the_display():
    # L = 7,6,1,2. On the display the B run shows 6 cells in column 0 (7th on the tail) and the P run
    # shows 5 P + the B tail cell in column 1: both display columns are 6 high.
    seq = "B" * 7 + "P" * 6 + "B" + "PP"
    # BEB: (2,2..6) p=7 → R×5 | (3,1) L2=6 ≠ L1=7 → BLUE (the display says 6 = 6 → red) | (4,1) L3≠L2 → B
    #      (4,2) p=L3=1 → B
    # SR:  (4,1) L3≠L1 → B | (4,2) p=L2=6 → R          CP: (4,2) p=L1=7 → R
    assert marks(seq) == ("RRRRRBBB", "BR", "R")
    assert display_based_marks(seq, 1) != "RRRRRBBB"
    # Entries on a dragon tail belong to their logical column: B×8 then P gives no mark at all (column 2
    # row 1 compares against a column 0 that does not exist), although the tail cells sit in display
    # columns 1 and 2.
    assert marks("B" * 8 + "P") == ("", "", "")
    assert display_based_marks("B" * 8 + "P", 1) != ""


@pytest.mark.parametrize(
    "seq,expected,naive",
    [
        # L = 1,1,3. BEB: (3,1) L2=L1 → R | (3,2) p=L2=1, m=p+1 → B | (3,3) m>p+1 → straight drop → R
        #            SR:  (3,2) p=L1=1 → B | (3,3) straight drop → R
        ("BPBBB", ("RBR", "BR", ""), ("RBB", "BB", "")),
        # L = 1,1,1,3. BEB: (3,1) R | (4,1) L3=L2 → R | (4,2) p=L3=1 → B | (4,3) straight drop → R
        #              SR:  (4,1) L3=L1 → R | (4,2) p=L2=1 → B | (4,3) straight drop → R
        #              CP:  (4,2) p=L1=1 → B | (4,3) straight drop → R
        ("BPBPPP", ("RRBR", "RBR", "BR"), ("RRBB", "RBB", "BB")),
        # L = 1,1,1,1,4. BEB: (3,1),(4,1),(5,1) R R R | (5,2) p=L4=1 → B | (5,3),(5,4) straight drop → R R
        #                SR:  (4,1),(5,1) R R | (5,2) p=L3=1 → B | R R
        #                CP:  (5,1) L4=L1 → R | (5,2) p=L2=1 → B | (5,3),(5,4) straight drop → R R
        ("BPBPBBBB", ("RRRBRR", "RRBRR", "RBRR"), ("RRRBBB", "RRBBB", "RBBB")),
    ],
)
def test_fault_b_straight_drop_is_red(seq, expected, naive):
    # naive: what "blue whenever m > p" (straight-drop rule dropped) would give
    assert marks(seq) == expected
    assert all(a != b for a, b in zip(expected, naive) if a)


@pytest.mark.parametrize(
    "seq,k,expected_marks,first_entry,where",
    [
        # Big Eye Boy: first mark at column 2 row 2 …
        ("BPP", 1, "B", 2, (2, 2)),  # p=L1=1, m=2 → blue
        ("BBBPP", 1, "R", 4, (2, 2)),  # p=L1=3 → red
        # … or column 3 row 1 when column 2 row 2 is never reached
        ("BPB", 1, "R", 2, (3, 1)),  # L2=L1=1 → red
        ("BBPB", 1, "B", 3, (3, 1)),  # L2=1 ≠ L1=2 → blue
        # Small Road: column 3 row 2 …
        ("BPBB", 2, "B", 3, (3, 2)),  # p=L1=1 → blue
        ("BBPBB", 2, "R", 4, (3, 2)),  # p=L1=2 → red
        # … or column 4 row 1
        ("BPBP", 2, "R", 3, (4, 1)),  # L3=L1 → red
        ("BPPBP", 2, "R", 4, (4, 1)),  # L3=1=L1 → red
        ("BBPBP", 2, "B", 4, (4, 1)),  # L3=1 ≠ L1=2 → blue
        # Cockroach Pig: column 4 row 2 …
        ("BPBPP", 3, "B", 4, (4, 2)),  # p=L1=1 → blue
        ("BBBPBPP", 3, "R", 6, (4, 2)),  # p=L1=3 → red
        # … or column 5 row 1
        ("BPBPB", 3, "R", 4, (5, 1)),  # L4=L1 → red
        ("BBPBPB", 3, "B", 5, (5, 1)),  # L4=1 ≠ L1=2 → blue
    ],
)
def test_fault_c_first_marks_exactly_where_section_5_says(seq, k, expected_marks, first_entry, where):
    road = roads(seq).derived[k - 1]
    assert road.k == k
    assert road.marks == expected_marks
    assert road.entries == (first_entry,)
    lengths = big_road(seq).lengths
    n, m = where
    assert sum(lengths[: n - 1]) + m - 1 == first_entry  # the entry is the Big Road cell named
    # one round fewer: no mark yet (nothing is marked before that cell)
    assert roads(seq[:-1]).derived[k - 1].marks == ""


@pytest.mark.parametrize("seq,k", [("BP", 1), ("BPPP", 2), ("BPB", 2), ("BPBBBBB", 3), ("BPBP", 3)])
def test_fault_c_no_mark_before_the_first_mark_cell(seq, k):
    assert roads(seq).derived[k - 1].marks == ""


# ------------------------------------------------------------------------------- JSON and terminal


def test_to_dict_shape():
    d = roads("TBTTPP").to_dict()
    assert d == {
        "bead_plate": [["T", "B", "T", "T", "P", "P"]],
        "big_road": {
            "leading_ties": 1,
            "columns": [[{"side": "B", "ties": 2}], [{"side": "P", "ties": 0}, {"side": "P", "ties": 0}]],
            "display": [[0, 0, "B", 2], [1, 0, "P", 0], [1, 1, "P", 0]],
        },
        # (2,2): p = L1 = 1, m = 2 → blue
        "big_eye_boy": {"marks": "B", "columns": [["B"]], "display": [[0, 0, "B"]]},
        "small_road": {"marks": "", "columns": [], "display": []},
        "cockroach_pig": {"marks": "", "columns": [], "display": []},
    }
    assert json.loads(json.dumps(d)) == d


def test_roads_command_json_and_text():
    seq = "BBTBPPBPTPPPBBPBPPPT"
    text = roads_command(seq, as_json=True)
    assert json.loads(text) == as_json(roads(seq)) == roads(seq).to_dict()
    plain = roads_command(seq.lower(), as_json=False)
    assert plain == render(roads(seq))
    assert "  marks: RBBBRRBRBBRBR" in plain.splitlines()
    assert "  logical columns: 3B 2P 1B 4P 2B 1P 1B 3P" in plain.splitlines()
    assert (
        "Small Road (k=2; R = red/regular, B = blue/choppy): 11 marks, first from Big Road column 4 row 1"
        in plain
    )
    grid = plain.splitlines()
    i = grid.index("  logical columns: 3B 2P 1B 4P 2B 1P 1B 3P")
    assert grid[i - 4 : i] == [
        "  B  P  B  P1 B  P  B  P",
        "  B1 P  .  P  B  .  .  P",
        "  B  .  .  P  .  .  .  P1",
        "  .  .  .  P  .  .  .  .",
    ]
    assert "no marks yet" in roads_command("", as_json=False)
    with pytest.raises(InvalidResult, match="position 3"):
        roads_command("BPQ", as_json=False)


# -------------------------------------------------------------------------------------- properties

_runs = st.lists(st.tuples(st.sampled_from("BPT"), st.integers(1, 9)), max_size=25).map(
    lambda rs: "".join(c * n for c, n in rs)
)
SHOES = st.one_of(st.text(alphabet="BPT", max_size=100), _runs)


def expected_first_mark(lengths: tuple[int, ...], k: int) -> int | None:
    """§5 stated directly: column k+1 row 2, or column k+2 row 1 if that cell is never reached."""
    if len(lengths) > k and lengths[k] >= 2:
        return sum(lengths[:k]) + 1
    if len(lengths) > k + 1:
        return sum(lengths[: k + 1])
    return None


def oracle_marks(lengths: tuple[int, ...], k: int) -> str:
    """§5 by looking at the logical grid: at row m ≥ 2, column n−k has row m → red; has m−1 but not m →
    blue; has neither → red. Row 1: compare the depths of columns n−1 and n−1−k."""
    filled = {(n, m) for n, length in enumerate(lengths, 1) for m in range(1, length + 1)}
    out = []
    for n, length in enumerate(lengths, 1):
        for m in range(1, length + 1):
            if m == 1:
                if n - 1 - k >= 1:
                    out.append("R" if lengths[n - 2] == lengths[n - 2 - k] else "B")
            elif n - k >= 1:
                out.append("B" if (n - k, m - 1) in filled and (n - k, m) not in filled else "R")
    return "".join(out)


@settings(max_examples=examples(150), deadline=None)
@given(SHOES)
def test_property_entries_and_ties(seq):
    br = big_road(seq)
    non_ties = len(seq) - seq.count("T")
    assert br.entries == non_ties == sum(br.lengths) == len(br.cells)
    assert "".join(c.side for c in br.cells) == seq.replace("T", "")  # ties never create entries
    assert br.leading_ties + sum(c.ties for c in br.cells) == seq.count("T")
    assert big_road(seq.replace("T", "")).lengths == br.lengths
    assert all(len(col) >= 1 and len({c.side for c in col}) == 1 for col in br.columns)
    assert all(a[0].side != b[0].side for a, b in zip(br.columns, br.columns[1:]))


@settings(max_examples=examples(150), deadline=None)
@given(SHOES)
def test_property_derived_mark_counts_and_oracle(seq):
    r = roads(seq)
    n = r.big_road.entries
    for road in r.derived:
        first = expected_first_mark(r.big_road.lengths, road.k)
        assert road.first_entry == first
        assert len(road.marks) == (0 if first is None else max(0, n - first))
        # every entry from the first marked one adds exactly one mark
        assert road.entries == (() if first is None else tuple(range(first, n)))
        assert road.marks == oracle_marks(r.big_road.lengths, road.k)
        assert set(road.marks) <= {"R", "B"}
        assert "".join("".join(c) for c in road.columns) == road.marks
        assert all(a[0] != b[0] for a, b in zip(road.columns, road.columns[1:]))


@settings(max_examples=examples(100), deadline=None)
@given(SHOES, st.integers(0, 100))
def test_property_marks_never_change_once_made(seq, cut):
    full, prefix = roads(seq), roads(seq[:cut])
    for a, b in zip(full.derived, prefix.derived):
        assert a.marks.startswith(b.marks)


@settings(max_examples=examples(100), deadline=None)
@given(SHOES, st.sampled_from([1, 2, 3, 4, 6, 8]))
def test_property_display_never_changes_logical_columns(seq, rows):
    standard, other = roads(seq), roads(seq, rows=rows)
    assert other.big_road == standard.big_road
    assert [(d.marks, d.columns, d.entries) for d in other.derived] == [
        (d.marks, d.columns, d.entries) for d in standard.derived
    ]
    for columns, disp in [(other.big_road.columns, other.big_road_display())] + [
        (d.columns, other.derived_display(d)) for d in other.derived
    ]:
        items = [x for col in columns for x in col]
        assert list(disp.values()) == items  # entry order, nothing lost, no two entries in one cell
        assert all(0 <= row < rows for _, row in disp)
        # the display path of each logical column: starts at row 0, goes down, then only right
        pos = list(disp)
        i = 0
        for col in columns:
            path = pos[i : i + len(col)]
            i += len(col)
            assert path[0][1] == 0
            turned = False
            for (c0, r0), (c1, r1) in itertools.pairwise(path):
                if (c1, r1) == (c0, r0 + 1):
                    assert not turned
                else:
                    assert (c1, r1) == (c0 + 1, r0)
                    turned = True
    # logical columns rebuilt from the display's cells, in entry order, are the logical columns
    rebuilt: list[list[Cell]] = []
    for cell in other.big_road_display().values():
        if rebuilt and rebuilt[-1][0].side == cell.side:
            rebuilt[-1].append(cell)
        else:
            rebuilt.append([cell])
    assert tuple(tuple(c) for c in rebuilt) == standard.big_road.columns


@settings(max_examples=examples(100), deadline=None)
@given(SHOES, st.integers(1, 8))
def test_property_bead_plate_preserves_order(seq, rows):
    plate = bead_plate(seq, rows)
    assert "".join("".join(col) for col in plate) == seq
    assert all(len(col) == rows for col in plate[:-1])
    assert all(1 <= len(col) <= rows for col in plate)
