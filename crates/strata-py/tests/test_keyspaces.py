"""Keyspaces: create/list/drop, per-keyspace policy and options, isolation."""

import pytest

import strata
from _util import POLICIES, SMALL, check_all, delete_range_model, fill_ks, from_u64, key, u64, value


def test_policies_list():
    assert strata.POLICIES == POLICIES


def test_create_list_drop(db):
    assert db.list_keyspaces() == ["default"]
    a = db.create_keyspace("a")
    assert isinstance(a, strata.Keyspace)
    assert a.name == "a"
    b = db.create_keyspace("b", policy="tiered")
    assert b.name == "b"
    names = db.list_keyspaces()
    assert names[0] == "default"
    assert sorted(names[1:]) == ["a", "b"]
    db.drop_keyspace("a")
    assert db.list_keyspaces() == ["default", "b"]
    db.drop_keyspace("b")
    assert db.list_keyspaces() == ["default"]


def test_create_existing_refused(db):
    db.create_keyspace("a")
    with pytest.raises(strata.InvalidArgumentError):
        db.create_keyspace("a")
    with pytest.raises(strata.InvalidArgumentError):
        db.create_keyspace("default")


def test_drop_unknown(db):
    with pytest.raises(strata.KeyspaceNotFoundError):
        db.drop_keyspace("nope")


def test_drop_removes_data(db):
    ks = db.create_keyspace("a")
    ks[b"k"] = b"v"
    db.drop_keyspace("a")
    again = db.create_keyspace("a")
    assert list(again.items()) == []
    assert again.get(b"k") is None


def test_handle_of_dropped_keyspace(db):
    ks = db.keyspace("a")
    ks[b"k"] = b"v"
    it = ks.iterator()
    db.drop_keyspace("a")
    for use in [
        lambda: ks[b"k"],
        lambda: ks.get(b"k"),
        lambda: ks.put(b"x", b"1"),
        lambda: list(ks.items()),
        lambda: ks.flush(),
    ]:
        with pytest.raises(strata.KeyspaceNotFoundError):
            use()
    del it
    # A new keyspace of the same name is a different, empty one.
    again = db.keyspace("a")
    assert again.get(b"k") is None
    assert db.list_keyspaces() == ["default", "a"]


def test_unknown_policy_in_keyspace_refused(db):
    with pytest.raises(strata.InvalidArgumentError):
        db.create_keyspace("a", policy="bogus")
    with pytest.raises(strata.InvalidArgumentError):
        db.keyspace("b", policy="bogus")
    assert db.list_keyspaces() == ["default"]


def test_bad_keyspace_option_refused(db):
    with pytest.raises(strata.InvalidArgumentError):
        db.create_keyspace("a", options={"no_such_option_anywhere": 3})
    assert db.list_keyspaces() == ["default"]


def test_keyspace_creates_or_returns(db):
    ks = db.keyspace("k", policy="tiered")
    assert ks.name == "k"
    assert ks.property("strata.policy") == "tiered"
    ks[b"a"] = b"1"
    same = db.keyspace("k")
    assert same[b"a"] == b"1"
    assert same.property("strata.policy") == "tiered"
    same2 = db.keyspace("k", policy="tiered")
    assert same2[b"a"] == b"1"
    with pytest.raises(strata.InvalidArgumentError):
        db.keyspace("k", policy="leveled")
    assert db.list_keyspaces() == ["default", "k"]


def test_keyspace_default_policy_is_leveled(db):
    assert db.keyspace("k").property("strata.policy") == "leveled"
    assert db.create_keyspace("k2").property("strata.policy") == "leveled"


def test_keyspace_named_default_is_the_db(db):
    db[b"a"] = b"1"
    d = db.keyspace("default")
    assert d.name == "default"
    assert d[b"a"] == b"1"
    d[b"b"] = b"2"
    assert db[b"b"] == b"2"


