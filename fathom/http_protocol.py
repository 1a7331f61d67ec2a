"""uvicorn's HTTP/1.1 protocol (h11), except that a request it cannot read is answered with the API's
JSON error envelope: 431 when the request line and headers outgrow MAX_REQUEST_HEAD_BYTES, 400 for
anything else h11 refuses. `fathom up` runs uvicorn with `uvicorn_args()`."""

import json

import h11
from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
from uvicorn.protocols.http.h11_impl import H11Protocol as UvicornH11Protocol

# h11 refuses a request head (request line and headers) still incomplete past this many bytes. One
# that arrives whole in a single read (uvicorn reads up to 256 KiB at a time) is accepted even when
# larger, so this is the size a client can count on, not a promise to refuse everything above it.
MAX_REQUEST_HEAD_BYTES = 64 * 1024


def uvicorn_args() -> list[str]:
    return ["--http", f"{__name__}:H11Protocol", "--h11-max-incomplete-event-size", str(MAX_REQUEST_HEAD_BYTES)]


class H11Protocol(UvicornH11Protocol):
    def send_400_response(self, msg: str) -> None:
        limit = self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        buffered, _ = self.conn.trailing_data
        if len(buffered) > limit:
            status, code = 431, "request_head_too_large"
            message = f"the request line and headers are larger than {limit:,} bytes; send long values in a JSON body"
        else:
            status, code, message = 400, "bad_request", "the request is not valid HTTP/1.1"
        body = json.dumps({"error": {"code": code, "message": message, "details": {}}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()
