"""The emulator's corrections hold, and it refuses DynamoDB (the DynamoDB engine's).

The IoT cases run the emulator's WSGI app with
BOUQUET_IOT_DIR on a port of their own and read the files Mosquitto would. Run:
`env -u AWS_ENDPOINT_URL localstack/.venv/bin/python localstack/test_emulator.py` (the test
command does).
"""

import json
import logging
import os
import pathlib
import shutil
import signal
import time
import subprocess
import sys
import tempfile
import threading
import unittest

os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
os.environ.pop("AWS_ENDPOINT_URL", None)  # in-process moto, not the running emulator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator  # noqa: E402  (applies the replacements)

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402
from moto.moto_server.werkzeug_app import MotoRequestHandler  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402


def serve_emulator(test):
    """Starts moto and the emulator's WSGI app on a port of its own for one test, both stopped
    by the test's cleanups; returns the app's endpoint."""
    mock = mock_aws()
    mock.start()
    test.addCleanup(mock.stop)
    werkzeug_log = logging.getLogger("werkzeug")
    test.addCleanup(werkzeug_log.setLevel, werkzeug_log.level)
    werkzeug_log.setLevel(logging.WARNING)
    server = make_server("127.0.0.1", 0, emulator.wsgi_app(), threaded=True,
                         request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    test.addCleanup(server.shutdown)
    return f"http://127.0.0.1:{server.port}"


class DynamoDBIsNotMotos(unittest.TestCase):
    """A DynamoDB client that reached moto lost AWS_ENDPOINT_URL_DYNAMODB: it is told so."""

    def setUp(self):
        self.endpoint = serve_emulator(self)

    def test_dynamodb_and_its_streams_are_refused_with_the_setting_to_fix(self):
        import botocore.exceptions

        for service, call in (("dynamodb", "list_tables"), ("dynamodbstreams", "list_streams")):
            client = boto3.client(service, region_name="eu-west-1", endpoint_url=self.endpoint)
            with self.assertRaises(botocore.exceptions.ClientError) as refused:
                getattr(client, call)()
            self.assertIn("AWS_ENDPOINT_URL_DYNAMODB", str(refused.exception))

    def test_other_services_are_motos(self):
        sqs = boto3.client("sqs", region_name="eu-west-1", endpoint_url=self.endpoint)
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        self.assertTrue(url.endswith("/q"))


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


ARN = "arn:aws:iot:eu-west-1:123456789012"
THING = "${iot:Connection.Thing.ThingName}"
VASE_POLICY = {"Version": "2012-10-17", "Statement": [  # the template's VasePolicy
    {"Effect": "Allow", "Action": "iot:Connect", "Resource": f"{ARN}:client/{THING}",
     "Condition": {"Bool": {"iot:Connection.Thing.IsAttached": "true"}}},
    {"Effect": "Allow", "Action": "iot:Publish",
     "Resource": [f"{ARN}:topic/vases/{THING}/heartbeat", f"{ARN}:topic/vases/{THING}/telemetry"]},
    {"Effect": "Allow", "Action": "iot:Subscribe", "Resource": f"{ARN}:topicfilter/vases/{THING}/commands"},
    {"Effect": "Allow", "Action": "iot:Receive", "Resource": f"{ARN}:topic/vases/{THING}/commands"},
]}
BRIDGE_ACL = "user devstack-bridge\ntopic read #\n"


def read(directory, name):
    return pathlib.Path(directory, name).read_bytes()


def certificate(pem):
    return x509.load_pem_x509_certificate(pem.encode() if isinstance(pem, str) else pem)


def common_name(cert):
    return cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value


def usage(cert):
    return list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def public_der(key):
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)