def test_keyspace_methods(db):
    ks = db.keyspace("k")
    ks[b"a"] = b"1"
    ks.put(b"b", b"2", sync=True)
    ks.put(b"c", b"3")
    ks.put(b"d", b"4")
    assert ks[b"a"] == b"1"
    assert ks.get(b"b") == b"2"
    assert ks.get(b"nope") is None
    assert ks.get(b"nope", b"x") == b"x"
    with pytest.raises(KeyError):
        ks[b"nope"]
    assert b"c" in ks
    assert b"nope" not in ks
    del ks[b"c"]
    ks.delete(b"d", sync=True)
    assert list(ks) == [b"a", b"b"]
    assert list(ks.items()) == [(b"a", b"1"), (b"b", b"2")]
    assert list(ks.keys(reverse=True)) == [b"b", b"a"]
    assert list(ks.values(start=b"b")) == [b"2"]
    assert list(ks.items(prefix=b"a")) == [(b"a", b"1")]
    ks.delete_range(b"a", b"b", sync=True)
    assert list(ks) == [b"b"]
    it = ks.iterator()
    it.seek_to_first()
    assert it.item() == (b"b", b"2")
    it = ks.iterator(start=b"c")
    it.seek_to_first()
    assert not it.valid()
    ks.flush()
    ks.compact_range()
    ks.compact_range(b"a", b"z")
    ks.wait_for_compactions()
    assert ks[b"b"] == b"2"
    assert ks.property("strata.policy") == "leveled"
    assert ks.property("strata.nope") is None
    assert "strata.policy" in ks.property_names()
    stats = ks.stats()
    assert isinstance(stats, dict)
    assert all(type(v) in (int, float) for v in stats.values())
    with pytest.raises(strata.InvalidArgumentError):
        ks.merge(b"m", b"x")
    with pytest.raises(TypeError):
        ks["str"] = b"x"
    with pytest.raises(TypeError):
        ks[b"x"] = "str"


def test_keyspace_flush_is_per_keyspace(db):
    ks = db.keyspace("k")
    for i in range(10):
        ks[key(i)] = b"v"
        db[key(i)] = b"v"
    ks.flush()
    assert int(ks.property("strata.num-entries")) == 10
    db.flush()
    assert int(db.property("strata.num-entries")) == 10


def test_keyspace_merge_operator(db):
    add = db.create_keyspace("add", options={"merge_operator": "strata.UInt64Add"})
    mx = db.create_keyspace("max", policy="tiered", options={"merge_operator": "strata.Max"})
    app = db.create_keyspace("app", options={"merge_operator": "strata.StringAppend.,"})
    for i in range(1, 4):
        add.merge(b"k", u64(i))
        mx.merge(b"k", b"%d" % (i % 3))
        app.merge(b"k", b"%d" % i, sync=True)
    assert from_u64(add[b"k"]) == 6
    assert mx[b"k"] == b"2"
    assert app[b"k"] == b"1,2,3"
    with pytest.raises(strata.InvalidArgumentError):
        db.merge(b"k", b"x")


def test_keyspaces_kept_apart(db):
    a = db.keyspace("a")
    b = db.keyspace("b", policy="tiered")
    for ks, tag in ((db, b"d"), (a, b"a"), (b, b"b")):
        for i in range(20):
            ks[key(i)] = tag + b"%d" % i
    del a[key(0)]
    b.delete_range(key(10), key(20))
    db.delete_range(key(0), key(5))
    assert list(a.keys()) == [key(i) for i in range(1, 20)]
    assert list(b.keys()) == [key(i) for i in range(10)]
    assert list(db.keys()) == [key(i) for i in range(5, 20)]
    assert a[key(5)] == b"a5"
    assert b[key(5)] == b"b5"
    assert db[key(5)] == b"d5"
    a.flush()
    b.compact_range()
    assert db[key(7)] == b"d7" and a[key(7)] == b"a7" and b[key(7)] == b"b7"


