"""Point reads and writes, argument types, merge, properties, maintenance calls."""

import array
import os

import pytest

import strata
from _util import SMALL, check_all, fill, from_u64, key, u64, value


# --------------------------------------------------------------------------
# Module surface


def test_module_surface():
    assert isinstance(strata.__version__, str) and strata.__version__
    assert strata.POLICIES == ["leveled", "blsm", "lsbm", "dlsm", "tiered", "garnering", "lwc"]
    assert "strata.UInt64Add" in strata.MERGE_OPERATORS
    assert "strata.Max" in strata.MERGE_OPERATORS
    assert any(m.startswith("strata.StringAppend.") for m in strata.MERGE_OPERATORS)


def test_db_attributes(db, db_path):
    assert isinstance(db, strata.Db)
    assert isinstance(db, strata.Keyspace)
    assert db.name == "default"
    assert db.path == str(db_path)
    assert db.closed is False
    db.close()
    assert db.closed is True


def test_open_accepts_str_and_pathlike(tmp_path):
    with strata.open(str(tmp_path / "a")) as a:
        a[b"k"] = b"v"
    with strata.open(tmp_path / "a") as a:
        assert a[b"k"] == b"v"


# --------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize(
    "k, v",
    [
        (b"k", b"v"),
        (b"", b"empty key"),
        (b"empty value", b""),
        (b"", b""),
        (b"\x00", b"\x00"),
        (b"a\x00b", b"\x00\x00x\x00"),
        (b"\xff\xfe\x00\x01", bytes(range(256))),
        (b"big", b"x" * (1 << 20)),
    ],
)
def test_round_trip(db, k, v):
    db[k] = v
    got = db[k]
    assert type(got) is bytes
    assert got == v
    assert db.get(k) == v
    assert k in db
    db.put(k, v + b"2")
    assert db[k] == v + b"2"


def test_keys_differing_only_by_nul(db):
    db[b"a"] = b"1"
    db[b"a\x00"] = b"2"
    db[b"a\x00\x00"] = b"3"
    db[b""] = b"0"
    assert db[b"a"] == b"1"
    assert db[b"a\x00"] == b"2"
    assert db[b"a\x00\x00"] == b"3"
    assert db[b""] == b"0"
    assert list(db.keys()) == [b"", b"a", b"a\x00", b"a\x00\x00"]


def test_round_trip_survives_flush(db):
    pairs = {b"": b"", b"\x00": b"nul", b"k": b"", b"z" * 300: b"\x00" * 5000}
    for k, v in pairs.items():
        db.put(k, v)
    db.flush()
    for k, v in pairs.items():
        assert db[k] == v


def test_overwrite(db):
    db[b"k"] = b"1"
    db[b"k"] = b"2"
    assert db[b"k"] == b"2"
    assert list(db.items()) == [(b"k", b"2")]


# --------------------------------------------------------------------------
# Misses


def test_missing_key(db):
    with pytest.raises(KeyError):
        db[b"nope"]
    assert db.get(b"nope") is None
    assert db.get(b"nope", b"dflt") == b"dflt"
    assert db.get(b"nope", default=b"dflt") == b"dflt"
    assert b"nope" not in db
    db[b"nope2"] = b"x"
    assert db.get(b"nope2", b"dflt") == b"x"


def test_missing_after_delete(db):
    db[b"k"] = b"v"
    del db[b"k"]
    with pytest.raises(KeyError):
        db[b"k"]
    assert db.get(b"k") is None
    assert b"k" not in db
    db[b"k"] = b"again"
    db.delete(b"k")
    assert db.get(b"k") is None


def test_delete_absent_key_is_fine(db):
    del db[b"never"]
    db.delete(b"never")
    db.delete(b"never", sync=True)
    assert list(db.items()) == []


# --------------------------------------------------------------------------
# Buffer types


def _buffers(raw):
    return [
        bytes(raw),
        bytearray(raw),
        memoryview(raw),
        memoryview(bytearray(raw)),
        array.array("B", raw),
    ]


