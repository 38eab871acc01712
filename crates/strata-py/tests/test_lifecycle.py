"""Open/close/reopen, checkpoints, closed-database errors, threads, locking, read-only."""

import gc
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

import strata
from _util import SMALL, check_all, fill, fill_ks, key, value

ERRORS = [
    "IoError",
    "CorruptionError",
    "InvalidArgumentError",
    "LockedError",
    "NotADatabaseError",
    "ReadOnlyError",
    "NotSupportedError",
    "KeyspaceNotFoundError",
    "ClosedError",
    "BusyError",
    "TryAgainError",
    "TimedOutError",
    "DeadlockError",
]


def test_exception_hierarchy():
    assert issubclass(strata.Error, Exception)
    classes = [getattr(strata, n) for n in ERRORS]
    for c in classes:
        assert isinstance(c, type)
        assert issubclass(c, strata.Error), c
        assert c is not strata.Error
    assert len(set(classes)) == len(classes)


def test_reopen_keeps_data(db_path):
    model = {}
    with strata.open(db_path) as db:
        fill(db, model, 500)
        db[b""] = b"empty key"
        model[b""] = b"empty key"
        db.delete(key(3))
        del model[key(3)]
    assert db.closed
    with strata.open(db_path) as db:
        check_all(db, model)
        db[b"more"] = b"x"
        model[b"more"] = b"x"
    with strata.open(db_path, create_if_missing=False) as db:
        check_all(db, model)


def test_reopen_keeps_flushed_and_unflushed_data(db_path):
    model = {}
    with strata.open(db_path, options=SMALL) as db:
        fill(db, model, 3000)
        db.flush()
        fill(db, model, 100, start=5000)  # only in the WAL
    with strata.open(db_path, options=SMALL) as db:
        check_all(db, model)


def test_context_manager_returns_db(db_path):
    db = strata.open(db_path)
    with db as d:
        assert d is db
        assert not db.closed
    assert db.closed


def test_context_manager_closes_on_exception(db_path):
    with pytest.raises(ZeroDivisionError):
        with strata.open(db_path) as db:
            db[b"a"] = b"1"
            1 / 0
    assert db.closed
    with strata.open(db_path) as db:
        assert db[b"a"] == b"1"


def test_close_twice(db_path):
    db = strata.open(db_path)
    db.close()
    db.close()
    assert db.closed


# --------------------------------------------------------------------------
# Checkpoints


def test_checkpoint(tmp_path):
    src = tmp_path / "src"
    cp = tmp_path / "cp"
    model, model_ks = {}, {}
    with strata.open(src, options=SMALL) as db:
        ks = db.create_keyspace("ks", policy="tiered")
        fill(db, model, 3000)
        fill_ks(db, ks, model_ks, 500)
        db.flush()
        fill(db, model, 100, start=10000)  # memtable only
        ks[b"x"] = b"y"
        model_ks[b"x"] = b"y"
        db.checkpoint(cp)
        # Later writes are not in the checkpoint.
        db[b"after"] = b"1"
        ks[b"after"] = b"1"
        with strata.open(cp) as c:
            check_all(c, model)
            assert c.get(b"after") is None
            assert "ks" in c.list_keyspaces()
            cks = c.keyspace("ks")
            assert cks.property("strata.policy") == "tiered"
            check_all(cks, model_ks)
            # The checkpoint is an independent database.
            c[b"only-in-cp"] = b"1"
        assert db.get(b"only-in-cp") is None
    with strata.open(cp) as c:
        assert c[b"only-in-cp"] == b"1"
        check_all(c.keyspace("ks"), model_ks)


def test_checkpoint_destination_must_not_exist(db, tmp_path):
    dest = tmp_path / "exists"
    dest.mkdir()
    db[b"a"] = b"1"
    with pytest.raises(strata.Error):
        db.checkpoint(dest)
    db.checkpoint(str(tmp_path / "fresh"))
    with strata.open(tmp_path / "fresh") as c:
        assert c[b"a"] == b"1"


# --------------------------------------------------------------------------
# Closed database


@pytest.fixture
def closed(db_path, tmp_path):
    db = strata.open(db_path, options={"merge_operator": "strata.Max"})
    ks = db.create_keyspace("ks", options={"merge_operator": "strata.Max"})
    for k in (b"a", b"b", b"c"):
        db[k] = b"1"
        ks[k] = b"1"
    o = SimpleNamespace(db=db, ks=ks, tmp=tmp_path)
    o.items = db.items()
    o.keys = db.keys()
    o.values = db.values(reverse=True)
    o.ks_items = ks.items()
    o.iter = iter(db)
    next(o.iter)
    o.raw = db.iterator()
    o.raw.seek_to_first()
    o.raw_unpositioned = db.iterator()
    o.ks_raw = ks.iterator()
    o.ks_raw.seek(b"b")
    o.snap = db.snapshot()
    o.snap_items = o.snap.items()
    o.snap_raw = o.snap.iterator()
    o.snap_raw.seek_to_first()
    o.batch = db.write_batch()
    o.batch.put(b"x", b"1")
    db.close()
    assert db.closed
    return o