def test_two_handles_share_a_keyspace(db):
    h1 = db.keyspace("k")
    h2 = db.keyspace("k")
    h1[b"a"] = b"1"
    assert h2[b"a"] == b"1"


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_flushes_compacts_and_reads_back(tmp_path, policy):
    with strata.open(tmp_path / "db", policy=policy, options=SMALL) as db:
        assert db.property("strata.policy") == policy
        ks = db.create_keyspace("ks", policy=policy, options=SMALL)
        assert ks.property("strata.policy") == policy
        model_d, model_k = {}, {}
        for gen in range(3):
            fill_ks(db, None, model_d, 2500, gen=gen, size=150)
            fill_ks(db, ks, model_k, 2500, gen=gen, size=150)
        for i in range(0, 2500, 5):
            db.delete(key(i))
            del model_d[key(i)]
            ks.delete(key(i + 1))
            del model_k[key(i + 1)]
        db.delete_range(key(100), key(300))
        delete_range_model(model_d, key(100), key(300))
        ks.delete_range(key(2000), key(2200))
        delete_range_model(model_k, key(2000), key(2200))
        db.flush()
        ks.flush()
        db.wait_for_compactions()
        ks.wait_for_compactions()
        check_all(db, model_d)
        check_all(ks, model_k)
        # 3 x 2500 x ~170 bytes: the memtable flushed many times.
        assert int(db.property("strata.num-entries")) > 0
        assert int(ks.property("strata.num-entries")) > 0
        db.compact_range()
        ks.compact_range()
        db.wait_for_compactions()
        ks.wait_for_compactions()
        check_all(db, model_d)
        check_all(ks, model_k)
        # The test did what it says: the memtables flushed and tables compacted.
        stats = db.stats()
        assert stats["flushes"] >= 2
        assert stats["compactions"] >= 1
    with strata.open(tmp_path / "db", options=SMALL) as db:
        assert db.property("strata.policy") == policy
        ks = db.keyspace("ks")
        assert ks.property("strata.policy") == policy
        check_all(db, model_d)
        check_all(ks, model_k)


def test_reopen_keeps_keyspaces_data_and_policy(db_path):
    with strata.open(db_path) as db:
        t = db.create_keyspace("t", policy="tiered", options={"merge_operator": "strata.Max"})
        g = db.keyspace("g", policy="garnering")
        db.keyspace("empty", policy="lwc")
        t[b"a"] = b"1"
        t.merge(b"m", b"5")
        g[b"b"] = b"2"
        g.flush()
        db[b"c"] = b"3"
    with strata.open(db_path) as db:
        names = db.list_keyspaces()
        assert names[0] == "default"
        assert sorted(names[1:]) == ["empty", "g", "t"]
        t = db.keyspace("t")
        g = db.keyspace("g")
        e = db.keyspace("empty")
        assert t.property("strata.policy") == "tiered"
        assert g.property("strata.policy") == "garnering"
        assert e.property("strata.policy") == "lwc"
        assert db.property("strata.policy") == "leveled"
        assert list(t.items()) == [(b"a", b"1"), (b"m", b"5")]
        t.merge(b"m", b"3")  # the recorded merge operator is restored
        assert t[b"m"] == b"5"
        assert list(g.items()) == [(b"b", b"2")]
        assert list(e.items()) == []
        assert list(db.items()) == [(b"c", b"3")]
        with pytest.raises(strata.InvalidArgumentError):
            db.keyspace("t", policy="leveled")
        db.drop_keyspace("g")
    with strata.open(db_path) as db:
        assert sorted(db.list_keyspaces()[1:]) == ["empty", "t"]


def test_reopen_keeps_default_policy(db_path):
    with strata.open(db_path, policy="tiered") as db:
        db[b"a"] = b"1"
    with strata.open(db_path) as db:
        assert db.property("strata.policy") == "tiered"
        assert db[b"a"] == b"1"
    # Naming a different policy changes it.
    with strata.open(db_path, policy="leveled") as db:
        assert db.property("strata.policy") == "leveled"
        assert db[b"a"] == b"1"
    with strata.open(db_path) as db:
        assert db.property("strata.policy") == "leveled"


def test_dlsm_keyspace_point_reads_and_scans(db):
    ks = db.keyspace("k", policy="dlsm")
    model = {}
    for i in range(300):
        ks[key(i)] = value(i)
        model[key(i)] = value(i)
    check_all(ks, model)
