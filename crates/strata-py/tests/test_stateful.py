"""A hypothesis state machine: the database against a dict model."""

import os
import shutil
import tempfile

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import strata
from _util import delete_range_model, model_select

ALPHABET = b"\x00ab\xff"

keys = st.lists(st.sampled_from(list(ALPHABET)), max_size=3).map(bytes)
values = st.binary(max_size=8)
bounds = st.none() | keys


def _kwargs(start, end, prefix, reverse):
    kw = {"reverse": reverse}
    if start is not None:
        kw["start"] = start
    if end is not None:
        kw["end"] = end
    if prefix is not None:
        kw["prefix"] = prefix
    return kw


ops = st.one_of(
    st.tuples(st.just("put"), keys, values),
    st.tuples(st.just("delete"), keys),
    st.tuples(st.just("delete_range"), keys, keys),
)


class StrataMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="strata-stateful-")
        self.path = os.path.join(self.dir, "db")
        self.db = strata.open(self.path)
        self.model = {}

    def teardown(self):
        try:
            if self.db is not None:
                self.db.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- writes ------------------------------------------------------------

    @rule(k=keys, v=values)
    def put(self, k, v):
        self.db.put(k, v)
        self.model[k] = v

    @rule(k=keys, v=values)
    def setitem(self, k, v):
        self.db[k] = v
        self.model[k] = v

    @rule(k=keys)
    def delete(self, k):
        self.db.delete(k)
        self.model.pop(k, None)

    @rule(start=keys, end=keys)
    def delete_range(self, start, end):
        self.db.delete_range(start, end)
        delete_range_model(self.model, start, end)

    @rule(batch=st.lists(ops, min_size=1, max_size=6))
    def write_batch(self, batch):
        with self.db.write_batch() as wb:
            for op in batch:
                getattr(wb, op[0])(*op[1:])
        for op in batch:
            if op[0] == "put":
                self.model[op[1]] = op[2]
            elif op[0] == "delete":
                self.model.pop(op[1], None)
            else:
                delete_range_model(self.model, op[1], op[2])

    @rule(batch=st.lists(ops, min_size=1, max_size=4))
    def dropped_batch(self, batch):
        class Abort(Exception):
            pass

        try:
            with self.db.write_batch() as wb:
                for op in batch:
                    getattr(wb, op[0])(*op[1:])
                raise Abort()
        except Abort:
            pass

    # -- reads -------------------------------------------------------------

    @rule(k=keys)
    def get(self, k):
        assert self.db.get(k) == self.model.get(k)
        if k in self.model:
            assert self.db[k] == self.model[k]
        else:
            try:
                self.db[k]
            except KeyError:
                pass
            else:
                raise AssertionError(f"{k!r} should be absent")

    @rule(k=keys)
    def contains(self, k):
        assert (k in self.db) == (k in self.model)

    @rule(start=bounds, end=bounds, prefix=bounds, reverse=st.booleans())
    def items(self, start, end, prefix, reverse):
        expected = model_select(self.model, start, end, prefix, reverse)
        kw = _kwargs(start, end, prefix, reverse)
        assert list(self.db.items(**kw)) == expected
        assert list(self.db.keys(**kw)) == [k for k, _ in expected]
        assert list(self.db.values(**kw)) == [v for _, v in expected]

    @rule(start=bounds, end=bounds, seek_key=keys, backward=st.booleans())
    def raw_iterator(self, start, end, seek_key, backward):
        inside = model_select(self.model, start, end)
        it = self.db.iterator(start=start, end=end)
        if backward:
            it.seek_for_prev(seek_key)
            exp = [kv for kv in inside if kv[0] <= seek_key][-1:]
        else:
            it.seek(seek_key)
            exp = [kv for kv in inside if kv[0] >= seek_key][:1]
        if exp:
            assert it.valid()
            assert it.item() == exp[0]
        else:
            assert not it.valid()

    # -- maintenance -------------------------------------------------------

    @rule()
    def flush(self):
        self.db.flush()

    @rule()
    def compact(self):
        self.db.compact_range()
        self.db.wait_for_compactions()

    @rule()
    def reopen(self):
        self.db.close()
        self.db = None
        self.db = strata.open(self.path)

    @rule(writes=st.lists(ops, min_size=1, max_size=5), flush=st.booleans())
    def snapshot_check(self, writes, flush):
        before = model_select(self.model)
        snap = self.db.snapshot()
        try:
            for op in writes:
                getattr(self.db, op[0])(*op[1:])
                if op[0] == "put":
                    self.model[op[1]] = op[2]
                elif op[0] == "delete":
                    self.model.pop(op[1], None)
                else:
                    delete_range_model(self.model, op[1], op[2])
            if flush:
                self.db.flush()
            assert list(snap.items()) == before
            for k, v in before[:3]:
                assert snap[k] == v
        finally:
            snap.release()

    @invariant()
    def closed_flag(self):
        if self.db is not None:
            assert not self.db.closed


# No example database: the suite leaves no .hypothesis directory behind.
StrataMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=40, deadline=None, database=None
)
TestStrata = StrataMachine.TestCase
