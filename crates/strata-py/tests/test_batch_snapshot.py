"""Write batches and snapshots."""

import pytest

import strata
from _util import SMALL, fill, key, model_select, u64, from_u64


class Boom(Exception):
    pass


# --------------------------------------------------------------------------
# Write batches


def test_with_batch_commits_on_clean_exit(db):
    db[b"old"] = b"1"
    db[b"r1"] = b"x"
    db[b"r2"] = b"x"
    with db.write_batch() as wb:
        assert isinstance(wb, strata.WriteBatch)
        wb.put(b"a", b"1")
        wb.put(b"b", b"2")
        wb.delete(b"old")
        wb.delete_range(b"r", b"s")
        # Nothing is visible before the block ends.
        assert db.get(b"a") is None
        assert db[b"old"] == b"1"
        assert db.get(b"r1") == b"x"
    assert list(db.items()) == [(b"a", b"1"), (b"b", b"2")]


def test_with_batch_dropped_on_exception(db):
    db[b"keep"] = b"1"
    with pytest.raises(Boom):
        with db.write_batch() as wb:
            wb.put(b"a", b"1")
            wb.delete(b"keep")
            wb.delete_range(b"", b"\xff")
            raise Boom()
    assert list(db.items()) == [(b"keep", b"1")]


def test_with_batch_exception_is_not_swallowed(db):
    class Other(BaseException):
        pass

    with pytest.raises(Other):
        with db.write_batch() as wb:
            wb.put(b"a", b"1")
            raise Other()
    assert b"a" not in db


def test_batch_ops_apply_in_order(db):
    with db.write_batch() as wb:
        wb.put(b"k", b"1")
        wb.delete(b"k")
        wb.put(b"k", b"2")
        wb.put(b"j", b"1")
        wb.delete_range(b"j", b"k")
        wb.put(b"l", b"1")
        wb.put(b"l", b"3")
    assert list(db.items()) == [(b"k", b"2"), (b"l", b"3")]


def test_batch_sync(db_path):
    with strata.open(db_path) as d:
        with d.write_batch(sync=True) as wb:
            wb.put(b"a", b"1")
        wb2 = strata.WriteBatch()
        wb2.put(b"b", b"2")
        d.write(wb2, sync=True)
    with strata.open(db_path) as d:
        assert list(d.items()) == [(b"a", b"1"), (b"b", b"2")]


def test_batch_atomic_across_keyspaces(db):
    ks = db.keyspace("other")
    with db.write_batch() as wb:
        wb.put(b"k", b"default", keyspace=None)
        wb.put(b"k", b"other", keyspace=ks)
        wb.put(b"only-other", b"o", keyspace=ks)
        wb.delete(b"x", keyspace=ks)
    assert db[b"k"] == b"default"
    assert ks[b"k"] == b"other"
    assert b"only-other" not in db
    assert ks[b"only-other"] == b"o"

    with pytest.raises(Boom):
        with db.write_batch() as wb:
            wb.put(b"k", b"default2")
            wb.put(b"k", b"other2", keyspace=ks)
            wb.delete(b"only-other", keyspace=ks)
            raise Boom()
    assert db[b"k"] == b"default"
    assert ks[b"k"] == b"other"
    assert ks[b"only-other"] == b"o"

    with db.write_batch() as wb:
        wb.delete_range(b"", b"\xff", keyspace=ks)
        wb.put(b"z", b"1")
    assert list(ks.items()) == []
    assert list(db.items()) == [(b"k", b"default"), (b"z", b"1")]


def test_batch_atomic_across_keyspaces_is_all_or_nothing_on_error(db):
    """A batch that fails (merge into a keyspace without operator) writes nothing."""
    ks = db.keyspace("other")
    with pytest.raises(strata.InvalidArgumentError):
        with db.write_batch() as wb:
            wb.put(b"a", b"1")
            wb.put(b"a", b"1", keyspace=ks)
            wb.merge(b"m", b"1", keyspace=ks)
    assert b"a" not in db
    assert b"a" not in ks


def test_batch_merge_across_keyspaces(db_path):
    with strata.open(db_path, options={"merge_operator": "strata.UInt64Add"}) as d:
        ks = d.create_keyspace("max", options={"merge_operator": "strata.Max"})
        with d.write_batch() as wb:
            wb.merge(b"c", u64(2))
            wb.merge(b"c", u64(3))
            wb.merge(b"m", b"b", keyspace=ks)
            wb.merge(b"m", b"a", keyspace=ks)
        assert from_u64(d[b"c"]) == 5
        assert ks[b"m"] == b"b"


