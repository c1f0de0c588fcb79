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

A third is for speed too: moto 5.2 writes every response through a generic, shape-driven
serializer that costs about 0.1 ms per attribute, so a Query of 1,000 subscriptions spent
~250 ms there alone (see `bench-live`). The results of DynamoDB's reads are already the wire
JSON (attribute values as `{"S": ...}` maps; binary values base64, as the serializer writes
them), so those four actions are written with `json.dumps`, the same document faster.

And a fourth: moto answers a Query on a table's key by sorting every item of the table and
comparing each one's partition key, so each Query costs time in proportion to the table
(~55 ms for an empty partition once a test run had filled it). Here a Query on the table's
own key reads only its partition, the same items in the same order.

A fifth is a missing check: Cognito refuses an attribute the app client may not write
(the client's WriteAttributes) in SignUp and UpdateUserAttributes with NotAuthorizedException
"A client attempted to write unauthorized attribute"; moto writes it. The marketplace relies on
that refusal (a user must not set their own custom:vendorId), so the check is added here.
Likewise ConfirmSignUp: the code went to the email (the pool's AutoVerifiedAttributes), so
Cognito marks it email_verified=true; moto confirms the user but leaves the email unverified.

Usage: emulator.py HOST PORT
"""

import base64
import copy
import json
import signal
import sys
import threading

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler

from moto.cognitoidp.exceptions import NotAuthorizedError
from moto.cognitoidp.models import CognitoIdpBackend
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


_original_query = Table.query


def _query(self, hash_key, *args, **kwargs):
    index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
    if index_name or hash_key is None:
        return _original_query(self, hash_key, *args, **kwargs)
    partition = self.items.get(hash_key)
    if not partition:
        rows = []
    elif self.range_key_attr:
        rows = list(partition.values())
    else:
        rows = [partition]
    # moto's query filters `all_items()` by the partition key; give it only the partition.
    # DynamoDB requests are serialised (SerialDynamoDB), so no other request sees this.
    self.all_items = lambda: rows
    try:
        return _original_query(self, hash_key, *args, **kwargs)
    finally:
        del self.all_items


Table.query = _query
_READS = {"GetItem", "BatchGetItem", "Query", "Scan"}
_original_serialized = DynamoHandler.serialized


def _base64(value):
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not a DynamoDB wire value")


def _serialized(self, action_result):
    result = action_result.result
    if self._get_action() not in _READS or not isinstance(result, dict):
        return _original_serialized(self, action_result)
    headers = {"Content-Type": "application/x-amz-json-1.0"}
    headers.update(self.response_headers)
    return 200, headers, json.dumps(result, default=_base64)


DynamoHandler.serialized = _serialized
dynamodb_models.copy = _TablesByReference()
DynamoDBBackend.transact_write_items = _transact_write_items


def _refuse_unwritable(client, attributes):
    writable = client.extended_config.get("WriteAttributes") if client else None
    if writable is None:  # a client without WriteAttributes may write every attribute
        return
    for attribute in attributes or []:
        if attribute["Name"] not in writable:
            raise NotAuthorizedError("A client attempted to write unauthorized attribute")


_original_sign_up = CognitoIdpBackend.sign_up
_original_update_user_attributes = CognitoIdpBackend.update_user_attributes


def _sign_up(self, client_id, username, password, attributes):
    for pool in self.user_pools.values():
        if client_id in pool.clients:
            _refuse_unwritable(pool.clients[client_id], attributes)
    return _original_sign_up(self, client_id, username, password, attributes)


def _update_user_attributes(self, access_token, attributes):
    for pool in self.user_pools.values():
        if access_token in pool.access_tokens:
            client_id, _ = pool.access_tokens[access_token]
            _refuse_unwritable(pool.clients.get(client_id), attributes)
    return _original_update_user_attributes(self, access_token, attributes)


_original_confirm_sign_up = CognitoIdpBackend.confirm_sign_up


def _confirm_sign_up(self, client_id, username):
    answer = _original_confirm_sign_up(self, client_id, username)
    for pool in self.user_pools.values():
        if client_id in pool.clients and "email" in pool.extended_config.get("AutoVerifiedAttributes", []):
            user = self.admin_get_user(pool.id, username)
            if "email" in user.attribute_lookup:
                user.update_attributes([{"Name": "email_verified", "Value": "true"}])
    return answer


CognitoIdpBackend.sign_up = _sign_up
CognitoIdpBackend.confirm_sign_up = _confirm_sign_up
CognitoIdpBackend.update_user_attributes = _update_user_attributes


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, SerialDynamoDB(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
