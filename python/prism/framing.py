"""JSON-RPC messages in the LSP base protocol's framing (docs/protocol.md): a
`Content-Length: N` header block, then N bytes of UTF-8 JSON."""
import json


def encode(message):
    """The bytes of one framed message."""
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameReader:
    """Accepts bytes as the socket delivers them; pop() yields each complete message."""

    def __init__(self):
        self._buffer = b""

    def feed(self, data):
        self._buffer += data

    def pop(self):
        """The next complete message as a dict, or None when more bytes are needed."""
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        length = None
        for line in self._buffer[:end].split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None:
            raise ValueError("a frame without Content-Length")
        start = end + 4
        if len(self._buffer) < start + length:
            return None
        body = self._buffer[start:start + length]
        self._buffer = self._buffer[start + length:]
        return json.loads(body)
