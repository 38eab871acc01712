"""Range scans (items/keys/values), ``for k in db`` and the raw iterator."""

import itertools

import pytest

import strata
from _util import check_all, delete_range_model, fill, key, model_select, value

KEYS = [
    b"",
    b"\x00",
    b"\x00\x00",
    b"a",
    b"a\x00",
    b"ab",
    b"abc",
    b"abd",
    b"ac",
    b"b",
    b"ba",
    b"bb",
    b"c",
    b"\xfe",
    b"\xff",
    b"\xff\x00",
    b"\xff\xff",
    b"\xff\xff\xff",
]
MODEL = {k: b"val-" + k for k in KEYS}


@pytest.fixture(params=["memtable", "flushed", "mixed"])
def filled(db, request):
    """``db`` holding ``MODEL``: all in the memtable, all in tables, or spread
    over two tables and the memtable with tombstones for keys written again."""
    if request.param == "memtable":
        for k, v in MODEL.items():
            db[k] = v
    elif request.param == "flushed":
        for k, v in MODEL.items():
            db[k] = v
        db.flush()
    else:
        items = sorted(MODEL.items())
        for k, v in items[::2]:
            db[k] = v
        for k in (b"zz-gone", b"ab-gone", b"\x00gone"):
            db[k] = b"soon deleted"
        db.flush()
        for k, v in items[1::2]:
            db[k] = b"old " + v
        db.delete(items[1][0])
        db.flush()
        for k, v in items[1::2]:
            db[k] = v
        for k in (b"zz-gone", b"ab-gone", b"\x00gone"):
            db.delete(k)
        db.delete_range(b"aa", b"ab")  # covers nothing live
    assert list(db.items()) == model_select(MODEL)
    return db


BOUNDS = [None, b"", b"\x00", b"a", b"ab", b"abz", b"b", b"c", b"d", b"\xff", b"\xff\xff", b"\xff\xff\xff\xff"]
PREFIXES = [None, b"", b"\x00", b"a", b"ab", b"abc", b"abcd", b"b", b"z", b"\xff", b"\xff\xff"]


def _check_scan(db, model, start, end, prefix, reverse):
    expected = model_select(model, start, end, prefix, reverse)
    kwargs = {}
    if start is not None:
        kwargs["start"] = start
    if end is not None:
        kwargs["end"] = end
    if prefix is not None:
        kwargs["prefix"] = prefix
    if reverse:
        kwargs["reverse"] = True
    got = list(db.items(**kwargs))
    assert got == expected, (start, end, prefix, reverse)
    assert list(db.keys(**kwargs)) == [k for k, _ in expected]
    assert list(db.values(**kwargs)) == [v for _, v in expected]
    # Positional form too.
    assert list(db.items(start, end, prefix, reverse)) == expected


@pytest.mark.parametrize("reverse", [False, True])
def test_items_start_end(filled, reverse):
    for start, end in itertools.product(BOUNDS, BOUNDS):
        _check_scan(filled, MODEL, start, end, None, reverse)


@pytest.mark.parametrize("reverse", [False, True])
def test_items_prefix(filled, reverse):
    for prefix in PREFIXES:
        _check_scan(filled, MODEL, None, None, prefix, reverse)


@pytest.mark.parametrize("reverse", [False, True])
def test_items_prefix_with_bounds(filled, reverse):
    for prefix in [b"a", b"ab", b"\xff", b"\x00"]:
        for start, end in itertools.product(BOUNDS, BOUNDS):
            _check_scan(filled, MODEL, start, end, prefix, reverse)


def test_items_types(filled):
    for item in filled.items():
        assert type(item) is tuple and len(item) == 2
        assert type(item[0]) is bytes and type(item[1]) is bytes
    for k in filled.keys():
        assert type(k) is bytes
    for v in filled.values():
        assert type(v) is bytes


def test_empty_ranges(filled):
    assert list(filled.items(start=b"b", end=b"b")) == []
    assert list(filled.items(start=b"c", end=b"a")) == []
    assert list(filled.items(start=b"c", end=b"a", reverse=True)) == []
    assert list(filled.items(start=b"abca", end=b"abcz")) == []
    assert list(filled.items(prefix=b"q")) == []
    assert list(filled.items(prefix=b"q", reverse=True)) == []
    assert list(filled.keys(start=b"\xff\xff\xff\x00")) == []
    assert list(filled.keys(end=b"")) == []
    assert list(filled.values(end=b"", reverse=True)) == []


def test_empty_database(db):
    assert list(db.items()) == []
    assert list(db.items(reverse=True)) == []
    assert list(db.keys(prefix=b"a")) == []
    assert list(db) == []
    it = db.iterator()
    it.seek_to_first()
    assert not it.valid()
    it.seek_to_last()
    assert not it.valid()


