"""Strata: an embedded, durable, ordered key-value store (Python bindings).

Keys and values are bytes. Any object supporting the buffer protocol
(``bytes``, ``bytearray``, ``memoryview``, ``array.array`` ...) is accepted
where a key or value is expected; ``str`` is refused with ``TypeError``
(encode it first). Reads return ``bytes``.

Every call that touches the disk releases the GIL. Iterators, snapshots and
keyspace handles keep the database open while they are alive; after
``Db.close()`` every use of the database or of anything made from it raises
``ClosedError``.
"""

import os
from types import TracebackType
from typing import Iterator, Mapping, Optional, Tuple, Type, Union

from typing_extensions import Buffer

__version__: str
#: The built-in compaction policies, by name.
POLICIES: list[str]
#: The merge operators the engine ships, usable by name in ``options``:
#: ``"strata.UInt64Add"``, ``"strata.Max"`` and ``"strata.StringAppend.<sep>"``.
MERGE_OPERATORS: list[str]

Key = Buffer
Value = Buffer
Path = Union[str, "os.PathLike[str]"]
OptionValue = Union[int, float, bool, str]

class Error(Exception):
    """Base class of every error Strata raises."""

class IoError(Error):
    """An operating-system I/O error (disk full, permission ...)."""

class CorruptionError(Error):
    """Stored data failed a checksum or could not be decoded."""

class InvalidArgumentError(Error):
    """An option, argument or call is not valid (e.g. ``merge`` with no merge operator)."""

class LockedError(Error):
    """Another process (or handle) has the database open."""

class NotADatabaseError(Error):
    """The directory holds no database (and ``create_if_missing`` was false)."""

class ReadOnlyError(Error):
    """An earlier write or sync failed, so the database refuses writes (RocksDB's
    background error); reopen it to recover."""

class NotSupportedError(Error):
    """The operation is not supported by this handle: a write, flush, compaction or
    checkpoint through a database opened with ``read_only=True``."""

class KeyspaceNotFoundError(Error):
    """No keyspace of that name."""

class ClosedError(Error):
    """The database was closed."""

class BusyError(Error):
    """A conflicting operation is in progress."""

class TryAgainError(Error):
    """A transient condition; retrying may succeed."""

class TimedOutError(Error):
    """A wait timed out."""

class DeadlockError(Error):
    """Waiting would have deadlocked."""

def open(
    path: Path,
    *,
    create_if_missing: bool = True,
    policy: Optional[str] = None,
    options: Optional[Mapping[str, OptionValue]] = None,
    read_only: bool = False,
) -> Db:
    """Opens (or creates) the database in ``path``.

    ``policy`` is the default keyspace's compaction policy (one of
    ``POLICIES``). ``None`` means ``"leveled"`` for a new database and the
    recorded policy for an existing one; naming a different policy for an
    existing database changes it. ``options`` maps option names (the names
    the database's OPTIONS file uses, e.g. ``write_buffer_size``,
    ``block_cache_capacity``, ``bloom_bits_per_key``, ``compression``,
    ``merge_operator``) to values; an unknown name or a bad value raises
    ``InvalidArgumentError``. A recorded merge operator the engine ships is
    restored by name on reopen. ``read_only`` opens without taking the lock or
    writing anything; every write then raises ``NotSupportedError``.
    """

def repair(path: Path) -> dict[str, int]:
    """Rebuilds the MANIFEST of a damaged database from its files; returns counts of what it found."""

def destroy(path: Path) -> None:
    """Deletes the database in ``path`` (refused with ``LockedError`` while it is open)."""

class Keyspace:
    """A keyspace: an independent ordered key space of one database, with its own policy.

    ``Db`` is a ``Keyspace`` too: the database's default keyspace.
    """

    @property
    def name(self) -> str: ...
    def __getitem__(self, key: Key) -> bytes:
        """The value of ``key``; ``KeyError`` if absent."""
    def __setitem__(self, key: Key, value: Value) -> None: ...
    def __delitem__(self, key: Key) -> None:
        """Deletes ``key`` (writes a tombstone; no ``KeyError`` if absent, as in rocksdict)."""
    def __contains__(self, key: Key) -> bool: ...
    def __iter__(self) -> Iterator[bytes]:
        """The keys, in order."""
    def get(self, key: Key, default: Optional[bytes] = None) -> Optional[bytes]: ...
    def put(self, key: Key, value: Value, *, sync: bool = False) -> None:
        """Writes ``key``; with ``sync=True`` the WAL is synced before returning."""
    def delete(self, key: Key, *, sync: bool = False) -> None: ...
    def delete_range(self, start: Key, end: Key, *, sync: bool = False) -> None:
        """Deletes every key in ``[start, end)``."""
    def merge(self, key: Key, operand: Value, *, sync: bool = False) -> None:
        """Merges ``operand`` into ``key`` with the keyspace's merge operator
        (``InvalidArgumentError`` if it has none)."""
    def items(
        self,
        start: Optional[Key] = None,
        end: Optional[Key] = None,
        prefix: Optional[Key] = None,
        reverse: bool = False,
    ) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs with ``start <= key < end`` and starting with ``prefix``
        (each bound optional), in key order or, with ``reverse``, descending.
        The iterator reads one consistent view, taken when it is created."""
    def keys(
        self,
        start: Optional[Key] = None,
        end: Optional[Key] = None,
        prefix: Optional[Key] = None,
        reverse: bool = False,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[Key] = None,
        end: Optional[Key] = None,
        prefix: Optional[Key] = None,
        reverse: bool = False,
    ) -> Iterator[bytes]: ...
    def iterator(self, start: Optional[Key] = None, end: Optional[Key] = None) -> RawIterator:
        """A raw iterator over ``[start, end)`` (unpositioned: call a ``seek*`` first)."""
    def flush(self) -> None:
        """Writes the memtable to a table file."""
    def compact_range(self, start: Optional[Key] = None, end: Optional[Key] = None) -> None:
        """Compacts the keys in ``[start, end]`` (everything by default)."""
    def wait_for_compactions(self) -> None:
        """Returns once no compaction is running or wanted."""
    def property(self, name: str) -> Optional[str]:
        """The value of a property (``strata.policy``, ``rocksdb.estimate-num-keys`` ...);
        ``None`` for an unknown name."""
    def property_names(self) -> list[str]: ...
    def stats(self) -> dict[str, Union[int, float]]:
        """The engine's counters (bytes written, flushes, compactions, gets, cache hits ...)."""