@pytest.mark.parametrize("kind", range(5), ids=["bytes", "bytearray", "memoryview", "memoryview-rw", "array"])
def test_buffer_types_as_keys_and_values(db, kind):
    k = _buffers(b"key\x00x")[kind]
    v = _buffers(b"val\x00\xffue")[kind]
    db[k] = v
    assert db[b"key\x00x"] == b"val\x00\xffue"
    for other in _buffers(b"key\x00x"):
        assert db[other] == b"val\x00\xffue"
        assert db.get(other) == b"val\x00\xffue"
        assert other in db
    db.put(_buffers(b"k2")[kind], _buffers(b"v2")[kind], sync=True)
    assert db.get(b"k2") == b"v2"
    assert list(db.items(start=_buffers(b"k")[kind], end=_buffers(b"l")[kind])) == [
        (b"k2", b"v2"),
        (b"key\x00x", b"val\x00\xffue"),
    ]
    assert list(db.keys(prefix=_buffers(b"ke")[kind])) == [b"key\x00x"]
    del db[_buffers(b"k2")[kind]]
    assert b"k2" not in db
    db.delete(_buffers(b"key\x00x")[kind])
    assert list(db.items()) == []


def test_memoryview_slice_key(db):
    buf = b"xxhelloyy"
    db[memoryview(buf)[2:7]] = memoryview(buf)[0:2]
    assert db[b"hello"] == b"xx"


def test_non_contiguous_and_wide_buffers(db):
    strided = memoryview(b"abcdef")[::2]
    db[strided] = memoryview(b"0123456789")[1::3]
    assert db[b"ace"] == b"147"
    wide = array.array("H", [0x6261, 0x0063])
    db[wide] = array.array("I", [7])
    assert db[wide.tobytes()] == array.array("I", [7]).tobytes()
    assert wide in db


def test_buffer_mutated_after_put_does_not_change_stored_value(db):
    v = bytearray(b"before")
    db[b"k"] = v
    v[:] = b"AFTER!"
    assert db[b"k"] == b"before"


def test_delete_range_and_merge_accept_buffers(db_path):
    with strata.open(db_path, options={"merge_operator": "strata.StringAppend.,"}) as d:
        for k in (b"a", b"b", b"c"):
            d[k] = b"x"
        d.delete_range(bytearray(b"a"), memoryview(b"c"))
        assert list(d.keys()) == [b"c"]
        d.merge(array.array("B", b"c"), bytearray(b"y"))
        assert d[b"c"] == b"x,y"


BAD = ["str", 1, None, 1.5, ["l"], object()]


@pytest.mark.parametrize("bad", BAD, ids=lambda b: type(b).__name__)
def test_non_buffer_keys_refused(db, bad):
    with pytest.raises(TypeError):
        db[bad] = b"v"
    with pytest.raises(TypeError):
        db[bad]
    with pytest.raises(TypeError):
        db.get(bad)
    with pytest.raises(TypeError):
        bad in db  # noqa: B015
    with pytest.raises(TypeError):
        del db[bad]
    with pytest.raises(TypeError):
        db.put(bad, b"v")
    with pytest.raises(TypeError):
        db.delete(bad)
    with pytest.raises(TypeError):
        db.delete_range(bad, b"z")
    with pytest.raises(TypeError):
        db.delete_range(b"a", bad)
    with pytest.raises(TypeError):
        db.merge(bad, b"v")
    assert list(db.items()) == []


@pytest.mark.parametrize("bad", BAD, ids=lambda b: type(b).__name__)
def test_non_buffer_values_refused(db, bad):
    with pytest.raises(TypeError):
        db[b"k"] = bad
    with pytest.raises(TypeError):
        db.put(b"k", bad)
    assert b"k" not in db
    assert list(db.items()) == []


def test_str_refused_in_scan_bounds(db):
    db[b"a"] = b"1"
    with pytest.raises(TypeError):
        list(db.items(start="a"))
    with pytest.raises(TypeError):
        list(db.keys(end="b"))
    with pytest.raises(TypeError):
        list(db.values(prefix="a"))
    with pytest.raises(TypeError):
        db.iterator(start="a")
    it = db.iterator()
    with pytest.raises(TypeError):
        it.seek("a")
    with pytest.raises(TypeError):
        it.seek_for_prev("a")


def test_str_refused_in_batch(db):
    wb = strata.WriteBatch()
    with pytest.raises(TypeError):
        wb.put("k", b"v")
    with pytest.raises(TypeError):
        wb.put(b"k", "v")
    with pytest.raises(TypeError):
        wb.delete("k")
    with pytest.raises(TypeError):
        wb.delete_range("a", b"b")
    with pytest.raises(TypeError):
        wb.merge(b"k", "v")