def _with_batch(db):
    with db.write_batch() as wb:
        wb.put(b"z", b"1")


def _write(db):
    wb = strata.WriteBatch()
    wb.put(b"z", b"1")
    db.write(wb)


def _keyspace_methods(get):
    return {
        "getitem": lambda o: get(o)[b"a"],
        "setitem": lambda o: get(o).__setitem__(b"a", b"2"),
        "delitem": lambda o: get(o).__delitem__(b"a"),
        "contains": lambda o: b"a" in get(o),
        "iter": lambda o: list(iter(get(o))),
        "get": lambda o: get(o).get(b"a"),
        "get-default": lambda o: get(o).get(b"nope", b"d"),
        "put": lambda o: get(o).put(b"a", b"2"),
        "put-sync": lambda o: get(o).put(b"a", b"2", sync=True),
        "delete": lambda o: get(o).delete(b"a"),
        "delete_range": lambda o: get(o).delete_range(b"a", b"z"),
        "merge": lambda o: get(o).merge(b"a", b"9"),
        "items": lambda o: list(get(o).items()),
        "items-bounded": lambda o: list(get(o).items(start=b"a", end=b"b", reverse=True)),
        "keys": lambda o: list(get(o).keys()),
        "values": lambda o: list(get(o).values(prefix=b"a")),
        "iterator": lambda o: get(o).iterator().seek_to_first(),
        "flush": lambda o: get(o).flush(),
        "compact_range": lambda o: get(o).compact_range(),
        "wait_for_compactions": lambda o: get(o).wait_for_compactions(),
        "property": lambda o: get(o).property("strata.policy"),
        "property_names": lambda o: get(o).property_names(),
        "stats": lambda o: get(o).stats(),
    }


DB_CALLS = dict(
    _keyspace_methods(lambda o: o.db),
    **{
        "write_batch": lambda o: _with_batch(o.db),
        "write": lambda o: _write(o.db),
        "snapshot": lambda o: o.db.snapshot().get(b"a"),
        "keyspace": lambda o: o.db.keyspace("ks").get(b"a"),
        "keyspace-new": lambda o: o.db.keyspace("brand-new").get(b"a"),
        "create_keyspace": lambda o: o.db.create_keyspace("brand-new"),
        "drop_keyspace": lambda o: o.db.drop_keyspace("ks"),
        "list_keyspaces": lambda o: o.db.list_keyspaces(),
        "checkpoint": lambda o: o.db.checkpoint(o.tmp / "cp"),
    },
)

KS_CALLS = _keyspace_methods(lambda o: o.ks)

ITER_CALLS = {
    "items-next": lambda o: next(o.items),
    "keys-next": lambda o: next(o.keys),
    "values-list": lambda o: list(o.values),
    "ks-items-next": lambda o: next(o.ks_items),
    "iter-db-next": lambda o: next(o.iter),
    "snap-items-next": lambda o: next(o.snap_items),
}
for _name, _attr in [("raw", "raw"), ("raw-unpositioned", "raw_unpositioned"), ("ks-raw", "ks_raw"), ("snap-raw", "snap_raw")]:
    ITER_CALLS.update(
        {
            f"{_name}.valid": lambda o, a=_attr: getattr(o, a).valid(),
            f"{_name}.key": lambda o, a=_attr: getattr(o, a).key(),
            f"{_name}.value": lambda o, a=_attr: getattr(o, a).value(),
            f"{_name}.item": lambda o, a=_attr: getattr(o, a).item(),
            f"{_name}.seek_to_first": lambda o, a=_attr: getattr(o, a).seek_to_first(),
            f"{_name}.seek_to_last": lambda o, a=_attr: getattr(o, a).seek_to_last(),
            f"{_name}.seek": lambda o, a=_attr: getattr(o, a).seek(b"b"),
            f"{_name}.seek_for_prev": lambda o, a=_attr: getattr(o, a).seek_for_prev(b"b"),
            f"{_name}.next": lambda o, a=_attr: getattr(o, a).next(),
            f"{_name}.prev": lambda o, a=_attr: getattr(o, a).prev(),
        }
    )

