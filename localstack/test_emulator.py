"""The emulator's speed changes give the answers moto itself gives.

Each case sends the same requests with `emulator.py`'s replacements and with moto's originals
and compares the parsed answers. Run: `localstack/.venv/bin/python -m unittest
localstack/test_emulator.py` (the test command does).
"""

import base64
import contextlib
import json
import os
import sys
import unittest

os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
os.environ.pop("AWS_ENDPOINT_URL", None)  # in-process moto, not the running emulator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator  # noqa: E402  (applies the replacements)

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402
from moto.dynamodb.models.table import Table  # noqa: E402
from moto.dynamodb.responses import DynamoHandler  # noqa: E402


@contextlib.contextmanager
def moto_originals():
    Table.query, DynamoHandler.serialized = emulator._original_query, emulator._original_serialized
    try:
        yield
    finally:
        Table.query, DynamoHandler.serialized = emulator._query, emulator._serialized


def strip_metadata(response):
    response.pop("ResponseMetadata", None)
    # boto3 decodes binary values; encode them again to compare and to assert on.
    return json.loads(json.dumps(response, default=lambda value: base64.b64encode(value).decode()))


class SameAnswers(unittest.TestCase):
    def setUp(self):
        self.mock = mock_aws()
        self.mock.start()
        self.db = boto3.client("dynamodb", region_name="eu-west-1")
        self.db.create_table(
            TableName="t",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "byG",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        self.db.put_item(
            TableName="t",
            Item={
                "pk": {"S": "p"}, "sk": {"S": "0"}, "g": {"S": "x"},
                "b": {"B": b"\x00\x01hi"}, "bs": {"BS": [b"a", b"b"]},
                "n": {"N": "1.50"}, "ns": {"NS": ["1", "2"]}, "ss": {"SS": ["x", "y"]},
                "l": {"L": [{"S": "a"}, {"N": "2"}, {"NULL": True}, {"BOOL": False}]},
                "m": {"M": {"k": {"S": "v"}, "e": {"M": {}}}}, "u": {"S": "\u00e9\u2028"},
            },
        )
        for i in range(1, 40):
            partition = "p" if i % 2 else "q"
            self.db.put_item(
                TableName="t",
                Item={"pk": {"S": partition}, "sk": {"S": f"{i:03d}"}, "g": {"S": "x"}},
            )
        self.requests = [
            ("get_item", {"Key": {"pk": {"S": "p"}, "sk": {"S": "0"}}}),
            ("get_item", {"Key": {"pk": {"S": "p"}, "sk": {"S": "none"}}}),
            ("batch_get_item", {"RequestItems": {"t": {"Keys": [
                {"pk": {"S": "p"}, "sk": {"S": "0"}}, {"pk": {"S": "q"}, "sk": {"S": "002"}}]}}}),
            ("scan", {"Limit": 7, "ReturnConsumedCapacity": "TOTAL"}),
            ("query", {"KeyConditionExpression": "pk = :p",
                       "ExpressionAttributeValues": {":p": {"S": "p"}}}),
            ("query", {"KeyConditionExpression": "pk = :p",
                       "ExpressionAttributeValues": {":p": {"S": "nobody"}}}),
            ("query", {"KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
                       "ExpressionAttributeValues": {":p": {"S": "q"}, ":s": {"S": "01"}},
                       "ScanIndexForward": False, "ProjectionExpression": "sk"}),
            ("query", {"KeyConditionExpression": "pk = :p", "Limit": 5,
                       "ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "011"}},
                       "ExpressionAttributeValues": {":p": {"S": "p"}}}),
            ("query", {"IndexName": "byG", "KeyConditionExpression": "g = :g", "Limit": 9,
                       "ExpressionAttributeValues": {":g": {"S": "x"}}}),
        ]

    def tearDown(self):
        self.mock.stop()

    def answers(self):
        return [
            strip_metadata(getattr(self.db, action)(**({"TableName": "t"} | args)
                                                    if action != "batch_get_item" else args))
            for action, args in self.requests
        ]

    def test_reads_answer_as_moto_does(self):
        fast = self.answers()
        with moto_originals():
            original = self.answers()
        self.assertEqual(len(fast), len(self.requests))
        for request, mine, theirs in zip(self.requests, fast, original):
            self.assertEqual(mine, theirs, request)
        # The cases cover what they claim: binary values, paging, an empty partition.
        self.assertEqual(fast[0]["Item"]["b"], {"B": "AAFoaQ=="})
        self.assertIn("LastEvaluatedKey", fast[7])
        self.assertEqual(fast[5]["Count"], 0)

    def test_errors_still_go_through_moto(self):
        with self.assertRaises(self.db.exceptions.ResourceNotFoundException):
            self.db.query(TableName="missing", KeyConditionExpression="pk = :p",
                          ExpressionAttributeValues={":p": {"S": "p"}})



class CognitoWriteAttributes(unittest.TestCase):
    """A client's WriteAttributes bound what its users write, as Cognito documents."""

    def setUp(self):
        self.mock = mock_aws()
        self.mock.start()
        self.idp = boto3.client("cognito-idp", region_name="eu-west-1")
        pool = self.idp.create_user_pool(
            PoolName="p",
            UsernameAttributes=["email"],
            AutoVerifiedAttributes=["email"],
            Schema=[{"Name": "vendorId", "AttributeDataType": "String", "Mutable": True}],
        )["UserPool"]["Id"]
        self.pool = pool
        self.client = self.idp.create_user_pool_client(
            UserPoolId=pool,
            ClientName="web",
            ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"],
            WriteAttributes=["email"],
        )["UserPoolClient"]["ClientId"]
        self.open_client = self.idp.create_user_pool_client(
            UserPoolId=pool, ClientName="admin-tool"
        )["UserPoolClient"]["ClientId"]

    def tearDown(self):
        self.mock.stop()

    def sign_up(self, client, email, attributes):
        return self.idp.sign_up(ClientId=client, Username=email, Password="Correct-horse-9", UserAttributes=attributes)

    def vendor_of(self, email):
        attributes = self.idp.admin_get_user(UserPoolId=self.pool, Username=email)["UserAttributes"]
        return {a["Name"]: a["Value"] for a in attributes}.get("custom:vendorId")

    def test_sign_up_refuses_an_attribute_the_client_may_not_write(self):
        forged = [{"Name": "email", "Value": "eve@example.com"}, {"Name": "custom:vendorId", "Value": "V1"}]
        with self.assertRaises(self.idp.exceptions.NotAuthorizedException) as refused:
            self.sign_up(self.client, "eve@example.com", forged)
        self.assertIn("unauthorized attribute", str(refused.exception))
        with self.assertRaises(self.idp.exceptions.UserNotFoundException):
            self.idp.admin_get_user(UserPoolId=self.pool, Username="eve@example.com")
        # Allowed attributes pass, and a client without WriteAttributes writes any.
        self.sign_up(self.client, "flo@example.com", [{"Name": "email", "Value": "flo@example.com"}])
        self.sign_up(self.open_client, "ops@example.com", forged[1:])
        self.assertEqual(self.vendor_of("ops@example.com"), "V1")

    def test_confirming_the_sign_up_verifies_the_email_the_code_went_to(self):
        self.sign_up(self.client, "flo@example.com", [{"Name": "email", "Value": "flo@example.com"}])
        attributes = lambda: {a["Name"]: a["Value"] for a in self.idp.admin_get_user(
            UserPoolId=self.pool, Username="flo@example.com")["UserAttributes"]}
        self.assertNotEqual(attributes().get("email_verified"), "true")
        self.idp.confirm_sign_up(ClientId=self.client, Username="flo@example.com", ConfirmationCode="123456")
        self.assertEqual(attributes().get("email_verified"), "true")

    def test_update_user_attributes_refuses_it_too(self):
        self.sign_up(self.client, "flo@example.com", [{"Name": "email", "Value": "flo@example.com"}])
        self.idp.admin_confirm_sign_up(UserPoolId=self.pool, Username="flo@example.com")
        tokens = self.idp.initiate_auth(
            ClientId=self.client,
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": "flo@example.com", "PASSWORD": "Correct-horse-9"},
        )["AuthenticationResult"]
        with self.assertRaises(self.idp.exceptions.NotAuthorizedException):
            self.idp.update_user_attributes(
                AccessToken=tokens["AccessToken"],
                UserAttributes=[{"Name": "custom:vendorId", "Value": "V1"}],
            )
        self.assertIsNone(self.vendor_of("flo@example.com"))


if __name__ == "__main__":
    unittest.main()