def test_standalone_batch_and_write(db):
    wb = strata.WriteBatch()
    assert len(wb) == 0
    wb.put(b"a", b"1")
    wb.put(b"b", b"2")
    wb.delete(b"c")
    wb.delete_range(b"x", b"y")
    assert len(wb) == 4
    assert b"a" not in db
    db.write(wb)
    assert list(db.items()) == [(b"a", b"1"), (b"b", b"2")]


def test_standalone_batch_with_keyspace(db):
    ks = db.keyspace("other")
    wb = strata.WriteBatch()
    wb.put(b"a", b"1", keyspace=ks)
    wb.put(b"a", b"0")
    db.write(wb)
    assert ks[b"a"] == b"1"
    assert db[b"a"] == b"0"


def test_batch_len_and_clear(db):
    wb = db.write_batch()
    assert len(wb) == 0
    for i in range(10):
        wb.put(key(i), b"v")
    assert len(wb) == 10
    wb.clear()
    assert len(wb) == 0
    wb.put(b"only", b"this")
    assert len(wb) == 1
    with wb:
        pass
    assert list(db.items()) == [(b"only", b"this")]


def test_cleared_batch_writes_nothing(db):
    wb = strata.WriteBatch()
    wb.put(b"a", b"1")
    wb.clear()
    db.write(wb)
    assert list(db.items()) == []


def test_empty_batch(db):
    with db.write_batch():
        pass
    db.write(strata.WriteBatch())
    assert list(db.items()) == []


def test_batch_written_once(db):
    wb = strata.WriteBatch()
    wb.put(b"a", b"1")
    db.write(wb)
    db[b"a"] = b"2"
    with pytest.raises(strata.Error):
        db.write(wb)
    assert db[b"a"] == b"2"


def test_batch_accepts_buffers(db):
    with db.write_batch() as wb:
        wb.put(bytearray(b"a"), memoryview(b"1"))
        wb.delete(memoryview(b"zz"))
    assert db[b"a"] == b"1"


def test_large_batch(small_db):
    model = {}
    fill(small_db, model, 5000, batch=5000)
    assert list(small_db.items()) == model_select(model)


def test_keyspace_of_another_database_refused(tmp_path):
    with strata.open(tmp_path / "a") as a, strata.open(tmp_path / "b") as b:
        ks_b = b.keyspace("ks")
        a.keyspace("ks")
        with pytest.raises(strata.Error):
            with a.write_batch() as wb:
                wb.put(b"k", b"v", keyspace=ks_b)
        assert list(a.keyspace("ks").items()) == []
        assert list(ks_b.items()) == []


# --------------------------------------------------------------------------
# Snapshots


def test_snapshot_isolation(db):
    db[b"a"] = b"1"
    db[b"b"] = b"2"
    db[b"c"] = b"3"
    snap = db.snapshot()
    assert isinstance(snap, strata.Snapshot)
    db[b"a"] = b"changed"
    db[b"d"] = b"new"
    del db[b"b"]
    db.delete_range(b"c", b"d")
    old = {b"a": b"1", b"b": b"2", b"c": b"3"}

    assert snap[b"a"] == b"1"
    assert snap.get(b"b") == b"2"
    assert snap.get(b"d") is None
    assert snap.get(b"d", b"dflt") == b"dflt"
    with pytest.raises(KeyError):
        snap[b"d"]
    assert b"b" in snap
    assert b"d" not in snap
    assert list(snap.items()) == model_select(old)
    assert list(snap.items(reverse=True)) == model_select(old, reverse=True)
    assert list(snap.keys()) == [b"a", b"b", b"c"]
    assert list(snap.values()) == [b"1", b"2", b"3"]
    assert list(snap.items(start=b"b")) == [(b"b", b"2"), (b"c", b"3")]
    assert list(snap.keys(end=b"b")) == [b"a"]
    assert list(snap.values(prefix=b"c")) == [b"3"]
    assert list(snap.keys(b"a", b"c", None, True)) == [b"b", b"a"]

    it = snap.iterator()
    it.seek_to_first()
    got = []
    while it.valid():
        got.append(it.item())
        it.next()
    assert got == model_select(old)
    it = snap.iterator(start=b"b", end=b"c")
    it.seek_to_last()
    assert it.item() == (b"b", b"2")

    # The database itself sees the new state.
    assert list(db.items()) == [(b"a", b"changed"), (b"d", b"new")]
    snap.release()


