"""Put, get and scan from Python: Strata against plyvel (LevelDB) and
rocksdict (RocksDB), each given the same write buffer, block cache and
bloom filter, on a fresh directory per engine.

    pip install plyvel rocksdict   # the peers; whichever is missing is skipped
    python crates/strata-py/bench/bench.py [--n 300000] [--value-size 100] [--rounds 5]

Each round runs every engine in turn (A/B/C, A/B/C ...: a noisy machine
slows them alike); prints per engine the median over the rounds of each
operation's rate, and its ratio to Strata's. The scan reads the whole
database three times per round.
"""

import argparse
import os
import statistics
import random
import shutil
import tempfile
import time

WRITE_BUFFER = 4 << 20
CACHE = 8 << 20
BLOOM_BITS = 10
SCANS = 3


def open_strata(path):
    import strata

    return strata.open(
        path,
        options={
            "write_buffer_size": WRITE_BUFFER,
            "block_cache_capacity": CACHE,
            "bloom_bits_per_key": BLOOM_BITS,
        },
    )


def open_plyvel(path):
    import plyvel

    return plyvel.DB(
        path,
        create_if_missing=True,
        write_buffer_size=WRITE_BUFFER,
        lru_cache_size=CACHE,
        bloom_filter_bits=BLOOM_BITS,
    )


def open_rocksdict(path):
    import rocksdict

    opts = rocksdict.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_write_buffer_size(WRITE_BUFFER)
    table = rocksdict.BlockBasedOptions()
    table.set_block_cache(rocksdict.Cache(CACHE))
    table.set_bloom_filter(BLOOM_BITS, False)
    opts.set_block_based_table_factory(table)
    return rocksdict.Rdict(path, opts)


class Engine:
    def __init__(self, name, opener):
        self.name, self.opener = name, opener

    def run(self, n, value_size, seed):
        rng = random.Random(seed)
        keys = [b"key%012d" % i for i in range(n)]
        order = keys[:]
        rng.shuffle(order)
        value = os.urandom(value_size)
        path = tempfile.mkdtemp(prefix=f"pybench-{self.name}-")
        try:
            db = self.opener(os.path.join(path, "db"))
            out = {}
            t = time.perf_counter()
            if self.name == "plyvel":
                for k in order:
                    db.put(k, value)
            else:
                for k in order:
                    db[k] = value
            out["put"] = n / (time.perf_counter() - t)
            rng.shuffle(order)
            t = time.perf_counter()
            if self.name == "plyvel":
                for k in order:
                    assert db.get(k) is not None
            else:
                for k in order:
                    assert db[k] is not None
            out["get"] = n / (time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(SCANS):
                seen = 0
                if self.name == "plyvel":
                    for _k, _v in db.iterator():
                        seen += 1
                else:
                    for _k, _v in db.items():
                        seen += 1
                assert seen == n, (self.name, seen)
            out["scan"] = SCANS * n / (time.perf_counter() - t)
            db.close()
            return out
        finally:
            shutil.rmtree(path, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    engines = [Engine("strata", open_strata)]
    for name, opener, module in (("plyvel", open_plyvel, "plyvel"), ("rocksdict", open_rocksdict, "rocksdict")):
        try:
            __import__(module)
            engines.append(Engine(name, opener))
        except ImportError:
            print(f"{name}: not installed, skipped")
    runs = {e.name: [] for e in engines}
    for r in range(args.rounds):
        for e in engines:
            runs[e.name].append(e.run(args.n, args.value_size, args.seed + r))
    ops = ("put", "get", "scan")
    results = {name: {op: statistics.median(x[op] for x in rs) for op in ops} for name, rs in runs.items()}
    base = results["strata"]
    print(
        f"{args.n} keys of 15 bytes, values of {args.value_size} bytes, random order; "
        f"medians of {args.rounds} rounds"
    )
    for name, r in results.items():
        cells = "  ".join(f"{op} {r[op]:>9,.0f}/s ({r[op] / base[op]:.2f}x)" for op in ops)
        print(f"{name:<10} {cells}")


if __name__ == "__main__":
    main()
