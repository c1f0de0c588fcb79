"""The offline AWS emulator: moto's server, with one correction.

moto's server is threaded and its DynamoDB backend takes no lock, so two concurrent
TransactWriteItems can both pass their condition checks before either writes (seen here:
20 concurrent reservations with one idempotency key produced two orders). Real DynamoDB
evaluates each request's conditions and writes atomically. Serialising DynamoDB requests
restores that guarantee; other services (SQS long polls among them) stay concurrent.

A second change is for speed: moto backs up every table a TransactWriteItems touches with
a deep copy (once per item, stream records included), so each transaction costs time in
proportion to everything the table ever held; a test suite slows down as it runs (a batch
of 500 vase messages took 51 s). Here a transaction backs up only the items it touches and
the length of the table's stream, and restores those when it is cancelled: the same
all-or-nothing outcome.

Usage: emulator.py HOST PORT
"""

import copy
import signal
import sys
import threading

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app


class SerialDynamoDB:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            with self.lock:
                return list(self.app(environ, start_response))
        return self.app(environ, start_response)


class _TablesByReference:
    """`copy` for moto's DynamoDB module: tables are not deep-copied (see the module doc)."""

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, Table):
            return value
        return copy.deepcopy(value, memo)

    def __getattr__(self, name):
        return getattr(copy, name)


def _key_of(table, op):
    attrs = op.get("Item") or op.get("Key") or {}
    hash_value = DynamoType(attrs[table.hash_key_attr])
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


def _restore(table, hash_value, range_value, saved):
    rows = table.items
    if table.range_key_attr:
        if saved is None:
            rows.get(hash_value, {}).pop(range_value, None)
        else:
            rows[hash_value][range_value] = saved
    elif saved is None:
        rows.pop(hash_value, None)
    else:
        rows[hash_value] = saved


_original_transact_write_items = DynamoDBBackend.transact_write_items


def _transact_write_items(self, transact_items):
    saved, streams = [], {}
    for entry in transact_items:
        op = next(iter(entry.values()), {})
        table = self.tables.get(op.get("TableName"))
        if table is None:
            continue
        try:
            hash_value, range_value = _key_of(table, op)
        except KeyError:
            continue  # moto reports the malformed item itself
        current = table.get_item(hash_value, range_value)
        saved.append((table, hash_value, range_value, copy.deepcopy(current)))
        if table.stream_shard is not None:
            streams.setdefault(id(table), (table.stream_shard, len(table.stream_shard.items)))
    try:
        return _original_transact_write_items(self, transact_items)
    except Exception:
        for table, hash_value, range_value, item in reversed(saved):
            _restore(table, hash_value, range_value, item)
        for shard, length in streams.values():
            del shard.items[length:]
        raise


dynamodb_models.copy = _TablesByReference()
DynamoDBBackend.transact_write_items = _transact_write_items


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, SerialDynamoDB(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
