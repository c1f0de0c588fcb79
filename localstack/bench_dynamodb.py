"""The local DynamoDB engine's own cost per call, one client at a time, beside each other:
`GetItem`, a 625-item `Query` (a crowded live shard's subscribers) and a two-item
`TransactWriteItems` whose condition fails (a reservation refused). Prints p50 and p99 at the
client and the engine's CPU per call (from /proc), so the engine's share of a local figure
can be told from the rest of the machine's. Standard library only.

Usage: python3 localstack/bench_dynamodb.py [CALLS] (the engine at AWS_ENDPOINT_URL_DYNAMODB,
its pid in localstack/.run/dynamodb.pid, as localstack/lib.sh starts it).
"""

import http.client
import json
import os
import sys
import time
import urllib.parse

RUN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".run")


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    endpoint = urllib.parse.urlparse(os.environ.get("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:4567"))
    pid = open(os.path.join(RUN_DIR, "dynamodb.pid")).read().strip()
    connection = http.client.HTTPConnection(endpoint.hostname, endpoint.port)
    # The engine checks that a request is signed, not the signature (nor does this bench).
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Date": "20261207T000000Z",
               "Authorization": "AWS4-HMAC-SHA256 Credential=test/20261207/eu-west-1/dynamodb/aws4_request, "
                                "SignedHeaders=host, Signature=00"}

    def call(operation, body):
        connection.request("POST", "/", json.dumps(body),
                           {**headers, "X-Amz-Target": f"DynamoDB_20120810.{operation}"})
        answer = connection.getresponse()
        return answer.status, answer.read()

    def cpu_seconds():
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    table = f"bench-{os.getpid()}-{int(time.time())}"
    status, answer = call("CreateTable", {
        "TableName": table, "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": "S"}]})
    assert status == 200, answer
    for i in range(625):
        call("PutItem", {"TableName": table, "Item": {
            "pk": {"S": "CHANNEL#catalogue#0"}, "sk": {"S": f"CONNECTION#{i:04d}"},
            "connectionId": {"S": f"connection-{i}"}, "expiresAt": {"N": "9999999999"}}})
    cases = [
        ("GetItem", {"TableName": table, "Key": {"pk": {"S": "CHANNEL#catalogue#0"}, "sk": {"S": "CONNECTION#0001"}}}),
        ("Query", {"TableName": table, "KeyConditionExpression": "pk = :p",
                   "ExpressionAttributeValues": {":p": {"S": "CHANNEL#catalogue#0"}}}),
        ("TransactWriteItems", {"TransactItems": [
            {"Update": {"TableName": table, "Key": {"pk": {"S": "HOLDS"}, "sk": {"S": "c"}},
                        "UpdateExpression": "SET n = if_not_exists(n, :z) + :one",
                        "ExpressionAttributeValues": {":z": {"N": "0"}, ":one": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": table, "Key": {"pk": {"S": "CHANNEL#catalogue#0"}, "sk": {"S": "CONNECTION#0001"}},
                                "ConditionExpression": "attribute_not_exists(pk)"}}]}),
    ]
    print(f"the DynamoDB engine at {endpoint.geturl()}, {calls} calls each, one client")
    print("| call | p50 ms | p99 ms | engine CPU ms a call |")
    print("|---|---|---|---|")
    for operation, body in cases:
        expected = 400 if operation == "TransactWriteItems" else 200
        before = cpu_seconds()
        latencies = []
        for _ in range(calls):
            started = time.perf_counter()
            status, answer = call(operation, body)
            latencies.append(time.perf_counter() - started)
            assert status == expected, (operation, status, answer[:300])
        cpu = cpu_seconds() - before
        latencies.sort()
        name = {"Query": "Query (625 items)", "TransactWriteItems": "TransactWriteItems (cancelled)"}.get(operation, operation)
        print(f"| {name} | {latencies[len(latencies) // 2] * 1000:.2f} | "
              f"{latencies[int(len(latencies) * 0.99)] * 1000:.2f} | {cpu * 1000 / calls:.2f} |")
    call("DeleteTable", {"TableName": table})


if __name__ == "__main__":
    main()
