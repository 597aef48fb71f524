#!/usr/bin/env python3
"""A scheme in Pantheon's wrapper interface, small enough to read in full:
the receiver runs first and listens; the sender connects and writes as
fast as TCP Reno lets it until it is stopped. It stands in for a real
Pantheon scheme in emu's tests and in experiments/pantheon-vs-cubic.toml;
any of Pantheon's own wrappers (src/wrappers/*.py) takes its place.

    reno_stream.py run_first          -> prints "receiver"
    reno_stream.py receiver PORT      -> listens on PORT, discards what comes
    reno_stream.py sender IP PORT     -> sends to IP:PORT until killed
"""
import socket
import sys

CONGESTION_CONTROL = b"reno"


def receiver(port):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(1)
    connection, _ = listener.accept()
    while connection.recv(1 << 16):
        pass


def sender(ip, port):
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL)
    connection.connect((ip, port))
    chunk = b"\0" * (1 << 16)
    while True:
        connection.sendall(chunk)


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "deps":
        print("")
    elif command in ("setup", "setup_after_reboot"):
        pass
    elif command == "run_first":
        print("receiver")
    elif command == "receiver" and len(sys.argv) == 3:
        receiver(int(sys.argv[2]))
    elif command == "sender" and len(sys.argv) == 4:
        sender(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError, ConnectionResetError):
        pass
