"""A client of emu's control socket, protocol version 1, with Python's
standard library alone.

    emu --control /tmp/emu.sock link 20mbit -- CMD      # in one terminal
    >>> from emu_control import EmuControl
    >>> emu = EmuControl("/tmp/emu.sock")
    >>> emu.set({"0.uplink.rate": "5mbit", "0.uplink.delay": "30ms"})
    1234567890                      # the run time (ns) the change took effect
    >>> emu.get("0.uplink")["0.uplink"]["queue_packets"]

The protocol is one JSON object a line each way (docs/guide.md,
"Steering a running path"); telemetry lines of a subscription come
between the replies, and are kept for `readings` while a reply is awaited.
"""

import collections
import json
import socket

VERSION = 1


class Refused(Exception):
    """emu refused a request; the message is its one line saying why."""


class EmuControl:
    def __init__(self, address):
        """Connects to a control socket: a path, or tcp:PORT / tcp:HOST:PORT."""
        if address.startswith("tcp:"):
            host, _, port = address[4:].rpartition(":")
            self._socket = socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)))
        else:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._socket.connect(address)
        self._file = self._socket.makefile("rw", encoding="utf-8", newline="\n")
        self._telemetry = collections.deque()
        greeting = self._line()
        if greeting is None or greeting.get("emu_control") != VERSION:
            raise ConnectionError(f"{address} does not speak emu's control protocol version {VERSION}")
        self.elements = greeting["elements"]

    def _line(self):
        line = self._file.readline()
        return json.loads(line) if line else None

    def request(self, op, **fields):
        """Sends one request; its reply (a dict), or Refused."""
        self._file.write(json.dumps({"v": VERSION, "op": op, **fields}) + "\n")
        self._file.flush()
        while True:
            reply = self._line()
            if reply is None:
                raise ConnectionError("emu closed the socket (the run ended?)")
            if reply.get("event") == "telemetry":
                self._telemetry.append(reply)
                continue
            if not reply.get("ok"):
                raise Refused(reply.get("error", "no reason given"))
            return reply

    def get(self, *elements):
        """Settings and counters by element (all when none are named)."""
        return self.request("get", elements=list(elements))["elements"]

    def set(self, settings, after=None, at=None):
        """Sets {"SHELL.DIRECTION.SETTING": VALUE, ...} at one instant: now,
        `after` a time ("500ms"), or `at` a run time ("12s"). Returns the
        run time in ns the change takes effect at."""
        fields = {"set": settings}
        if after is not None:
            fields["after"] = after
        if at is not None:
            fields["at"] = at
        return self.request("set", **fields)["at_ns"]

    def watch(self, every="100ms", elements=()):
        """Subscribes to telemetry every `every` (at least 10ms)."""
        return self.request("watch", every=every, elements=list(elements))

    def unwatch(self):
        return self.request("unwatch")

    def reading(self):
        """The next telemetry reading of the subscription (blocks)."""
        if self._telemetry:
            return self._telemetry.popleft()
        reading = self._line()
        if reading is None:
            raise ConnectionError("emu closed the socket (the run ended?)")
        return reading

    def close(self):
        self._file.close()
        self._socket.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()
