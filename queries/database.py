"""One in-memory DuckDB database per store, the store versions it holds and its cursors.

Cursors: the database is shared by every Streamlit session; DuckDB connections are not safe to
share across threads, cursors of one database are, and making one costs about as much as a
small query, so each thread keeps its own (a Streamlit session is one thread).

Store versions: a version is what one manifest lists. Each gets its own DuckDB schema
(``store_vN``) holding every view a query reads (``queries/views.py``): the live views over the
Parquet files first, then the derived tables once built for it, which only add columns (the
stored ranks). A query pins one version (one look at the manifest), chooses its twin from that
version's state and runs on a cursor set to that version's schema. A write landing meanwhile
opens a new version beside it and never changes the pinned one under the query: before, the
views were refreshed in place, so a query could choose a ranked twin and then run on views a
newer manifest had just reset to the live queries (``Values list "t" does not have a column
named "set_high"``). A superseded version is dropped when its last query ends.

Label choices: a version read under another label choice than the released labels (a reviewer's
verdicts, ``queries/labels.py``) gets a second schema beside its own, ``store_vN__reviewed``,
made on first use and dropped with the version; a verdict written is a new manifest, so a new
version, so the chosen labels are never stale.

Plain names in schema ``main`` read the version that was current at the last
:meth:`Database.cursor` call (``queries.connect``), switched in one transaction: such cursors see
whole versions statement by statement. Only those cursors read ``main``, so a version is made
the plain names' one when a cursor is asked for, not at every open (the app and the CLI read
through pinned versions and never pay for it), and the version ``main`` reads is kept until
``main`` moves on, so a held plain cursor never reads a dropped schema.
"""
from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from auditatlas.duck import connect as duck_connect
from auditatlas.duck import cursor as duck_cursor
from auditatlas.errors import StoreError, first_line
from auditatlas.store import MANIFEST, health, manifest_bytes, read_manifest, store_dir

from . import labels as label_choices
from . import views

# What tells one manifest file from the next: a write replaces it (os.replace), so a new file.
Stamp = tuple[int, int, int]


@dataclass(eq=False)
class StoreVersion:
    """One manifest's views in DuckDB schema ``schema``, and their derived tables' state."""

    stamp: Stamp | None
    schema: str
    manifest: dict
    # None until first needed; then the derived folder the views read, or False when the build
    # failed (the views stay the live queries, and answers stay right, only slower).
    derived: Path | bool | None = None
    # Whether every prediction set's test steps are of one corpus (set before ``derived``).
    single_corpus_sets: bool = False
    # Queries running on it, and whether a newer version replaced it (guarded by Database._pins).
    readers: int = 0
    superseded: bool = False
    # The shared lease on the derived folder while the version binds it (queries/derived.py):
    # no sweep of any process removes a build a live version reads.
    lease: Any = None
    # Label choice -> the schema of this version under it (queries/labels.py), made on first use.
    label_schemas: dict = field(default_factory=dict)
    # The key of the schema holding its released rankings resolved (Database._resolved).
    resolved: str = ""