def test_for_k_in_db(filled):
    assert [k for k in filled] == sorted(KEYS)
    assert list(iter(filled)) == sorted(KEYS)


def test_iterators_are_independent(filled):
    a = filled.keys()
    b = filled.keys(reverse=True)
    first = [next(a), next(a)]
    last = [next(b), next(b)]
    assert first == sorted(KEYS)[:2]
    assert last == sorted(KEYS)[::-1][:2]
    assert first + list(a) == sorted(KEYS)
    assert iter(a) is a


def test_iteration_after_flushes_deletes_and_overwrites(small_db):
    db = small_db
    model = {}
    fill(db, model, 2000, size=120)
    db.flush()
    fill(db, model, 1000, start=500, gen=1, size=120)  # overwrite 500..1499
    for i in range(0, 2000, 7):
        db.delete(key(i))
        model.pop(key(i), None)
    db.flush()
    db.delete_range(key(1200), key(1300))
    delete_range_model(model, key(1200), key(1300))
    fill(db, model, 300, start=1800, gen=2, size=120)  # overwrite, partly in memtable
    db[key(1250)] = b"back"
    model[key(1250)] = b"back"
    check_all(db, model)
    for start, end, prefix in [
        (key(100), key(900), None),
        (None, key(1250), None),
        (key(1250), None, None),
        (key(1199), key(1301), None),
        (None, None, b"key0000"),
        (None, None, b"key00012"),
        (key(1000), key(1500), b"key00012"),
    ]:
        for reverse in (False, True):
            _check_scan(db, model, start, end, prefix, reverse)
    db.compact_range()
    db.wait_for_compactions()
    check_all(db, model)
    _check_scan(db, model, key(1100), key(1400), None, True)


def test_reverse_iteration_over_many_keys(small_db):
    db = small_db
    model = {}
    fill(db, model, 3000, size=80)
    db.flush()
    assert list(db.keys(reverse=True)) == sorted(model, reverse=True)


# --------------------------------------------------------------------------
# Raw iterator


def test_raw_iterator_unpositioned(filled):
    it = filled.iterator()
    assert isinstance(it, strata.RawIterator)
    assert not it.valid()
    with pytest.raises(strata.InvalidArgumentError):
        it.key()
    with pytest.raises(strata.InvalidArgumentError):
        it.value()
    with pytest.raises(strata.InvalidArgumentError):
        it.item()
    with pytest.raises(strata.InvalidArgumentError):
        it.next()


def test_raw_iterator_forward_and_backward(filled):
    it = filled.iterator()
    it.seek_to_first()
    seen = []
    while it.valid():
        k = it.key()
        assert type(k) is bytes
        assert it.value() == MODEL[k]
        assert it.item() == (k, MODEL[k])
        seen.append(k)
        it.next()
    assert seen == sorted(KEYS)
    assert not it.valid()

    it.seek_to_last()
    back = []
    while it.valid():
        back.append(it.key())
        it.prev()
    assert back == sorted(KEYS, reverse=True)


def test_raw_iterator_usable_after_a_refused_call(filled):
    """A call refused because the iterator is not valid leaves it usable: a seek positions it."""
    it = filled.iterator()
    it.seek_to_first()
    it.seek_to_last()
    it.next()  # ran off the end
    assert not it.valid()
    with pytest.raises(strata.InvalidArgumentError):
        it.key()
    with pytest.raises(strata.InvalidArgumentError):
        it.item()
    with pytest.raises(strata.InvalidArgumentError):
        it.next()
    it.seek_to_first()
    assert it.valid()
    assert it.key() == b""
    it.next()
    assert it.key() == b"\x00"

    fresh = filled.iterator()
    with pytest.raises(strata.InvalidArgumentError):
        fresh.next()  # not positioned yet
    fresh.seek(b"b")
    assert fresh.item() == (b"b", MODEL[b"b"])


def test_raw_iterator_seek(filled):
    it = filled.iterator()
    s = sorted(KEYS)
    for target in BOUNDS[1:] + [b"aa", b"abcd", b"\xfe\xff", b"\xff\x01"]:
        it.seek(target)
        ge = [k for k in s if k >= target]
        if ge:
            assert it.valid(), target
            assert it.key() == ge[0]
        else:
            assert not it.valid(), target

        it.seek_for_prev(target)
        le = [k for k in s if k <= target]
        if le:
            assert it.valid(), target
            assert it.key() == le[-1]
        else:
            assert not it.valid(), target


