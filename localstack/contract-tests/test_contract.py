"""The running local API holds to infra/openapi.yaml, under property-based fuzzing.

schemathesis generates requests for every operation of the document, valid and invalid
(GenerationMode positive and negative), and sends each with a token of every role (and none).
Half the cases use ids that exist (the dev stack's demo vendor, bouquet, vase and an order of
the fuzzing customer), so they reach past 404s. Every response must conform to the document
(status, content type, headers, body schema) and none may be a 5xx. A rejected request (4xx)
must leave the table as it was: each is bracketed by a read of every item (asynchronous
projections, which follow accepted requests on their own, are left out).

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


def table_items():
    items = {}
    for page in DYNAMODB.get_paginator("scan").paginate(TableName=TABLE):
        for item in page["Items"]:
            pk = item["pk"]["S"]
            if not pk.startswith(ASYNCHRONOUS):
                items[(pk, item["sk"]["S"])] = item
    return items


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
    before = table_items()
    response = case.call(headers=headers)
    route = f"{case.operation.method.upper()} {case.operation.path}"
    if case.method.upper() != case.operation.method.upper():
        route += " (other methods)"  # schemathesis also tries methods the path does not have
    COUNTS[route][role][response.status_code] += 1
    case.validate_response(response, checks=CHECKS, headers=headers)
    if 400 <= response.status_code < 500:
        after = table_items()
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, (
            f"{case.method} {case.formatted_path} answered {response.status_code} "
            f"but changed {changed}: {response.text[:300]}"
        )