# --------------------------------------------------------------------------
# put / delete / sync / delete_range


def test_sync_writes(db_path):
    with strata.open(db_path) as d:
        d.put(b"a", b"1", sync=True)
        d.put(b"b", b"2", sync=True)
        d.delete(b"a", sync=True)
        d.delete_range(b"x", b"y", sync=True)
    with strata.open(db_path) as d:
        assert list(d.items()) == [(b"b", b"2")]


def test_delete_range_bounds(db):
    keys = [b"", b"a", b"aa", b"ab", b"b", b"b\x00", b"ba", b"c", b"\xff"]
    for k in keys:
        db[k] = k + b"!"
    db.delete_range(b"aa", b"b\x00")  # [aa, b\x00): aa, ab, b
    assert list(db.keys()) == [b"", b"a", b"b\x00", b"ba", b"c", b"\xff"]
    db.delete_range(b"", b"a")  # just the empty key
    assert list(db.keys()) == [b"a", b"b\x00", b"ba", b"c", b"\xff"]
    db.delete_range(b"c", b"\xff\xff")
    assert list(db.keys()) == [b"a", b"b\x00", b"ba"]


def test_delete_range_empty_ranges_do_nothing(db):
    for k in (b"a", b"b", b"c"):
        db[k] = b"v"
    db.delete_range(b"b", b"b")
    db.delete_range(b"c", b"a")
    db.delete_range(b"bb", b"bc")
    assert list(db.keys()) == [b"a", b"b", b"c"]


def test_delete_range_over_flushed_data_and_rewrite(small_db):
    db = small_db
    model = {}
    fill(db, model, 3000)
    db.flush()
    db.delete_range(key(1000), key(2000))
    for i in range(1000, 2000):
        del model[key(i)]
    # A write after the range deletion is visible.
    db[key(1500)] = b"new"
    model[key(1500)] = b"new"
    check_all(db, model)
    db.flush()
    db.compact_range()
    db.wait_for_compactions()
    check_all(db, model)


# --------------------------------------------------------------------------
# Merge


def test_merge_uint64add(db_path):
    with strata.open(db_path, options={"merge_operator": "strata.UInt64Add"}) as d:
        d.merge(b"c", u64(1))
        assert from_u64(d[b"c"]) == 1
        d.merge(b"c", u64(41))
        assert d[b"c"] == u64(42)
        d.put(b"c", u64(100))
        d.merge(b"c", u64(5), sync=True)
        assert from_u64(d[b"c"]) == 105
        d.flush()
        d.merge(b"c", u64(1))
        assert from_u64(d[b"c"]) == 106
        assert list(d.items()) == [(b"c", u64(106))]
        d.delete(b"c")
        d.merge(b"c", u64(7))
        assert from_u64(d[b"c"]) == 7


def test_merge_max(db_path):
    with strata.open(db_path, options={"merge_operator": "strata.Max"}) as d:
        d.merge(b"m", b"b")
        d.merge(b"m", b"a")
        assert d[b"m"] == b"b"
        d.merge(b"m", b"c")
        assert d[b"m"] == b"c"
        d.put(b"n", b"zz")
        d.merge(b"n", b"z")
        d.merge(b"n", b"y")
        assert d[b"n"] == b"zz"


def test_merge_string_append(db_path):
    with strata.open(db_path, options={"merge_operator": "strata.StringAppend.,"}) as d:
        d.merge(b"s", b"a")
        assert d[b"s"] == b"a"
        d.merge(b"s", b"b")
        d.merge(b"s", b"c")
        assert d[b"s"] == b"a,b,c"
        d.put(b"t", b"x")
        d.merge(b"t", b"y")
        assert d[b"t"] == b"x,y"
        assert list(d.items()) == [(b"s", b"a,b,c"), (b"t", b"x,y")]


def test_merge_operands_across_flushes_and_compaction(db_path):
    with strata.open(db_path, options=dict(SMALL, merge_operator="strata.UInt64Add")) as d:
        for round_ in range(5):
            for i in range(200):
                d.merge(b"ctr%03d" % i, u64(i))
            d.flush()
        for i in range(200):
            assert from_u64(d[b"ctr%03d" % i]) == 5 * i
        d.compact_range()
        d.wait_for_compactions()
        for i in range(200):
            assert from_u64(d[b"ctr%03d" % i]) == 5 * i