def test_raw_iterator_seek_exact_and_direction_changes(filled):
    it = filled.iterator()
    it.seek(b"ab")
    assert it.key() == b"ab"
    it.next()
    assert it.key() == b"abc"
    it.prev()
    assert it.key() == b"ab"
    it.prev()
    assert it.key() == b"a\x00"
    it.next()
    it.next()
    assert it.key() == b"abc"
    it.seek_for_prev(b"ab")
    assert it.key() == b"ab"
    it.seek_for_prev(b"abz")
    assert it.key() == b"abd"
    it.next()
    assert it.key() == b"ac"
    it.seek_to_first()
    assert it.key() == b""
    it.prev()
    assert not it.valid()
    it.seek_to_last()
    assert it.key() == b"\xff\xff\xff"
    it.next()
    assert not it.valid()
    it.seek(b"\xff\xff\xff\x00")
    assert not it.valid()


BOUNDED = [(b"a", b"b"), (b"ab", b"ac"), (None, b"a"), (b"\xff", None), (b"abz", b"b"), (b"b", b"b"), (b"c", b"a")]


@pytest.mark.parametrize("start, end", BOUNDED)
def test_raw_iterator_bounds(filled, start, end):
    inside = [k for k in sorted(KEYS) if (start is None or k >= start) and (end is None or k < end)]
    it = filled.iterator(start=start, end=end)
    it.seek_to_first()
    got = []
    while it.valid():
        got.append(it.key())
        it.next()
    assert got == inside
    it.seek_to_last()
    got = []
    while it.valid():
        got.append(it.key())
        it.prev()
    assert got == inside[::-1]
    for target in [b"", b"a", b"ab", b"abc", b"b", b"ba", b"z", b"\xff\xff\xff\xff"]:
        it.seek(target)
        ge = [k for k in inside if k >= target]
        if ge:
            assert it.valid() and it.key() == ge[0], target
        else:
            assert not it.valid(), target
        it.seek_for_prev(target)
        le = [k for k in inside if k <= target]
        if le:
            assert it.valid() and it.key() == le[-1], target
        else:
            assert not it.valid(), target


def test_raw_iterator_positional_bounds(filled):
    it = filled.iterator(b"b", b"c")
    it.seek_to_first()
    assert it.key() == b"b"
    it.seek_to_last()
    assert it.key() == b"bb"


def test_raw_iterator_over_tables(small_db):
    db = small_db
    model = {}
    fill(db, model, 2000, size=100)
    db.flush()
    for i in range(0, 2000, 2):
        db.delete(key(i))
        del model[key(i)]
    it = db.iterator(start=key(500), end=key(600))
    it.seek_to_first()
    got = []
    while it.valid():
        got.append(it.item())
        it.next()
    assert got == model_select(model, key(500), key(600))
    it.seek(key(550))
    assert it.key() == key(551)
    it.seek_for_prev(key(550))
    assert it.key() == key(549)


# --------------------------------------------------------------------------
# Consistent views


def test_items_iterator_does_not_see_later_writes(filled):
    it = filled.items()
    keys_it = filled.keys(reverse=True)
    vals_it = filled.values()
    filled[b"aa"] = b"new key"
    filled[b"b"] = b"overwritten"
    del filled[b"c"]
    filled.delete_range(b"\x00", b"a")
    assert list(it) == model_select(MODEL)
    assert list(keys_it) == sorted(KEYS, reverse=True)
    assert list(vals_it) == [v for _, v in model_select(MODEL)]
    # A new iterator sees them.
    assert filled[b"aa"] == b"new key"
    assert b"aa" in list(filled.keys())
    assert b"c" not in list(filled.keys())


def test_partially_consumed_iterator_keeps_its_view(filled):
    it = filled.keys()
    assert next(it) == b""
    filled[b"\x00\x01"] = b"x"
    filled.delete(b"a")
    assert list(it) == sorted(KEYS)[1:]


def test_raw_iterator_does_not_see_later_writes(filled):
    it = filled.iterator()
    filled[b"aa"] = b"new"
    filled[b"a"] = b"changed"
    del filled[b"ab"]
    it.seek(b"a")
    assert it.item() == (b"a", MODEL[b"a"])
    it.next()
    assert it.key() == b"a\x00"
    it.next()
    assert it.key() == b"ab"


def test_iterator_view_survives_flush_and_compaction(small_db):
    db = small_db
    model = {}
    fill(db, model, 1500)
    snapshot_model = dict(model)
    it = db.items()
    fill(db, model, 1500, gen=1)
    db.delete_range(key(0), key(1000))
    db.flush()
    db.compact_range()
    db.wait_for_compactions()
    assert list(it) == model_select(snapshot_model)


def test_writes_during_iteration(db):
    for i in range(100):
        db[key(i)] = value(i)
    seen = []
    for k, v in db.items():
        seen.append(k)
        db[k + b"-x"] = b"added"
        db.delete(k)
    assert seen == [key(i) for i in range(100)]
    assert list(db.keys()) == [key(i) + b"-x" for i in range(100)]