class S3PostPolicy(unittest.TestCase):
    """Browser uploads with a POST policy, signed by boto3's own presigner, through the
    emulator's WSGI app: S3's refusals, which moto does not make."""

    def setUp(self):
        import botocore.config

        endpoint = serve_emulator(self)
        self.s3 = boto3.client("s3", region_name="eu-west-1",
                               endpoint_url=endpoint,
                               config=botocore.config.Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        self.s3.create_bucket(Bucket="uploads",
                              CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})

    def presigned(self, expires=60):
        return self.s3.generate_presigned_post(
            "uploads", "uploads/a", Fields={"Content-Type": "image/png"},
            Conditions=[{"Content-Type": "image/png"}, ["content-length-range", 1, 10]],
            ExpiresIn=expires)

    def post(self, post, data, **changes):
        import urllib.error
        import urllib.request

        fields = {**post["fields"], **changes}
        boundary = "----bouquet-test-boundary"
        body = b""
        for name, value in fields.items():
            body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                     f"{value}\r\n").encode()
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n"
                 "Content-Type: image/png\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        request = urllib.request.Request(post["url"], data=body, method="POST", headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}"})
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def test_a_file_within_the_policy_is_stored(self):
        status, body = self.post(self.presigned(), b"0123456789")
        self.assertEqual(status, 204, body)
        self.assertEqual(self.s3.get_object(Bucket="uploads", Key="uploads/a")["Body"].read(), b"0123456789")

    def test_a_file_outside_the_size_range_is_refused(self):
        status, body = self.post(self.presigned(), b"01234567890")
        self.assertEqual((status, "<Code>EntityTooLarge</Code>" in body), (400, True), body)
        status, body = self.post(self.presigned(), b"")
        self.assertEqual((status, "<Code>EntityTooSmall</Code>" in body), (400, True), body)
        with self.assertRaises(self.s3.exceptions.NoSuchKey):
            self.s3.get_object(Bucket="uploads", Key="uploads/a")

    def test_a_changed_field_a_forged_signature_and_an_extra_field_are_refused(self):
        post = self.presigned()
        status, body = self.post(post, b"x", **{"Content-Type": "text/html"})
        self.assertEqual(status, 403)
        self.assertIn("Policy Condition failed", body)
        status, body = self.post(post, b"x", key="uploads/other")
        self.assertEqual(status, 403, body)
        status, body = self.post(post, b"x", **{"x-amz-signature": "0" * 64})
        self.assertEqual((status, "SignatureDoesNotMatch" in body), (403, True), body)
        status, body = self.post(post, b"x", acl="public-read")
        self.assertEqual((status, "Extra input fields: acl" in body), (403, True), body)

    def test_an_expired_policy_is_refused(self):
        import datetime

        fields = dict(self.presigned()["fields"], file="x")
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)
        status, _, body = emulator.post_policy_refusal("uploads", fields, 1, now=later)
        self.assertEqual(status, 403)
        self.assertIn("Policy expired", body)
        self.assertIsNone(emulator.post_policy_refusal("uploads", fields, 1))


