#!/usr/bin/env python
"""A TCP scheme for emu's tests, laid out as a Pantheon wrapper is (it
imports its checkout's `arg_parser`): the sender runs first and listens on
PORT; the receiver connects and reads. The sender writes at most 6 Mbit/s,
paced by the application, so it sits apart from a bulk flow.
"""
import socket
import time

import arg_parser

RATE_BPS = 6000000
CHUNK = 15000


def sender(port):
    connection, _ = socket.create_server(('0.0.0.0', port)).accept()
    gap = CHUNK * 8.0 / RATE_BPS
    chunk = b'\0' * CHUNK
    due = time.time()
    while True:
        connection.sendall(chunk)
        due += gap
        wait = due - time.time()
        if wait > 0:
            time.sleep(wait)


def receiver(ip, port):
    connection = socket.create_connection((ip, port))
    while connection.recv(1 << 16):
        pass


def main():
    args = arg_parser.sender_first()
    if args.option == 'sender':
        sender(int(args.port))
    elif args.option == 'receiver':
        receiver(args.ip, int(args.port))


if __name__ == '__main__':
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError, ConnectionResetError):
        pass