SNAP_CALLS = {
    "getitem": lambda o: o.snap[b"a"],
    "get": lambda o: o.snap.get(b"a"),
    "get-keyspace": lambda o: o.snap.get(b"a", keyspace=o.ks),
    "contains": lambda o: b"a" in o.snap,
    "items": lambda o: list(o.snap.items()),
    "items-keyspace": lambda o: list(o.snap.items(keyspace=o.ks)),
    "keys": lambda o: list(o.snap.keys(reverse=True)),
    "values": lambda o: list(o.snap.values()),
    "iterator": lambda o: o.snap.iterator().seek_to_first(),
    "iterator-keyspace": lambda o: o.snap.iterator(keyspace=o.ks).seek_to_last(),
}


@pytest.mark.parametrize("name", list(DB_CALLS))
def test_closed_db_methods_raise(closed, name):
    with pytest.raises(strata.ClosedError):
        DB_CALLS[name](closed)


@pytest.mark.parametrize("name", list(KS_CALLS))
def test_closed_keyspace_handle_methods_raise(closed, name):
    with pytest.raises(strata.ClosedError):
        KS_CALLS[name](closed)


@pytest.mark.parametrize("name", list(ITER_CALLS))
def test_closed_iterator_methods_raise(closed, name):
    with pytest.raises(strata.ClosedError):
        ITER_CALLS[name](closed)


@pytest.mark.parametrize("name", list(SNAP_CALLS))
def test_closed_snapshot_methods_raise(closed, name):
    with pytest.raises(strata.ClosedError):
        SNAP_CALLS[name](closed)


def test_closed_batch_commit_raises(closed):
    with pytest.raises(strata.ClosedError):
        with closed.batch:
            closed.batch.put(b"y", b"2")


def test_closed_db_releases_lock_despite_live_objects(closed, db_path):
    # The iterators, snapshot and keyspace handle made before close() are
    # still alive: the lock is released all the same.
    with strata.open(db_path) as again:
        assert again[b"a"] == b"1"
        assert again.keyspace("ks")[b"b"] == b"1"
        assert again.get(b"x") is None  # the uncommitted batch
    with pytest.raises(strata.ClosedError):
        closed.db[b"a"]


