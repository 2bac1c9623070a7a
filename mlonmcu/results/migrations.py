"""Schema versions of the results store and the steps between them (no Alembic: a few plain steps).

A store lives for years and is shared by machines that update mlonmcu at different times, so:
an empty database gets the newest schema at once; an older one gets the missing steps in one
transaction (all or nothing) with the new version recorded; a newer one is refused, because an
old mlonmcu writing rows it does not fully understand would corrupt the history others read.

To change the schema: add the column or index to :func:`mlonmcu.results.schema.build` guarded
by the new version, bump ``schema.LATEST``, and append the step that makes an existing database
look the same to ``MIGRATIONS``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, inspect, select, text

from mlonmcu.errors import ConfigError
from mlonmcu.results import schema

Migration = Callable[[Connection], None]


def _v1_first_schema(conn: Connection) -> None:
    schema.build(1).metadata.create_all(conn)


def _v2_profiles(conn: Connection) -> None:
    """Per-kernel profile tables of the runs that had the `profile` feature."""
    conn.execute(text(f"ALTER TABLE {schema.RUNS} ADD COLUMN profile TEXT"))


MIGRATIONS: tuple[Migration, ...] = (_v1_first_schema, _v2_profiles)  # MIGRATIONS[i] makes version i+1
SCHEMA_VERSION = len(MIGRATIONS)
if SCHEMA_VERSION != schema.LATEST:
    raise RuntimeError(f"schema.LATEST is {schema.LATEST} but there are {SCHEMA_VERSION} migration steps")


def current_version(conn: Connection, where: str) -> int | None:
    """The schema version recorded in the database; None for a database without mlonmcu tables."""
    names = set(inspect(conn).get_table_names())
    if schema.SCHEMA_TABLE not in names:
        foreign = names & {schema.SESSIONS, schema.RUNS}
        if foreign:
            raise ConfigError(
                f"{where} has a table '{sorted(foreign)[0]}' but is not an mlonmcu results store: "
                "give --db a new or empty database"
            )
        return None
    versions = conn.execute(select(schema.LATEST_TABLES.schema.c.version)).scalars().all()
    if len(versions) != 1:
        raise ConfigError(
            f"{where}: its {schema.SCHEMA_TABLE} table should hold one version, it holds {len(versions)}; "
            "the store was changed by hand: restore it from a backup or start a new one"
        )
    return int(versions[0])


def _set_version(conn: Connection, version: int) -> None:
    table = schema.LATEST_TABLES.schema
    conn.execute(table.delete())
    conn.execute(table.insert().values(version=version))


def migrate(conn: Connection, start: int, stop: int = SCHEMA_VERSION) -> None:
    """Bring a database from version `start` (0: empty) to `stop`, in the caller's transaction."""
    for step in MIGRATIONS[start:stop]:
        step(conn)
    _set_version(conn, stop)


def create_latest(conn: Connection) -> None:
    schema.LATEST_TABLES.metadata.create_all(conn)
    _set_version(conn, SCHEMA_VERSION)


def ensure_latest(conn: Connection, where: str) -> int | None:
    """Create or upgrade the schema inside the caller's transaction; returns the version found.

    `where` names the database (its redacted URL) in messages.
    """
    found = current_version(conn, where)
    if found is None:
        create_latest(conn)
    elif found > SCHEMA_VERSION:
        raise ConfigError(
            f"{where} has results store schema version {found}, this mlonmcu knows only up to "
            f"{SCHEMA_VERSION}: upgrade mlonmcu (pip install -U mlonmcu) to use this store"
        )
    elif found < 1:
        raise ConfigError(f"{where}: schema version {found} is not a version mlonmcu ever wrote")
    elif found < SCHEMA_VERSION:
        migrate(conn, found)
    return found