class Db(Keyspace):
    """An open database. Use it as a context manager or call ``close()``."""

    @property
    def path(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Stops background work, syncs the WAL and releases the lock. Idempotent."""
    def __enter__(self) -> Db: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    def write_batch(self, *, sync: bool = False) -> WriteBatch:
        """A batch committed atomically when its ``with`` block exits cleanly, dropped on an exception."""
    def write(self, batch: WriteBatch, *, sync: bool = False) -> None:
        """Commits ``batch`` atomically (across keyspaces). A batch may be written once."""
    def snapshot(self) -> Snapshot:
        """A consistent read view of every keyspace."""
    def keyspace(self, name: str, *, policy: Optional[str] = None) -> Keyspace:
        """The keyspace ``name``, created (with ``policy``, default ``"leveled"``) if it does not exist.
        Naming a policy that differs from an existing keyspace's raises ``InvalidArgumentError``."""
    def create_keyspace(
        self, name: str, *, policy: Optional[str] = None, options: Optional[Mapping[str, OptionValue]] = None
    ) -> Keyspace:
        """Creates keyspace ``name`` (``InvalidArgumentError`` if it exists)."""
    def drop_keyspace(self, name: str) -> None: ...
    def list_keyspaces(self) -> list[str]:
        """Every keyspace's name, ``"default"`` first."""
    def checkpoint(self, dest: Path) -> None:
        """Writes an openable copy of the database to ``dest`` (which must not exist); hard links where it can."""

class WriteBatch:
    """Writes applied together or not at all, in any keyspaces of one database."""

    def __init__(self) -> None: ...
    def put(self, key: Key, value: Value, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def delete(self, key: Key, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def delete_range(self, start: Key, end: Key, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def merge(self, key: Key, operand: Value, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def clear(self) -> None: ...
    def __len__(self) -> int:
        """The number of operations in the batch."""
    def __enter__(self) -> WriteBatch: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Commits the batch to the database it came from (``Db.write_batch``) if the block
        raised nothing; otherwise drops it."""

class Snapshot:
    """A read view of the whole database as of its creation. Release it with ``release()``
    or by leaving its ``with`` block; after that its reads raise ``ClosedError`` (an
    iterator made from it before keeps reading its own view, as in RocksDB)."""

    def __enter__(self) -> Snapshot: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    def release(self) -> None: ...
    def __getitem__(self, key: Key) -> bytes: ...
    def __contains__(self, key: Key) -> bool: ...
    def get(self, key: Key, default: Optional[bytes] = None, *, keyspace: Optional[Keyspace] = None) -> Optional[bytes]: ...
    def items(
        self,
        start: Optional[Key] = None,
        end: Optional[Key] = None,
        prefix: Optional[Key] = None,
        reverse: bool = False,
        *,
        keyspace: Optional[Keyspace] = None,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
    def keys(
        self,
        start: Optional[Key] = None,
        end: Optional[Key] = None,
        prefix: Optional[Key] = None,
        reverse: bool = False,
        *,
        keyspace: Optional[Keyspace] = None,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[Key] = None,
        end: Optional[Key] = None,
        prefix: Optional[Key] = None,
        reverse: bool = False,
        *,
        keyspace: Optional[Keyspace] = None,
    ) -> Iterator[bytes]: ...
    def iterator(
        self, start: Optional[Key] = None, end: Optional[Key] = None, *, keyspace: Optional[Keyspace] = None
    ) -> RawIterator: ...

class RawIterator:
    """A cursor (RocksDB's raw iterator). Not positioned until a ``seek*`` call."""

    def valid(self) -> bool: ...
    def key(self) -> bytes:
        """The current key (``InvalidArgumentError`` unless ``valid()``)."""
    def value(self) -> bytes: ...
    def item(self) -> Tuple[bytes, bytes]: ...
    def seek_to_first(self) -> None: ...
    def seek_to_last(self) -> None: ...
    def seek(self, key: Key) -> None:
        """Positions at the first key ``>= key``."""
    def seek_for_prev(self, key: Key) -> None:
        """Positions at the last key ``<= key``."""
    def next(self) -> None:
        """Moves to the next key (``InvalidArgumentError`` unless ``valid()``)."""
    def prev(self) -> None: ...