class IotCertificatesForMosquitto(unittest.TestCase):
    """With BOUQUET_IOT_DIR, IoT certificates come from the local CA, and crl.pem and acl
    follow moto's IoT state after each request."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="iot-")
        cls.addClassCleanup(shutil.rmtree, cls.dir)
        os.environ["BOUQUET_IOT_DIR"] = cls.dir
        try:
            app = emulator.wsgi_app()
        finally:
            del os.environ["BOUQUET_IOT_DIR"]
        cls.addClassCleanup(setattr, emulator, "_iot_ca", None)  # moto's own certificates again
        cls.ca = emulator._iot_ca
        werkzeug_log = logging.getLogger("werkzeug")  # one line per request otherwise
        cls.addClassCleanup(werkzeug_log.setLevel, werkzeug_log.level)
        werkzeug_log.setLevel(logging.WARNING)
        server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        cls.addClassCleanup(server.shutdown)
        cls.iot = boto3.client("iot", region_name="eu-west-1", endpoint_url=f"http://127.0.0.1:{server.port}")
        cls.iot.create_policy(policyName="VasePolicy", policyDocument=json.dumps(VASE_POLICY))

    def read(self, name):
        return read(self.dir, name)

    def revoked(self):
        crl = x509.load_pem_x509_crl(self.read("crl.pem"))
        self.assertTrue(crl.is_signature_valid(certificate(self.read("ca.pem")).public_key()))
        return {entry.serial_number for entry in crl}

    def acl(self):
        """The acl's lines per user."""
        users, user = {}, None
        for line in self.read("acl").decode().splitlines():
            if line.startswith("user "):
                user = users.setdefault(line[len("user "):], set())
            elif line:
                user.add(line)
        return users

    def assert_held(self, made):
        self.assertIn(certificate(made["certificatePem"]).serial_number, self.revoked())
        self.assertNotIn(made["certificateId"], self.acl())

    def assert_good(self, made, thing):
        self.assertNotIn(certificate(made["certificatePem"]).serial_number, self.revoked())
        self.assertEqual(self.acl()[made["certificateId"]], {
            f"topic write vases/{thing}/heartbeat", f"topic write vases/{thing}/telemetry",
            f"topic read vases/{thing}/commands"})

    def test_the_ca_the_broker_and_the_bridge_certificates(self):
        ca = certificate(self.read("ca.pem"))
        self.assertTrue(ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
        server, bridge = certificate(self.read("server.pem")), certificate(self.read("bridge.pem"))
        for cert, name in [(server, "server"), (bridge, "bridge")]:
            cert.verify_directly_issued_by(ca)
            key = serialization.load_pem_private_key(self.read(name + ".key"), None)
            self.assertEqual(public_der(key.public_key()), public_der(cert.public_key()))
            self.assertEqual(os.stat(os.path.join(self.dir, name + ".key")).st_mode & 0o777, 0o600)
        names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        self.assertEqual(names.get_values_for_type(x509.DNSName), ["localhost"])
        self.assertEqual([str(ip) for ip in names.get_values_for_type(x509.IPAddress)], ["127.0.0.1"])
        self.assertEqual(usage(server), [ExtendedKeyUsageOID.SERVER_AUTH])
        self.assertEqual(common_name(bridge), "devstack-bridge")
        self.assertEqual(usage(bridge), [ExtendedKeyUsageOID.CLIENT_AUTH])

    def test_before_any_certificate_the_files_let_mosquitto_start(self):
        with tempfile.TemporaryDirectory() as directory:
            first = emulator.LocalIotCa(directory)
            self.assertTrue(first.sync())
            self.assertFalse(first.sync())  # nothing changed: nothing written, no broker signalled
            self.assertEqual(read(directory, "acl").decode(), BRIDGE_ACL)
            crl = x509.load_pem_x509_crl(read(directory, "crl.pem"))
            self.assertEqual(len(crl), 0)
            self.assertTrue(crl.is_signature_valid(first.cert.public_key()))
            # A restarted emulator keeps the CA and the certificates the broker and bridge use.
            kept = lambda: [read(directory, name) for name in ["ca.pem", "server.pem", "bridge.pem"]]
            before = kept()
            emulator.LocalIotCa(directory)
            self.assertEqual(kept(), before)

    def test_a_certificate_is_named_by_its_cn_and_signed_by_the_ca(self):
        made = self.iot.create_keys_and_certificate(setAsActive=True)
        cert = certificate(made["certificatePem"])
        self.assertEqual(common_name(cert), made["certificateId"])
        self.assertRegex(made["certificateId"], "^[0-9a-f]{64}$")
        cert.verify_directly_issued_by(certificate(self.read("ca.pem")))
        self.assertEqual(usage(cert), [ExtendedKeyUsageOID.CLIENT_AUTH])
        self.assertFalse(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
        key = serialization.load_pem_private_key(made["keyPair"]["PrivateKey"].encode(), None)
        self.assertEqual(public_der(key.public_key()), public_der(cert.public_key()))
        described = self.iot.describe_certificate(certificateId=made["certificateId"])["certificateDescription"]
        self.assertEqual((described["certificatePem"], described["status"]), (made["certificatePem"], "ACTIVE"))

    def test_a_certificate_from_a_csr_keeps_the_requesters_key(self):
        key = ec.generate_private_key(ec.SECP256R1())
        csr = x509.CertificateSigningRequestBuilder().subject_name(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vase")])).sign(key, hashes.SHA256())
        made = self.iot.create_certificate_from_csr(
            certificateSigningRequest=csr.public_bytes(serialization.Encoding.PEM).decode(), setAsActive=True)
        cert = certificate(made["certificatePem"])
        self.assertEqual(public_der(cert.public_key()), public_der(key.public_key()))
        self.assertEqual(common_name(cert), made["certificateId"])
        cert.verify_directly_issued_by(certificate(self.read("ca.pem")))

    def test_the_crl_and_the_acl_follow_the_certificate(self):
        self.iot.create_thing(thingName="V1")
        made = self.iot.create_keys_and_certificate(setAsActive=True)
        arn, certificate_id = made["certificateArn"], made["certificateId"]
        self.assert_held(made)  # created, attached to nothing
        self.iot.attach_policy(policyName="VasePolicy", target=arn)
        self.assert_held(made)  # a policy but no thing
        self.iot.attach_thing_principal(thingName="V1", principal=arn)
        self.assert_good(made, "V1")
        self.assertTrue(self.read("acl").decode().startswith(BRIDGE_ACL))
        self.assertFalse(self.ca.sync())  # the request already wrote this state

        self.iot.update_certificate(certificateId=certificate_id, newStatus="INACTIVE")
        self.assert_held(made)
        self.iot.update_certificate(certificateId=certificate_id, newStatus="ACTIVE")
        self.assert_good(made, "V1")  # the CRL entry is lifted

        # Revoked the way shared/iot does it; moto then forgets the certificate, the CRL does not.
        self.iot.detach_thing_principal(thingName="V1", principal=arn)
        self.assert_held(made)
        self.iot.detach_policy(policyName="VasePolicy", target=arn)
        self.iot.update_certificate(certificateId=certificate_id, newStatus="INACTIVE")
        self.iot.delete_certificate(certificateId=certificate_id)
        with self.assertRaises(self.iot.exceptions.ResourceNotFoundException):
            self.iot.describe_certificate(certificateId=certificate_id)
        self.assert_held(made)

    def test_an_iot_write_makes_the_brokers_reload(self):
        brokers = os.path.join(self.dir, "brokers")
        # A program named mosquitto (a copy of sleep) is signalled; a reused pid is not.
        shutil.copy(shutil.which("sleep"), os.path.join(self.dir, "mosquitto"))
        # SIGHUP's default action (end) restored for it: a CI runner may start everything
        # with SIGHUP ignored (nohup), and an ignored signal stays ignored across exec.
        broker = subprocess.Popen(
            [os.path.join(self.dir, "mosquitto"), "30"],
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
        )
        other = subprocess.Popen(["sleep", "30"])
        for process in [broker, other]:
            self.addCleanup(process.wait)
            self.addCleanup(process.kill)
        for name, text in [("broker", broker.pid), ("other", other.pid), ("stale", "x")]:
            with open(os.path.join(brokers, f"{name}.pid"), "w") as f:
                f.write(f"{text}\n")
            self.addCleanup(os.remove, os.path.join(brokers, f"{name}.pid"))
        # Until the child has exec'd, its name is still python's (seen on a loaded CI machine).
        deadline = time.monotonic() + 10
        while pathlib.Path(f"/proc/{broker.pid}/comm").read_text().strip() != "mosquitto":
            self.assertLess(time.monotonic(), deadline, "the stand-in broker never started")
            time.sleep(0.01)
        self.iot.create_keys_and_certificate(setAsActive=True)  # a new serial in the CRL
        self.assertEqual(broker.wait(timeout=5), -signal.SIGHUP)
        self.assertIsNone(other.poll())

    def test_a_burst_of_iot_writes_ends_with_a_reload_after_its_last(self):
        brokers = os.path.join(self.dir, "brokers")
        # A stand-in broker that counts its SIGHUPs (Mosquitto drops one that comes while it
        # reloads, so the last write of a burst needs a signal of its own, after it).
        script = os.path.join(self.dir, "mosquitto")
        counted = os.path.join(self.dir, "reloads")
        with open(script, "w") as f:
            f.write(f"#!{sys.executable}\n"
                    "import signal, sys, time\n"
                    f"signal.signal(signal.SIGHUP, lambda *_: open({counted!r}, 'a').write(f'{{time.monotonic()}}\\n'))\n"
                    f"open({counted!r}, 'w').close()\n"
                    "time.sleep(30)\n")
        os.chmod(script, 0o755)
        broker = subprocess.Popen([script], preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
        self.addCleanup(broker.wait)
        self.addCleanup(broker.kill)
        # Registered once its handler is in (it has made the file; a busy machine takes a while
        # to start Python): a SIGHUP before that, an earlier test's trailing one say, would end it.
        deadline = time.monotonic() + 30
        while not os.path.exists(counted):
            self.assertLess(time.monotonic(), deadline, "the stand-in broker never started")
            self.assertIsNone(broker.poll(), "the stand-in broker ended")
            time.sleep(0.01)
        with open(os.path.join(brokers, "counting.pid"), "w") as f:
            f.write(f"{broker.pid}\n")
        self.addCleanup(os.remove, os.path.join(brokers, "counting.pid"))
        for _ in range(3):
            self.iot.create_keys_and_certificate(setAsActive=True)
        last_write = time.monotonic()
        time.sleep(emulator.LocalIotCa.TRAILING_RELOAD_SECONDS + 0.5)
        signals = [float(line) for line in pathlib.Path(counted).read_text().split()]
        self.assertGreaterEqual(len(signals), 4, "one per write and a trailing one")
        self.assertGreater(max(signals), last_write, "a reload after the burst's last write")


if __name__ == "__main__":
    unittest.main()
