"""The offline AWS emulator: moto's server, for every service but DynamoDB, with corrections.

DynamoDB and DynamoDB Streams are not moto's here: the local DynamoDB engine
(`localstack/dynamodb-engine`, dynoxide on SQLite) serves them at AWS_ENDPOINT_URL_DYNAMODB, and a
DynamoDB request that reaches moto is refused with a message saying so (docs/local-cloud.md).

The first correction is a missing check: Cognito refuses an attribute the app client may not write
(the client's WriteAttributes) in SignUp and UpdateUserAttributes with NotAuthorizedException
"A client attempted to write unauthorized attribute"; moto writes it. The marketplace relies on
that refusal (a user must not set their own custom:vendorId), so the check is added here.
Likewise ConfirmSignUp: the code went to the email (the pool's AutoVerifiedAttributes), so
Cognito marks it email_verified=true; moto confirms the user but leaves the email unverified.

A second is S3's POST policy (browser uploads, `POST /{bucket}` with a form), which moto
stores without reading: S3 checks the policy's SigV4 signature, its expiration, that every
form field is covered by a condition and that each condition holds, and refuses a file
outside `content-length-range` with EntityTooLarge or EntityTooSmall. The marketplace's photo
uploads rely on those refusals (type and size), so the checks are added here.

Last, IoT certificates for Eclipse Mosquitto, the dev stack's broker, when BOUQUET_IOT_DIR
names a directory. moto signs each certificate with its own key, which no TLS server can
verify, and in CreateCertificateFromCsr with a fresh key, not the requester's. Here a local
CA in that directory issues them, and the certificate's CN is its certificate id, which
Mosquitto takes as the client's username. After every IoT request that may change state, the
emulator writes the two files through which Mosquitto enforces IoT Core's rules: crl.pem
refuses at the TLS handshake every certificate that is not ACTIVE and attached to a thing,
and acl gives each other certificate the topics its policies allow its things. Then it makes
every broker registered in BOUQUET_IOT_DIR/brokers/*.pid reload them (SIGHUP).

Usage: [BOUQUET_IOT_DIR=DIR] emulator.py HOST PORT
"""

import base64
import datetime
import glob
import ipaddress
import json
import os
import secrets
import signal
import sys
import threading

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


from moto.cognitoidp.exceptions import NotAuthorizedError
from moto.cognitoidp.models import CognitoIdpBackend
from moto.iot.models import FakeCertificate, IoTBackend, iot_backends
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app