def test_snapshot_of_other_keyspace(db):
    ks = db.keyspace("other")
    ks[b"x"] = b"1"
    ks[b"y"] = b"2"
    db[b"x"] = b"default"
    snap = db.snapshot()
    ks[b"x"] = b"changed"
    ks[b"z"] = b"3"
    del ks[b"y"]
    db[b"x"] = b"default changed"

    assert snap.get(b"x", keyspace=ks) == b"1"
    assert snap.get(b"y", keyspace=ks) == b"2"
    assert snap.get(b"z", keyspace=ks) is None
    assert snap.get(b"z", b"d", keyspace=ks) == b"d"
    assert snap.get(b"x") == b"default"
    assert list(snap.items(keyspace=ks)) == [(b"x", b"1"), (b"y", b"2")]
    assert list(snap.items(reverse=True, keyspace=ks)) == [(b"y", b"2"), (b"x", b"1")]
    assert list(snap.keys(start=b"y", keyspace=ks)) == [b"y"]
    assert list(snap.values(keyspace=ks)) == [b"1", b"2"]
    assert list(snap.items(keyspace=db)) == [(b"x", b"default")]
    it = snap.iterator(keyspace=ks)
    it.seek(b"xa")
    assert it.item() == (b"y", b"2")
    it = snap.iterator(end=b"y", keyspace=ks)
    it.seek_to_last()
    assert it.item() == (b"x", b"1")
    snap.release()


def test_snapshot_spans_keyspaces_consistently(db):
    ks = db.keyspace("other")
    with db.write_batch() as wb:
        wb.put(b"k", b"1")
        wb.put(b"k", b"1", keyspace=ks)
    snap = db.snapshot()
    with db.write_batch() as wb:
        wb.put(b"k", b"2")
        wb.put(b"k", b"2", keyspace=ks)
    assert snap[b"k"] == b"1"
    assert snap.get(b"k", keyspace=ks) == b"1"
    snap.release()


def test_snapshot_survives_flush_and_compaction(small_db):
    db = small_db
    model = {}
    fill(db, model, 2000)
    old = dict(model)
    with db.snapshot() as snap:
        fill(db, model, 2000, gen=1)
        db.delete_range(key(500), key(1500))
        db.flush()
        db.compact_range()
        db.wait_for_compactions()
        assert list(snap.items()) == model_select(old)
        for i in range(0, 2000, 97):
            assert snap[key(i)] == old[key(i)]
    assert db.get(key(500)) is None


def test_snapshot_iterators_made_before_writes(db):
    db[b"a"] = b"1"
    snap = db.snapshot()
    it = snap.items()
    db[b"b"] = b"2"
    assert list(it) == [(b"a", b"1")]
    snap.release()


def test_snapshot_release_then_reads_raise(db):
    db[b"a"] = b"1"
    snap = db.snapshot()
    snap.release()
    _assert_released(snap)
    db[b"b"] = b"2"  # the database is fine
    assert db[b"a"] == b"1"


def test_snapshot_with_block_releases(db):
    db[b"a"] = b"1"
    with db.snapshot() as snap:
        assert snap[b"a"] == b"1"
    _assert_released(snap)


def test_snapshot_with_block_releases_on_exception(db):
    db[b"a"] = b"1"
    with pytest.raises(Boom):
        with db.snapshot() as snap:
            raise Boom()
    _assert_released(snap)


def _assert_released(snap):
    with pytest.raises(strata.ClosedError):
        snap[b"a"]
    with pytest.raises(strata.ClosedError):
        snap.get(b"a")
    with pytest.raises(strata.ClosedError):
        b"a" in snap  # noqa: B015
    with pytest.raises(strata.ClosedError):
        list(snap.items())
    with pytest.raises(strata.ClosedError):
        list(snap.keys())
    with pytest.raises(strata.ClosedError):
        list(snap.values())
    with pytest.raises(strata.ClosedError):
        it = snap.iterator()
        it.seek_to_first()


def test_many_snapshots(db):
    snaps = []
    for i in range(20):
        db[b"k"] = b"%d" % i
        snaps.append(db.snapshot())
    for i, s in enumerate(snaps):
        assert s[b"k"] == b"%d" % i
    for s in snaps:
        s.release()


def test_snapshot_sees_merge_state(db_path):
    # Snapshot reads of a merge key see the merged value as of the snapshot.
    with strata.open(db_path, options=dict(SMALL, merge_operator="strata.StringAppend.,")) as d:
        d.merge(b"m", b"a")
        with d.snapshot() as s:
            d.merge(b"m", b"b")
            d.flush()
            assert s[b"m"] == b"a"
        assert d[b"m"] == b"a,b"
