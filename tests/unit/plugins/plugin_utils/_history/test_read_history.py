# -*- coding: utf-8 -*-
"""``store.read_history``, the filters' way in: a history no writer is at is read as an immutable file copied into
memory (nothing created beside it); one a writer is at, or that a writer touches while it is copied, is read beside
the writer in SQLite's read-only mode. Either way a write raises and the file's rows are read."""
from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._history import store

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "history")
RUNS = ("20261130T180103-demo", "20261130T185009-demo")


@pytest.fixture
def db(tmp_path):
    runs = tmp_path / "runs"
    for name in RUNS:
        shutil.copytree(os.path.join(FIXTURES, name), str(runs / name))
    path = str(runs / "history.sqlite")
    store.rebuild(path, str(runs), notify=lambda m: None)
    return path


def _file_of(conn):
    return conn.execute("PRAGMA database_list").fetchone()[2]


def test_a_history_at_rest_is_read_from_a_copy_in_memory(db):
    names = sorted(os.listdir(os.path.dirname(db)))
    with store.read_history(db, notify=pytest.fail) as conn:
        assert _file_of(conn) == ""  # in memory
        assert [r["id"] for r in conn.execute("SELECT id FROM runs ORDER BY id")] == list(RUNS)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM runs")
    assert sorted(os.listdir(os.path.dirname(db))) == names


def test_a_history_a_writer_is_at_is_read_beside_it(db):
    with store.open_history(db, notify=pytest.fail) as writer:
        writer.execute("DELETE FROM runs WHERE id = ?", (RUNS[0],))  # committed: the write-ahead log holds it
        assert os.path.exists(db + "-wal")
        with store.read_history(db, notify=pytest.fail) as conn:
            assert _file_of(conn) == db
            assert [r["id"] for r in conn.execute("SELECT id FROM runs")] == [RUNS[1]]
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                conn.execute("DELETE FROM runs")


def test_a_writer_coming_while_the_copy_is_made_is_read_beside(db, monkeypatch):
    states = iter([(1, 1, 1), (2, 2, 2)])  # the file before and after the copy: changed
    monkeypatch.setattr(store, "_at_rest", lambda path: next(states))
    with store.read_history(db, notify=pytest.fail) as conn:
        assert _file_of(conn) == db
        assert [r["id"] for r in conn.execute("SELECT id FROM runs ORDER BY id")] == list(RUNS)


def test_a_torn_copy_is_not_taken_for_corruption(db, monkeypatch):
    """A writer checkpointing while the file is copied may make the copy unreadable: read again beside it, no
    "is corrupt" warning."""
    states = iter([(1, 1, 1), (2, 2, 2)])
    monkeypatch.setattr(store, "_at_rest", lambda path: next(states))
    real = store._why_not

    calls = []

    def torn(conn):  # the first read (the immutable copy's) finds the pages half written
        calls.append(conn)
        if len(calls) == 1:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return real(conn)

    monkeypatch.setattr(store, "_why_not", torn)
    with store.read_history(db, notify=pytest.fail) as conn:
        assert _file_of(conn) == db
        assert len(conn.execute("SELECT id FROM runs").fetchall()) == 2