class NoDynamoDB:
    """DynamoDB and DynamoDB Streams are the DynamoDB engine's (`localstack/dynamodb-engine`,
    at AWS_ENDPOINT_URL_DYNAMODB): a client that reaches moto for them has lost that setting,
    and is told so instead of being served by moto's DynamoDB, one request at a time."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        answer = json.dumps({
            "__type": "com.amazon.coral.service#UnrecognizedClientException",
            "message": "DynamoDB is not served here: set AWS_ENDPOINT_URL_DYNAMODB and "
                       "AWS_ENDPOINT_URL_DYNAMODB_STREAMS to the local DynamoDB engine "
                       "(localstack/lib.sh does)",
        }).encode()
        start_response("400 Bad Request", [("Content-Type", "application/x-amz-json-1.0"),
                                           ("Content-Length", str(len(answer)))])
        return [answer]


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


IOT_BRIDGE = "devstack-bridge"  # the dev stack's subscriber: the CN of bridge.pem, reads every topic
_THING_NAME = "${iot:Connection.Thing.ThingName}"


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _spki(public_key):
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode()


class LocalIotCa:
    """The CA of a BOUQUET_IOT_DIR, the certificates it issues, and Mosquitto's two files.

    A CA, server or bridge certificate already in the directory is kept, so a broker or bridge
    that outlives a restart of the emulator still trusts and is trusted. The device certificates
    an earlier emulator issued are forgotten with moto's state: they are not in the CRL, but the
    acl names no such user, so they can connect and do nothing.
    """

    def __init__(self, directory):
        self.dir = directory
        self.lock = threading.Lock()
        self.issued = {}  # serial -> certificate id: moto forgets deleted certificates; the CRL must not
        self.written = None
        os.makedirs(os.path.join(directory, "brokers"), exist_ok=True)
        self.key, self.cert = self._load("ca", None) or self._make_ca()
        self.name = self.cert.subject
        if not self._load("server", self.cert):
            self._make("server", "localhost", ExtendedKeyUsageOID.SERVER_AUTH,
                       [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        if not self._load("bridge", self.cert):
            self._make("bridge", IOT_BRIDGE, ExtendedKeyUsageOID.CLIENT_AUTH)

    def _path(self, name):
        return os.path.join(self.dir, name)

    def _write(self, name, text, mode=0o644):
        # tmp + rename: a broker reloading at that moment reads the old file or the new one
        tmp = self._path(f"{name}.{os.getpid()}.tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as f:
            f.write(text)
        os.replace(tmp, self._path(name))

    def _load(self, name, issuer):
        """NAME.key and NAME.pem from an earlier start, if they belong together (and to ISSUER)."""
        try:
            with open(self._path(name + ".key"), "rb") as f:
                key = serialization.load_pem_private_key(f.read(), None)
            with open(self._path(name + ".pem"), "rb") as f:
                cert = x509.load_pem_x509_certificate(f.read())
            if _spki(key.public_key()) != _spki(cert.public_key()):
                return None
            if issuer is not None:
                cert.verify_directly_issued_by(issuer)
            return key, cert
        except (OSError, ValueError, TypeError, InvalidSignature):
            return None

    def _save(self, name, key, cert):
        self._write(name + ".key", key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode(), mode=0o600)
        self._write(name + ".pem", _pem(cert))

    def _make_ca(self):
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bouquet local IoT CA")])
        cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(days=1))
            .not_valid_after(_now() + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        self._save("ca", key, cert)
        return key, cert

    def _make(self, name, common_name, usage, sans=None):
        key = ec.generate_private_key(ec.SECP256R1())
        self._save(name, key, self._sign(key.public_key(), common_name, usage, sans))

    def _sign(self, public_key, common_name, usage, sans=None):
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.name).public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(days=1))
            .not_valid_after(_now() + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, public_key):
        """A device certificate (PEM) for PUBLIC_KEY whose CN is its certificate id, chosen here."""
        certificate_id = secrets.token_hex(32)
        cert = self._sign(public_key, certificate_id, ExtendedKeyUsageOID.CLIENT_AUTH)
        with self.lock:
            self.issued[cert.serial_number] = certificate_id
        return _pem(cert)

    def certificate_id(self, pem):
        """The id of a certificate this CA issued, or None for any other PEM."""
        try:
            cert = x509.load_pem_x509_certificate(pem.encode())
        except ValueError:
            return None
        return self.issued.get(cert.serial_number) if cert.issuer == self.name else None

    def sync(self):
        """Writes crl.pem and acl from moto's IoT state if either changed, then has the brokers
        reload them. True if it wrote."""
        with self.lock:
            ours = set(self.issued.values())
            good, acl = set(), [f"user {IOT_BRIDGE}", "topic read #"]
            for backend in _iot_backends():
                things, policies = {}, {}
                for arn, thing in list(backend.principal_things):
                    things.setdefault(arn, []).append(thing)
                for (arn, _), (_, policy) in list(backend.principal_policies.items()):
                    policies.setdefault(arn, []).append(policy)
                for cert in list(backend.certificates.values()):
                    # IoT Core refuses a certificate that is not ACTIVE; the template's Connect
                    # statement, one attached to no thing (iot:Connection.Thing.IsAttached).
                    if cert.status != "ACTIVE" or cert.arn not in things or cert.certificate_id not in ours:
                        continue
                    good.add(cert.certificate_id)
                    topics = {line for thing in things[cert.arn] for policy in policies.get(cert.arn, [])
                              for line in _acl_lines(policy.document, thing)}
                    acl += ["", f"user {cert.certificate_id}", *sorted(topics)]
            revoked = sorted(serial for serial, cid in self.issued.items() if cid not in good)
            acl = "\n".join(acl) + "\n"
            if (revoked, acl) == self.written:
                return False
            since = _now() - datetime.timedelta(minutes=1)
            crl = (
                x509.CertificateRevocationListBuilder().issuer_name(self.name)
                .last_update(since).next_update(since + datetime.timedelta(days=3650))
            )
            for serial in revoked:
                crl = crl.add_revoked_certificate(
                    x509.RevokedCertificateBuilder().serial_number(serial).revocation_date(since).build())
            crl = crl.sign(self.key, hashes.SHA256())
            self._write("crl.pem", crl.public_bytes(serialization.Encoding.PEM).decode())
            self._write("acl", acl)
            self.written = (revoked, acl)
            self._reload_brokers()
            return True

    # Mosquitto drops a SIGHUP that arrives while it reloads (its flag is cleared after the
    # reload), so a burst of IoT writes (a registration is four) could leave a broker on the
    # files of the burst's first write (seen in CI: a new vase refused for seconds). A second
    # signal this long after the burst's last write makes the broker load the final files.
    TRAILING_RELOAD_SECONDS = 0.25

    def _reload_brokers(self):
        self._signal_brokers()
        trailing = getattr(self, "_trailing", None)
        if trailing is not None:
            trailing.cancel()
        self._trailing = threading.Timer(self.TRAILING_RELOAD_SECONDS, self._signal_brokers)
        self._trailing.daemon = True
        self._trailing.start()

    def _signal_brokers(self):
        for pid_file in glob.glob(os.path.join(self.dir, "brokers", "*.pid")):
            try:
                with open(pid_file) as f:
                    pid = int(f.read().strip())
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() != "mosquitto":  # the broker exited and its pid was reused
                        continue
                os.kill(pid, signal.SIGHUP)
            except (OSError, ValueError):
                pass  # a broker that exited without removing its pid file


def _iot_backends():
    for accounts in list(iot_backends.values()):
        yield from list(accounts.values())


_ACL_ACCESS = {"iot:Publish": ("write",), "iot:Receive": ("read",), "iot:*": ("write", "read")}


def _acl_lines(document, thing):
    """The acl lines one policy gives THING: Publish is `write`, Receive `read` (Mosquitto
    2.0's acl_file does not check SUBSCRIBE; a `read` is what lets a message be delivered).
    Resources with IoT wildcards, MQTT wildcards or another policy variable are left out, and
    Deny statements are not mirrored (the template has neither)."""
    try:
        document = json.loads(document) if isinstance(document, str) else document
    except ValueError:
        return
    as_list = lambda value: value if isinstance(value, list) else [value]
    for statement in as_list(document.get("Statement", [])):
        if statement.get("Effect") != "Allow":
            continue
        for action in as_list(statement.get("Action", [])):
            for access in _ACL_ACCESS.get(action, ()):
                for resource in as_list(statement.get("Resource", [])):
                    if ":topic/" not in resource:
                        continue
                    topic = resource.split(":topic/", 1)[1].replace(_THING_NAME, thing)
                    if "${" not in topic and not any(c in "*?#+" or c.isspace() for c in topic):
                        yield f"topic {access} {topic}"


# The CA in use, set by install_iot_ca; the replacements below are moto's own code until then.
_iot_ca = None
_original_generate_certificate_pem = IoTBackend._generate_certificate_pem
_original_create_certificate_from_csr = IoTBackend.create_certificate_from_csr
_original_compute_cert_id = FakeCertificate.compute_cert_id


def _generate_certificate_pem(self, domain_name, subject, key=None):
    if _iot_ca is None:
        return _original_generate_certificate_pem(self, domain_name, subject, key)
    return _iot_ca.issue((key or ec.generate_private_key(ec.SECP256R1())).public_key())


def _create_certificate_from_csr(self, csr, set_as_active):
    if _iot_ca is None:
        return _original_create_certificate_from_csr(self, csr, set_as_active)
    pem = _iot_ca.issue(x509.load_pem_x509_csr(csr.encode()).public_key())  # the requester's key
    return self.register_certificate(pem, ca_certificate_pem=None, set_as_active=set_as_active, status="INACTIVE")


def _compute_cert_id(self, certificate_pem):
    # moto hashes the PEM; a certificate of the local CA is named by its CN, as chosen in issue()
    local = _iot_ca.certificate_id(certificate_pem) if _iot_ca else None
    return local or _original_compute_cert_id(self, certificate_pem)


IoTBackend._generate_certificate_pem = _generate_certificate_pem
IoTBackend.create_certificate_from_csr = _create_certificate_from_csr
FakeCertificate.compute_cert_id = _compute_cert_id


def install_iot_ca(directory):
    """Issues IoT certificates from the CA in DIRECTORY from now on, and writes Mosquitto's
    files for the current state (an empty CRL and the bridge's acl at start)."""
    global _iot_ca
    _iot_ca = LocalIotCa(directory)
    _iot_ca.sync()
    return _iot_ca


class IotBrokerSync:
    """Brings Mosquitto's files up to date after each IoT request that may change state, before
    the caller has the answer (the brokers then reload within milliseconds, not at once)."""

    def __init__(self, app, ca):
        self.app = app
        self.ca = ca

    def __call__(self, environ, start_response):
        writes = environ.get("REQUEST_METHOD") != "GET" and (
            "/iot/aws4_request" in environ.get("HTTP_AUTHORIZATION", "")  # the SigV4 scope names the service
            or environ.get("PATH_INFO", "").startswith("/moto-api/")  # a reset forgets every certificate
        )
        if not writes:
            return self.app(environ, start_response)
        answer = list(self.app(environ, start_response))
        self.ca.sync()
        return answer


class SentMail:
    """`GET /_aws/ses`: the messages SES accepted, as LocalStack lists them (moto keeps them in
    its SES backends; nothing is delivered). `?email=` keeps those from one sender."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != "/_aws/ses" or environ.get("REQUEST_METHOD") != "GET":
            return self.app(environ, start_response)
        from urllib.parse import parse_qs

        from moto.ses.models import ses_backends

        sender = parse_qs(environ.get("QUERY_STRING", "")).get("email", [None])[0]
        messages = []
        for account, regions in ses_backends.items():
            for region, backend in regions.items():
                for message in backend.sent_messages:
                    source = getattr(message, "source", None)
                    if sender and source != sender:
                        continue
                    body = getattr(message, "body", None) or getattr(message, "raw_data", "")
                    messages.append({
                        "Id": message.id,
                        "Region": region,
                        "Source": source,
                        "Destination": getattr(message, "destinations", None),
                        "Subject": getattr(message, "subject", None),
                        "Body": {"html_part": body},
                    })
        answer = json.dumps({"messages": messages}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))])
        return [answer]


# S3's POST policy (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html).
from moto.s3.responses import S3Response  # noqa: E402

_original_bucket_response_post = S3Response._bucket_response_post
# Fields S3 does not require a condition for.
_POST_FIELDS_WITHOUT_CONDITION = {"policy", "x-amz-signature", "file", "submit"}


def _s3_error(status, code, message):
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        f"<RequestId>{secrets.token_hex(8).upper()}</RequestId></Error>"
    )
    return status, {"Content-Type": "application/xml"}, body


def _hmac(key, text):
    import hmac

    return hmac.new(key, text.encode(), "sha256").digest()


def post_policy_refusal(bucket, fields, size, now=None):
    """Why S3 would refuse a form upload to `bucket` with `fields` (the form's fields but the
    file, names as sent) and a file of `size` bytes; None when it would take it."""
    import hmac

    lower = {name.lower(): value for name, value in fields.items()}
    try:
        policy_text = base64.b64decode(lower["policy"]).decode()
        policy = json.loads(policy_text)
    except (KeyError, ValueError):
        return _s3_error(400, "InvalidPolicyDocument", "Invalid Policy: Invalid JSON.")
    # The signature: SigV4's key for the credential's date, region and service, over the
    # policy as sent (base64).
    credential = lower.get("x-amz-credential", "").split("/")
    if lower.get("x-amz-algorithm") != "AWS4-HMAC-SHA256" or len(credential) != 5:
        return _s3_error(400, "InvalidArgument", "POST requires x-amz-algorithm AWS4-HMAC-SHA256 and x-amz-credential")
    _, date, region, service, _ = credential
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "test")
    key = _hmac(("AWS4" + secret).encode(), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, lower["policy"].encode(), "sha256").hexdigest()
    if not hmac.compare_digest(expected, lower.get("x-amz-signature", "")):
        return _s3_error(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
    expiration = datetime.datetime.fromisoformat(policy.get("expiration", "").replace("Z", "+00:00"))
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if expiration < now:
        return _s3_error(403, "AccessDenied", "Invalid according to Policy: Policy expired.")
    covered = set()
    for condition in policy.get("conditions", []):
        if isinstance(condition, dict):
            ((name, value),) = condition.items()
            condition = ["eq", "$" + name, value]
        operator = str(condition[0]).lower()
        if operator == "content-length-range":
            low, high = int(condition[1]), int(condition[2])
            if size > high:
                return _s3_error(400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
            if size < low:
                return _s3_error(400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
            continue
        name = str(condition[1]).lstrip("$").lower()
        covered.add(name)
        actual = bucket if name == "bucket" else lower.get(name)
        holds = actual is not None and (
            actual == condition[2] if operator == "eq" else actual.startswith(condition[2])
        )
        if not holds:
            shown = json.dumps([operator, "$" + name, condition[2]])
            return _s3_error(403, "AccessDenied", f"Invalid according to Policy: Policy Condition failed: {shown}")
    extra = [
        name for name in lower
        if name not in covered and name not in _POST_FIELDS_WITHOUT_CONDITION
        and not name.startswith("x-ignore-") and name not in ("x-amz-algorithm", "x-amz-credential", "x-amz-date")
    ]
    if extra:
        return _s3_error(403, "AccessDenied", f"Invalid according to Policy: Extra input fields: {extra[0]}")
    return None


def _bucket_response_post(self, request, bucket_name):
    # The form's own fields (moto adds its own names to `querystring`).
    fields = {name: value for name, value in (self.form_data or {}).items()}
    if any(name.lower() == "policy" for name in fields):
        body = self.body if isinstance(self.body, (bytes, bytearray)) else str(self.body or "").encode()
        refusal = post_policy_refusal(bucket_name, fields, len(body))
        if refusal:
            return refusal
    return _original_bucket_response_post(self, request, bucket_name)


S3Response._bucket_response_post = _bucket_response_post


def wsgi_app():
    app = SentMail(DomainDispatcherApplication(create_backend_app))
    if os.environ.get("BOUQUET_IOT_DIR"):
        app = IotBrokerSync(app, install_iot_ca(os.environ["BOUQUET_IOT_DIR"]))
    return NoDynamoDB(app)


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_simple(host, port, wsgi_app(), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