def test_merge_operator_restored_on_reopen(db_path):
    with strata.open(db_path, options={"merge_operator": "strata.UInt64Add"}) as d:
        d.merge(b"c", u64(2))
    with strata.open(db_path) as d:
        assert from_u64(d[b"c"]) == 2
        d.merge(b"c", u64(3))
        assert from_u64(d[b"c"]) == 5


def test_merge_without_operator(db):
    with pytest.raises(strata.InvalidArgumentError):
        db.merge(b"k", b"v")
    assert b"k" not in db
    with pytest.raises(strata.InvalidArgumentError):
        with db.write_batch() as wb:
            wb.merge(b"k", b"v")
    assert b"k" not in db


def test_merge_in_batch(db_path):
    with strata.open(db_path, options={"merge_operator": "strata.StringAppend.,"}) as d:
        with d.write_batch() as wb:
            wb.merge(b"k", b"1")
            wb.merge(b"k", b"2")
        assert d[b"k"] == b"1,2"


# --------------------------------------------------------------------------
# Bad options


def test_unknown_option_refused(tmp_path):
    with pytest.raises(strata.InvalidArgumentError):
        strata.open(tmp_path / "db", options={"no_such_option_anywhere": 1})


def test_bad_option_value_refused(tmp_path):
    with pytest.raises(strata.InvalidArgumentError):
        strata.open(tmp_path / "db", options={"write_buffer_size": "lots"})


def test_unknown_merge_operator_refused(tmp_path):
    with pytest.raises(strata.InvalidArgumentError):
        strata.open(tmp_path / "db", options={"merge_operator": "strata.NoSuchOperator"})


def test_unknown_policy_refused(tmp_path):
    with pytest.raises(strata.InvalidArgumentError):
        strata.open(tmp_path / "db", policy="no-such-policy")


def test_open_missing_without_create(tmp_path):
    with pytest.raises(strata.NotADatabaseError):
        strata.open(tmp_path / "nothing", create_if_missing=False)


def test_open_read_only_missing_writes_nothing(tmp_path):
    with pytest.raises(strata.Error):
        strata.open(tmp_path / "nothing", read_only=True)
    assert not (tmp_path / "nothing").exists()


def test_open_a_file_is_an_error(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"not a database")
    with pytest.raises(strata.Error):
        strata.open(f)
    assert f.read_bytes() == b"not a database"


def test_documented_options_accepted(tmp_path):
    opts = {
        "write_buffer_size": 1 << 20,
        "block_cache_capacity": 1 << 20,
        "bloom_bits_per_key": 10,
        "compression": "none",
    }
    with strata.open(tmp_path / "db", options=opts) as d:
        d[b"k"] = b"v"
        d.flush()
        assert d[b"k"] == b"v"


# --------------------------------------------------------------------------
# Properties and stats


def test_policy_property(db):
    assert db.property("strata.policy") == "leveled"


def test_unknown_property_is_none(db):
    assert db.property("strata.no-such-property") is None
    assert db.property("nonsense") is None
    assert db.property("") is None


def test_property_names(db):
    names = db.property_names()
    assert isinstance(names, list)
    assert all(isinstance(n, str) for n in names)
    assert "strata.policy" in names
    assert "rocksdb.estimate-num-keys" in names
    db[b"k"] = b"v"
    for n in names:
        v = db.property(n)
        assert isinstance(v, str), n


def test_numeric_properties(db):
    for i in range(100):
        db[key(i)] = b"v"
    assert int(db.property("rocksdb.estimate-num-keys")) >= 1
    assert int(db.property("strata.num-entries")) == 0  # nothing in tables yet
    db.flush()
    assert int(db.property("strata.num-entries")) == 100
    assert int(db.property("rocksdb.total-sst-files-size")) > 0


def test_stats(db):
    s = db.stats()
    assert isinstance(s, dict)
    assert s
    for k, v in s.items():
        assert isinstance(k, str)
        assert type(v) in (int, float), (k, v)
    before = s["writes"]
    for i in range(10):
        db[key(i)] = b"v"
    after = db.stats()["writes"]
    assert after > before
    # A scan counts one positioning and the flushed table it reads.
    db.flush()
    s = db.stats()
    assert len(list(db.items())) == 10
    t = db.stats()
    assert t["iter_seeks"] == s["iter_seeks"] + 1
    assert t["iter_tables_opened"] == s["iter_tables_opened"] + 1


