"""The running local API holds to infra/openapi.yaml, under property-based fuzzing.

schemathesis generates requests for every operation of the document, valid and invalid
(GenerationMode positive and negative), and sends each with a token of every role (and none).
Half the cases use ids that exist (the dev stack's demo vendor, bouquet, vase and an order of
the fuzzing customer), so they reach past 404s. Every response must conform to the document
(status, content type, headers, body schema) and none may be a 5xx. A rejected request (4xx)
must leave the table as it was: the table's stream, read from where it ended before the
request, shows no item changed (asynchronous projections, which follow accepted requests on
their own, are left out).

Environment: CONTRACT_API (the dev stack), CONTRACT_TABLE (its table), CONTRACT_EXAMPLES
(hypothesis examples per operation and role beyond schemathesis'
coverage cases; 3 by default, about 4,300 requests in 4 minutes), AWS_ENDPOINT_URL (the emulator).
"""

import json
import os
import urllib.request
import zlib

import boto3
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from conftest import COUNTS

API = os.environ.get("CONTRACT_API", "http://127.0.0.1:3200")
TABLE = os.environ["CONTRACT_TABLE"]
EXAMPLES = int(os.environ.get("CONTRACT_EXAMPLES", "3"))
SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "infra", "openapi.yaml")
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Written after accepted requests by asynchronous consumers (EventBridge → analytics, the
# WebSocket broadcaster), possibly while a later request runs.
ASYNCHRONOUS = ("ANALYTICS#", "DAY#", "PROCESSED#", "CONNECTION#", "CHANNEL#")

schema = schemathesis.openapi.from_path(SPEC)
schema.config.update(base_url=API)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=EXAMPLES,
    with_security_parameters=False,
)


def _call(method, path, token=None, body=None):
    request = urllib.request.Request(API + path, method=method)
    if token:
        request.add_header("authorization", f"Bearer {token}")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("content-type", "application/json")
    with urllib.request.urlopen(request, data=data, timeout=30) as response:
        return json.loads(response.read() or b"null")


def _token(role, sub, vendor_id=None):
    return _call("POST", "/local/token", body={"role": role, "sub": sub, "vendorId": vendor_id})["token"]


def _known_ids():
    vendor_id = _call("GET", "/config.json")["demoVendorId"]
    tokens = {
        "customer": _token("customer", "fuzz-customer"),
        "vendor": _token("vendor", "fuzz-vendor", vendor_id),
        "admin": _token("admin", "fuzz-admin"),
    }
    bouquets = [b["bouquetId"] for b in _call("GET", f"/v1/bouquets?vendorId={vendor_id}&limit=10")["items"]]
    vases = _call("GET", f"/v1/vendors/{vendor_id}/vases", tokens["vendor"])["items"]
    _call("PUT", f"/v1/cart/items/{bouquets[-1]}", tokens["customer"])
    order = _call("POST", "/v1/orders", tokens["customer"])
    ids = {
        "vendorId": vendor_id,
        "bouquetId": bouquets[0],
        "vaseId": vases[0]["vaseId"],
        "orderId": order["orderId"],
    }
    return tokens, ids


TOKENS, KNOWN = _known_ids()
DYNAMODB = boto3.client("dynamodb")
STREAMS = boto3.client("dynamodbstreams")
STREAM = DYNAMODB.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
# The emulator's stream keeps one shard for its life (DynamoDB's own split every few hours).
SHARDS = [s["ShardId"] for s in STREAMS.describe_stream(StreamArn=STREAM)["StreamDescription"]["Shards"]]


def stream_position():
    """Where the table's stream ends now: every write from here on is a record after it."""
    return [
        STREAMS.get_shard_iterator(
            StreamArn=STREAM, ShardId=shard, ShardIteratorType="LATEST"
        )["ShardIterator"]
        for shard in SHARDS
    ]


def changed_since(position):
    """The keys whose item differs from what it was at `position`, from the stream's old and
    new images (NEW_AND_OLD_IMAGES): a write that left its item as it was changes nothing.
    Reading what was written is exact and costs two calls, where comparing two scans of the
    whole table took most of the fuzz's time."""
    before, after = {}, {}
    for iterator in position:
        while iterator:
            page = STREAMS.get_records(ShardIterator=iterator)
            for record in page["Records"]:
                change = record["dynamodb"]
                key = (change["Keys"]["pk"]["S"], change["Keys"]["sk"]["S"])
                if key[0].startswith(ASYNCHRONOUS):
                    continue
                before.setdefault(key, change.get("OldImage"))
                after[key] = change.get("NewImage")
            # An open shard always hands out a next iterator; no records means its end.
            iterator = page.get("NextShardIterator") if page["Records"] else None
    return sorted(key for key in after if before[key] != after[key])


def test_the_stream_check_sees_a_change_and_not_a_rewrite():
    """The check the fuzz relies on is not vacuous: a new item is a change, writing it again
    unchanged is not, removing it is."""
    key = {"pk": {"S": "CONTRACT#probe"}, "sk": {"S": "PROBE"}}
    item = {**key, "value": {"S": "1"}}
    position = stream_position()
    DYNAMODB.put_item(TableName=TABLE, Item=item)
    assert changed_since(position) == [("CONTRACT#probe", "PROBE")]
    position = stream_position()
    DYNAMODB.put_item(TableName=TABLE, Item=item)
    assert changed_since(position) == []
    DYNAMODB.put_item(TableName=TABLE, Item={**key, "value": {"S": "2"}})
    DYNAMODB.delete_item(TableName=TABLE, Key=key)
    assert changed_since(position) == [("CONTRACT#probe", "PROBE")]


def _with_known_ids(case):
    """Half the cases (by a hash of what was generated) name things that exist."""
    generated = repr(sorted((case.path_parameters or {}).items())) + repr(case.body)
    if zlib.crc32(generated.encode()) % 2 == 0:
        for name in list(case.path_parameters or {}):
            if name in KNOWN:
                case.path_parameters[name] = KNOWN[name]


@pytest.mark.parametrize("role", ["anonymous", "customer", "vendor", "admin"])
@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_the_api_answers_as_documented(case, role):
    _with_known_ids(case)
    headers = {}
    if role != "anonymous":
        headers["Authorization"] = f"Bearer {TOKENS[role]}"
    position = stream_position()
    response = case.call(headers=headers)
    route = f"{case.operation.method.upper()} {case.operation.path}"
    if case.method.upper() != case.operation.method.upper():
        route += " (other methods)"  # schemathesis also tries methods the path does not have
    COUNTS[route][role][response.status_code] += 1
    case.validate_response(response, checks=CHECKS, headers=headers)
    if 400 <= response.status_code < 500:
        changed = changed_since(position)
        assert not changed, (
            f"{case.method} {case.formatted_path} answered {response.status_code} "
            f"but changed {changed}: {response.text[:300]}"
        )