def test_closed_every_call_then_reopen(closed, db_path):
    # Try everything, in one go, then the database is still sound.
    for calls in (DB_CALLS, KS_CALLS, ITER_CALLS, SNAP_CALLS):
        for name, call in calls.items():
            with pytest.raises(strata.ClosedError):
                call(closed)
    closed.db.close()
    with strata.open(db_path) as db:
        assert list(db.items()) == [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")]


def test_handles_keep_database_open_after_db_object_dropped(db_path):
    db = strata.open(db_path)
    ks = db.keyspace("ks")
    db[b"a"] = b"1"
    it = db.items()
    snap = db.snapshot()
    del db
    gc.collect()
    ks[b"k"] = b"v"
    assert ks[b"k"] == b"v"
    assert list(it) == [(b"a", b"1")]
    assert snap[b"a"] == b"1"
    with pytest.raises(strata.LockedError):
        strata.open(db_path)
    del ks, it, snap
    gc.collect()
    # Every reference is gone: the database was closed and unlocked.
    with strata.open(db_path) as db:
        assert db[b"a"] == b"1"
        assert db.keyspace("ks")[b"k"] == b"v"


# --------------------------------------------------------------------------
# Threads


def test_threads_write_read_and_iterate(db_path):
    writers, per = 8, 400
    errors = []
    start = threading.Barrier(writers + 1)
    done = threading.Event()
    scans = []

    with strata.open(db_path, options=SMALL) as db:

        def writer(t):
            try:
                start.wait()
                for i in range(per):
                    k = b"t%d-%05d" % (t, i)
                    v = value(i, t, 200)
                    if i % 10 == 9:
                        with db.write_batch() as wb:
                            wb.put(k, v)
                    else:
                        db.put(k, v)
                    assert db.get(k) == v
                    assert db[b"t%d-%05d" % (t, i // 2)] == value(i // 2, t, 200)
                    if i % 100 == 0:
                        assert len(list(db.keys(prefix=b"t%d-" % t))) == i + 1
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        def scanner():
            try:
                start.wait()
                while True:
                    finished = done.is_set()
                    seen = list(db.keys())
                    assert seen == sorted(seen)
                    # Each writer writes its keys in order, so a consistent
                    # view holds a prefix of each writer's keys.
                    for t in range(writers):
                        mine = [k for k in seen if k.startswith(b"t%d-" % t)]
                        assert mine == [b"t%d-%05d" % (t, i) for i in range(len(mine))]
                    scans.append(len(seen))
                    if finished:
                        break
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(writers)]
        scan = threading.Thread(target=scanner)
        for th in threads + [scan]:
            th.start()
        for th in threads:
            th.join()
        done.set()
        scan.join()
        assert not errors, errors
        assert scans and scans[-1] == writers * per
        db.wait_for_compactions()
        for t in range(writers):
            for i in range(per):
                assert db[b"t%d-%05d" % (t, i)] == value(i, t, 200)
        assert len(list(db.keys())) == writers * per


def test_threads_share_a_keyspace_and_snapshot(db):
    ks = db.keyspace("shared", policy="tiered")
    for i in range(100):
        ks[key(i)] = b"old"
    snap = db.snapshot()
    errors = []

    def work(t):
        try:
            for i in range(t, 100, 4):
                ks[key(i)] = b"new%d" % t
                assert snap.get(key(i), keyspace=ks) == b"old"
            assert all(v == b"old" for v in snap.values(keyspace=ks))
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for i in range(100):
        assert ks[key(i)] == b"new%d" % (i % 4)
    snap.release()


def test_close_while_other_threads_use_the_database(db_path):
    db = strata.open(db_path, options=SMALL)
    ks = db.keyspace("ks")
    for i in range(200):
        db[key(i)] = value(i)
    started = threading.Barrier(5)
    errors = []
    closed_seen = []

    def worker(t):
        try:
            started.wait()
            i = 0
            while True:
                try:
                    db[key(1000 * t + i)] = value(i)
                    ks.put(key(i), b"x")
                    assert db.get(key(i % 200)) is not None
                    for n, _ in enumerate(db.items(start=key(i % 200))):
                        if n >= 20:
                            break
                    i += 1
                except strata.ClosedError:
                    closed_seen.append(t)
                    return
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    started.wait()
    db.close()
    for th in threads:
        th.join(120)
        assert not th.is_alive()
    assert not errors, errors
    assert sorted(closed_seen) == [0, 1, 2, 3]
    with strata.open(db_path) as again:
        for i in range(200):
            assert again[key(i)] == value(i)


# --------------------------------------------------------------------------
# Locking


def _open_in_subprocess(path, cwd):
    return subprocess.run(
        [sys.executable, "-c", "import sys, strata; strata.open(sys.argv[1]).close()", str(path)],
        capture_output=True,
        text=True,
        cwd=str(cwd),
        timeout=120,
    )


def test_second_process_gets_locked_error(db_path, tmp_path):
    db = strata.open(db_path)
    db[b"a"] = b"1"
    try:
        r = _open_in_subprocess(db_path, tmp_path)
        assert r.returncode != 0, r
        assert "LockedError" in r.stderr, r.stderr
    finally:
        db.close()
    r = _open_in_subprocess(db_path, tmp_path)
    assert r.returncode == 0, r.stderr
    with strata.open(db_path) as db:
        assert db[b"a"] == b"1"


def test_second_open_in_same_process_gets_locked_error(db_path):
    db = strata.open(db_path)
    try:
        with pytest.raises(strata.LockedError):
            strata.open(db_path)
        db[b"a"] = b"1"  # the first handle is unaffected
        assert db[b"a"] == b"1"
    finally:
        db.close()
    with strata.open(db_path) as again:
        assert again[b"a"] == b"1"


# --------------------------------------------------------------------------
# Read-only


def test_read_only(db_path):
    model = {}
    with strata.open(db_path, options=SMALL) as db:
        ks = db.keyspace("ks", policy="tiered")
        ks[b"k"] = b"v"
        fill(db, model, 2000)
        db.flush()
        fill(db, model, 50, start=9000)  # WAL only
    with strata.open(db_path, read_only=True) as ro:
        check_all(ro, model)
        assert ro.keyspace("ks")[b"k"] == b"v"
        with ro.snapshot() as s:
            assert s[key(0)] == model[key(0)]
        it = ro.iterator()
        it.seek_to_last()
        assert it.key() == max(model)
        rks = ro.keyspace("ks")
        for write in [
            lambda: ro.put(b"x", b"1"),
            lambda: ro.__setitem__(b"x", b"1"),
            lambda: ro.delete(key(0)),
            lambda: ro.__delitem__(key(0)),
            lambda: ro.delete_range(key(0), key(10)),
            lambda: _with_batch(ro),
            lambda: _write(ro),
            lambda: rks.put(b"x", b"1"),
            lambda: rks.delete(b"k"),
        ]:
            with pytest.raises(strata.NotSupportedError):
                write()
        check_all(ro, model)
        assert ro.keyspace("ks")[b"k"] == b"v"
    # Nothing was written: the database opens read-write as before.
    with strata.open(db_path) as db:
        check_all(db, model)


def test_read_only_does_not_take_the_lock(db_path):
    with strata.open(db_path) as db:
        db[b"a"] = b"1"
        db.flush()
        with strata.open(db_path, read_only=True) as ro:
            assert ro[b"a"] == b"1"
            with pytest.raises(strata.NotSupportedError):
                ro[b"b"] = b"2"
        db[b"b"] = b"2"
        assert db[b"b"] == b"2"
