"""Helpers shared by the test modules (not a test module itself)."""

import struct

#: Options small enough that a few hundred KiB of writes flush and compact.
SMALL = {
    "write_buffer_size": 64 * 1024,
    "target_file_size_base": 64 * 1024,
    "max_bytes_for_level_base": 256 * 1024,
}

POLICIES = ["leveled", "blsm", "lsbm", "dlsm", "tiered", "garnering", "lwc"]


def u64(n):
    """``n`` as the 8-byte little-endian operand of ``strata.UInt64Add``."""
    return struct.pack("<Q", n)


def from_u64(b):
    return struct.unpack("<Q", b)[0]


def key(i):
    return b"key%08d" % i


def value(i, gen=0, size=100):
    """A value of about ``size`` bytes naming the key number and a generation."""
    head = b"v%d.%d:" % (i, gen)
    return head + bytes((i * 31 + gen * 7 + j) % 251 for j in range(max(0, size - len(head))))


def model_select(model, start=None, end=None, prefix=None, reverse=False):
    """The (key, value) pairs of the dict ``model`` that ``items(...)`` should return."""
    ks = sorted(
        k
        for k in model
        if (start is None or k >= start)
        and (end is None or k < end)
        and (prefix is None or k.startswith(prefix))
    )
    if reverse:
        ks.reverse()
    return [(k, model[k]) for k in ks]


def delete_range_model(model, start, end):
    for k in [k for k in model if start <= k < end]:
        del model[k]


def fill(db, model, n, *, start=0, gen=0, size=100, batch=500):
    """Writes keys ``start..start+n`` through write batches, mirroring them in ``model``."""
    i = start
    while i < start + n:
        with db.write_batch() as wb:
            for j in range(i, min(i + batch, start + n)):
                v = value(j, gen, size)
                wb.put(key(j), v)
                model[key(j)] = v
        i += batch


def fill_ks(db, ks, model, n, *, start=0, gen=0, size=100, batch=500):
    """Like ``fill`` but into keyspace ``ks`` of ``db``."""
    i = start
    while i < start + n:
        with db.write_batch() as wb:
            for j in range(i, min(i + batch, start + n)):
                v = value(j, gen, size)
                wb.put(key(j), v, keyspace=ks)
                model[key(j)] = v
        i += batch


def check_all(ks, model):
    """Every point read and a full forward and backward scan of ``ks`` agree with ``model``."""
    expected = model_select(model)
    assert list(ks.items()) == expected
    assert list(ks.items(reverse=True)) == expected[::-1]
    for k, v in model.items():
        assert ks.get(k) == v