# --------------------------------------------------------------------------
# flush / compact_range / wait_for_compactions


def test_flush_moves_memtable_to_tables(db):
    for i in range(50):
        db[key(i)] = value(i)
    db.flush()
    assert int(db.property("strata.num-entries")) == 50
    for i in range(50):
        assert db[key(i)] == value(i)
    db.flush()  # flushing an empty memtable is fine


def test_compact_range_keeps_latest_values(small_db):
    db = small_db
    model = {}
    for gen in range(3):
        fill(db, model, 1500, gen=gen)
        db.flush()
    for i in range(0, 1500, 3):
        db.delete(key(i))
        del model[key(i)]
    db.flush()
    db.compact_range(key(100), key(900))
    check_all(db, model)
    db.compact_range()
    db.wait_for_compactions()
    check_all(db, model)


def test_compact_range_open_bounds(db):
    for i in range(20):
        db[key(i)] = b"v"
    db.flush()
    db.compact_range(start=key(5))
    db.compact_range(end=key(5))
    db.compact_range(None, None)
    db.wait_for_compactions()
    assert len(list(db.keys())) == 20


def test_wait_for_compactions_on_idle_db(db):
    db.wait_for_compactions()
    db.wait_for_compactions()


# --------------------------------------------------------------------------
# repair / destroy


def test_repair(db_path):
    model = {}
    with strata.open(db_path, options=SMALL) as d:
        fill(d, model, 2000)
        d.flush()
        d[b"tail"] = b"in the wal"
        model[b"tail"] = b"in the wal"
    report = strata.repair(db_path)
    assert isinstance(report, dict)
    for k, v in report.items():
        assert isinstance(k, str)
        assert isinstance(v, int)
    with strata.open(db_path) as d:
        check_all(d, model)


def test_repair_missing_directory(tmp_path):
    with pytest.raises(strata.Error):
        strata.repair(tmp_path / "nothing")


def test_destroy(db_path):
    d = strata.open(db_path)
    d[b"k"] = b"v"
    with pytest.raises(strata.LockedError):
        strata.destroy(db_path)
    assert d[b"k"] == b"v"  # still usable
    d.close()
    strata.destroy(db_path)
    with pytest.raises(strata.Error):
        strata.open(db_path, create_if_missing=False)
    with strata.open(db_path) as d:
        assert list(d.items()) == []


def test_idle_compaction_settles_an_idle_tree(db_path):
    # Idle compaction whenever the policy rests: flushed runs go to one level.
    db = strata.open(db_path, policy="dlsm", options={"idle_compaction_nanos": 0})
    for i in range(100):
        db.put(b"k%03d" % i, b"v")
    db.flush()
    db.wait_for_compactions()
    assert db.stats()["idle_compactions"] > 0
    assert db.get(b"k042") == b"v"
    db.close()
    # Recorded: a reopen that does not name it keeps it.
    db = strata.open(db_path)
    db.put(b"k100", b"v")
    db.flush()
    db.wait_for_compactions()
    assert db.stats()["idle_compactions"] > 0
    db.close()


@pytest.mark.parametrize(
    "policy, option, value, line",
    [
        # dLSM's last-level buffer: off by default.
        ("dlsm", "buffer_last_level", True, "buffer_last_level=true"),
        # The buffer policies' smallest super-file part: unset by default.
        ("lsbm", "buffer_min_part_size", 1 << 20, "buffer_min_part_size=1048576"),
    ],
)
def test_buffer_options_are_recorded(db_path, policy, option, value, line):
    # Kept in the OPTIONS file once set, and a plain reopen keeps the policy.
    db = strata.open(db_path, policy=policy, options={option: value})
    db.put(b"k", b"v")
    db.close()
    options = [p for p in os.listdir(db_path) if p.startswith("OPTIONS")]
    text = open(os.path.join(db_path, sorted(options)[-1])).read()
    assert line in text
    db = strata.open(db_path)
    assert db.property("strata.policy") == policy
    assert db.get(b"k") == b"v"
    db.close()


def test_a_zero_buffer_min_part_size_is_refused(db_path):
    with pytest.raises(strata.InvalidArgumentError):
        strata.open(db_path, options={"buffer_min_part_size": 0})
