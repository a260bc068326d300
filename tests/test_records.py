import pytest

from judgecal.data.records import Candidate, Item, stable_hash, to_item_orientation


@pytest.mark.parametrize(
    ("shown", "order", "expected"),
    [("A", "AB", "A"), ("B", "AB", "B"), ("A", "BA", "B"), ("B", "BA", "A"), ("tie", "BA", "tie"),
     ("invalid", "BA", "invalid"), (None, "BA", None)],
)
def test_order_is_undone_once(shown, order, expected):
    assert to_item_orientation(shown, order) == expected


def test_bad_order_is_rejected():
    with pytest.raises(ValueError, match="order"):
        to_item_orientation("A", "CA")


def test_item_json_round_trip():
    it = Item("x", "p", [Candidate("a", "gpt-4o", "openai"), Candidate("b")], metadata={"k": [1, 2]})
    assert Item.from_json(it.to_json()) == it


def test_stable_hash_ignores_key_order_but_not_values():
    assert stable_hash({"a": 1, "b": 2}) == stable_hash({"b": 2, "a": 1})
    assert stable_hash({"a": 1}) != stable_hash({"a": 2})