class Database:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.con = duck_connect()
        # The store's files never change in place (a write makes a new folder), so their
        # footers can be cached: a query over hundreds of parts then skips re-reading them.
        # GLOBAL: a plain SET is per connection, and every query runs on a cursor (its own
        # connection), which then re-read every footer (about 2x on a small query at 1M rooms).
        self.con.execute("SET GLOBAL parquet_metadata_cache = true")
        # Catalog changes (a version's views, its derived views, dropping it), one at a time.
        self._ddl = threading.Lock()
        self._ddl_cursor = duck_cursor(self.con)
        # The current version and every version's readers: held for a few instructions only.
        self._pins = threading.Lock()
        # Derived builds take seconds at scale: apart, so other queries do not wait for them.
        self._build = threading.Lock()
        self._current: StoreVersion | None = None
        # The version plain names in ``main`` read (guarded by _ddl): never dropped while they do.
        self._published: StoreVersion | None = None
        self._retired: list[StoreVersion] = []
        # Released rankings resolved (a window over every ranked run's steps, tens of ms with
        # CatchBench's judges) depend on the data sources only: a verdict or a tour saved (each a
        # new version) reuses them. Key (the data sources' manifest) -> [schema, versions using
        # it], guarded by _ddl; a schema goes with its last version.
        self._resolved: dict[str, list] = {}
        self._serial = itertools.count(1)
        self._local = threading.local()
        self._sweep()

    def _sweep(self) -> None:
        """Remove derived builds and scratch that no live process uses (a build killed
        mid-way, builds of versions nobody reads): on every start of a process's query layer,
        the app's and each CLI command's, so they never pile up between builds."""
        try:
            views.sweep_derived(self.root, read_manifest(self.root))
        except (StoreError, OSError):
            pass  # a store that cannot be read is reported by its first query

    # -- versions --------------------------------------------------------------------------

    def _stamp(self) -> Stamp | None:
        try:
            st = (self.root / MANIFEST).stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            read_manifest(self.root)  # the store's own sentence: a file, a folder it cannot read
            raise StoreError(f"{self.root / MANIFEST} cannot be read ({exc.strerror or exc}); "
                             "check the folder's permissions.") from exc
        return (st.st_mtime_ns, st.st_ino, st.st_size)

    def _pin_current(self, stamp: Stamp | None) -> StoreVersion | None:
        with self._pins:
            version = self._current
            if version is None or version.stamp != stamp:
                return None
            version.readers += 1
            return version

    def pin(self) -> StoreVersion:
        """The store's current version, kept until :meth:`unpin` (the manifest is looked at once)."""
        version = self._pin_current(self._stamp())
        if version is not None:
            return version
        with self._ddl:
            # Looked at again: another thread may have opened this very manifest meanwhile.
            stamp = self._stamp()
            version = self._pin_current(stamp)
            if version is None:
                version = self._open(stamp)
                with self._pins:
                    version.readers += 1
            return version

    def unpin(self, version: StoreVersion) -> None:
        with self._pins:
            version.readers -= 1
            unused = version.superseded and version.readers == 0
            if unused:
                self._retired.append(version)
        # Dropped now unless a catalog change is under way (the next version's open drops it).
        if unused and self._ddl.acquire(blocking=False):
            try:
                self._drop_retired()
            finally:
                self._ddl.release()

    @contextmanager
    def reading(self, derived: bool = False, labels: str = label_choices.DEFAULT_LABELS) -> Iterator[StoreVersion]:
        """The current version, pinned while the block runs; with ``derived``, its derived
        tables settled first (built, or failed to build); with a label choice other than the
        released labels, its schema under that choice made (:meth:`settle_labels`)."""
        version = self.pin()
        try:
            # A version replaced before its derived tables were built is not worth building:
            # nothing has been read from it yet, so the newest one is taken instead.
            while derived and not self._settle_derived(version):
                newer = self.pin()
                self.unpin(version)
                version = newer
            if labels != label_choices.DEFAULT_LABELS:
                self.settle_labels(version, labels)
            yield version
        finally:
            self.unpin(version)

    def settle_labels(self, version: StoreVersion, choice: str) -> None:
        """Make ``version``'s schema under label choice ``choice`` unless made (pinned by the caller)."""
        if choice in version.label_schemas:
            return
        with self._ddl:
            if choice in version.label_schemas:
                return
            schema = label_choices.schema_name(version.schema, choice)
            try:
                label_choices.build(self._ddl_cursor, version.schema, choice, views.NAMES)
            except BaseException:
                self._ddl_cursor.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                raise
            version.label_schemas[choice] = schema

    def _open(self, stamp: Stamp | None) -> StoreVersion:
        """A new version from the manifest as it is now, made current (caller holds _ddl)."""
        manifest = read_manifest(self.root)
        serial = next(self._serial)
        schema = f"store_v{serial}"
        key = hashlib.sha256(manifest_bytes(manifest)).hexdigest()
        shared = self._resolved.get(key)
        cur = self._ddl_cursor
        cur.execute(f"CREATE SCHEMA {schema}")
        try:
            cur.execute(f"USE {schema}")
            fresh = shared is None
            if fresh:
                shared = [f"resolved_v{serial}", 0]
                cur.execute(f"CREATE SCHEMA {shared[0]}")
            views.bind_live(cur, self.root, manifest, resolved=shared[0], resolve=fresh)
        except BaseException as exc:
            # The previous version stays current and whole.
            cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            if key not in self._resolved and shared is not None:
                cur.execute(f"DROP SCHEMA IF EXISTS {shared[0]} CASCADE")
            if isinstance(exc, (duckdb.Error, OSError)):
                raise StoreError(self._unreadable(exc)) from exc
            raise
        shared[1] += 1
        self._resolved[key] = shared
        version = StoreVersion(stamp, schema, manifest, resolved=key)
        with self._pins:
            old, self._current = self._current, version
            if old is not None:
                old.superseded = True
                if old.readers == 0:
                    self._retired.append(old)
        self._drop_retired()
        return version

    def raise_if_broken(self, exc: BaseException) -> None:
        """StoreError naming the broken source when a failed query is the store's doing (a part
        that fails only when scanned); otherwise returns and the caller re-raises ``exc``."""
        problems = health(self.root, deep=True)
        if problems:
            raise StoreError(" ".join(problems)) from exc

    def _unreadable(self, exc: BaseException) -> str:
        """One sentence for views that could not be made: the source health names, else DuckDB's."""
        problems = health(self.root, deep=True)
        if problems:
            return " ".join(problems)
        return f"the store at {self.root} cannot be read ({first_line(exc)}); re-ingest the affected source or rebuild the store."

    def _drop_retired(self) -> None:
        """Drop superseded versions no query reads (caller holds _ddl)."""
        with self._pins:
            gone, self._retired = self._retired, []
            if self._published in gone:  # plain names still read it: dropped once they move on
                gone.remove(self._published)
                self._retired.append(self._published)
        for version in gone:
            for schema in version.label_schemas.values():
                self._ddl_cursor.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            self._ddl_cursor.execute(f"DROP SCHEMA IF EXISTS {version.schema} CASCADE")
            shared = self._resolved.get(version.resolved)
            if shared is not None:
                shared[1] -= 1
                if shared[1] == 0:
                    del self._resolved[version.resolved]
                    self._ddl_cursor.execute(f"DROP SCHEMA IF EXISTS {shared[0]} CASCADE")
            if version.lease is not None:
                version.lease.release()
                version.lease = None

    def _settle_derived(self, version: StoreVersion) -> bool:
        """Build and bind ``version``'s derived tables (pinned by the caller) unless done; False,
        and nothing done, when a newer version replaced it before they were built."""
        if version.derived is not None:
            return True
        with self._build:
            if version.derived is not None:
                return True
            if version.superseded:
                return False
            folder, lease = views.load_derived(self.root, version.manifest)
            single = False
            if folder:
                with self._ddl:
                    self._ddl_cursor.execute(f"USE {version.schema}")
                    try:
                        views.bind_derived(self._ddl_cursor, folder)
                        single = views.single_corpus_sets(self._ddl_cursor)
                    except duckdb.Error:
                        # Unreadable after all (bind_derived rolled back): the live queries answer.
                        folder = False
                        lease.release()
                        lease = None
                    self._drop_retired()
            version.lease = lease
            # The twin choice reads derived first: single_corpus_sets is set before it.
            version.single_corpus_sets = single
            version.derived = folder
        return True

    @property
    def derived(self) -> Path | bool | None:
        """The current version's derived state (see StoreVersion.derived)."""
        version = self._current
        return None if version is None else version.derived

    # -- cursors ---------------------------------------------------------------------------

    def cursor_on(self, version: StoreVersion, labels: str = label_choices.DEFAULT_LABELS) -> duckdb.DuckDBPyConnection:
        """This thread's own cursor, kept between calls, set to ``version``'s schema under the
        label choice ``labels`` (made by :meth:`reading` with that choice)."""
        local = self._local
        cur = getattr(local, "cursor", None)
        if cur is None:
            cur = local.cursor = duck_cursor(self.con)
            local.schema = None
        schema = version.schema if labels == label_choices.DEFAULT_LABELS else version.label_schemas[labels]
        if local.schema != schema:
            cur.execute(f"USE {schema}")
            local.schema = schema
        return cur

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new cursor on the newest version's plain names (opened first if the manifest changed)."""
        with self.reading() as version:
            if self._published is not version:
                with self._ddl:
                    if self._published is not version:
                        views.publish(self._ddl_cursor, version.schema)
                        self._published = version
                        self._drop_retired()  # the version main read before, if retired meanwhile
            return duck_cursor(self.con)

    def thread_cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the current version, unpinned: what ``queries.run`` runs on,
        for measurements (bench/scale.py) that time a statement the way the app does."""
        with self.reading() as version:
            return self.cursor_on(version)


_DATABASES: dict[str, Database] = {}
_DATABASES_LOCK = threading.Lock()


def for_store(root: str | Path | None) -> Database:
    """The database of store ``root`` (store_dir() when None), one per folder in this process."""
    root = Path(store_dir(root)).resolve()
    key = str(root)
    with _DATABASES_LOCK:
        db = _DATABASES.get(key)
        if db is None:
            db = _DATABASES[key] = Database(root)
    return db
