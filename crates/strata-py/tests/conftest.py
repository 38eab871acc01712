"""Shared fixtures for the strata binding tests."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import strata  # noqa: E402

from _util import SMALL  # noqa: E402


@pytest.fixture
def db_path(tmp_path):
    """A path for a new database (the directory does not exist yet)."""
    return tmp_path / "db"


@pytest.fixture
def db(db_path):
    """A fresh database with default options, closed at teardown."""
    d = strata.open(db_path)
    try:
        yield d
    finally:
        d.close()


@pytest.fixture
def small_db(db_path):
    """A fresh database with tiny buffers and files, so that a few hundred KiB
    of writes flush and compact."""
    d = strata.open(db_path, options=SMALL)
    try:
        yield d
    finally:
        d.close()
