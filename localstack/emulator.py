"""The offline AWS emulator: moto's server, with one correction.

moto's server is threaded and its DynamoDB backend takes no lock, so two concurrent
TransactWriteItems can both pass their condition checks before either writes (seen here:
20 concurrent reservations with one idempotency key produced two orders). Real DynamoDB
evaluates each request's conditions and writes atomically. Serialising DynamoDB requests
restores that guarantee; other services (SQS long polls among them) stay concurrent.

Usage: emulator.py HOST PORT
"""

import signal
import sys
import threading

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


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, SerialDynamoDB(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
