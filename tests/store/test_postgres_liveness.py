"""Every connection to the team database carries libpq's TCP liveness settings
(postgres_support.TCP_LIVENESS): a network that goes away silently fails the operation
as "cannot be reached" within about 30 s instead of hanging the store's journal thread
(and the engine) forever. What the settings do is the kernel's (libpq: keepalives,
tcp_user_timeout); here: that each kind of connection has them, and that an address
that sets one itself is obeyed."""

from __future__ import annotations

import time

import pytest

from reelqueue.store.pg_link import PgLink
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.postgres_support import TCP_LIVENESS, with_liveness
from tests import pgserver

pytestmark = pytest.mark.integration

WANTED = {key: str(value) for key, value in TCP_LIVENESS.items()}


def test_the_store_s_connections_carry_the_liveness_settings(pg_dsn: str) -> None:
    schema = pgserver.new_schema_name()
    store = PostgresStore.open(pg_dsn, now=time.time(), schema=schema)
    try:
        with store.raw_connection() as db:
            parameters = db.info.get_parameters()
        assert {k: parameters.get(k) for k in WANTED} == WANTED
    finally:
        store.close()
        pgserver.drop_schema(pg_dsn, schema)


def test_an_address_that_sets_one_is_obeyed(pg_dsn: str) -> None:
    dsn = pg_dsn + ("&" if "?" in pg_dsn else "?") + "keepalives_idle=99"
    kwargs = with_liveness(dsn, {"application_name": "x"})
    assert "keepalives_idle" not in kwargs and kwargs["keepalives_count"] == 3
    assert kwargs["application_name"] == "x"
    link = PgLink(dsn)
    try:
        parameters = link.run(lambda db: db.info.get_parameters())
    finally:
        link.close()
    assert parameters["keepalives_idle"] == "99"
    assert parameters["tcp_user_timeout"] == WANTED["tcp_user_timeout"]
