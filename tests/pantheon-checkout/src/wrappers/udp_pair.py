#!/usr/bin/env python
"""A UDP scheme for emu's tests, laid out as a Pantheon wrapper is: it
imports its checkout's `arg_parser` and `context` (this checkout's are
Python 2), for its setup a module of the checkout's `src/helpers`, and
prints as Python 2 does. The receiver runs first and listens on PORT and
PORT+100; the sender sends 1000-byte datagrams at a steady
4 Mbit/s, alternating between two sockets, one to each port: one flow of
two 5-tuples, neither of them TCP.
"""
import select
import socket
import time

import arg_parser
import context

RATE_BPS = 4000000
SIZE = 1000
SECOND_PORT = 100


def receiver(port):
    sockets = []
    for p in (port, port + SECOND_PORT):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(('0.0.0.0', p))
        sockets.append(s)
    while True:
        ready, _, _ = select.select(sockets, [], [])
        for s in ready:
            s.recv(65536)


def sender(ip, port):
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    gap = SIZE * 8.0 / RATE_BPS
    payload = b'\0' * SIZE
    due = time.time()
    sent = 0
    while True:
        which = sent % 2
        sockets[which].sendto(payload, (ip, port + SECOND_PORT * which))
        sent += 1
        due += gap
        wait = due - time.time()
        if wait > 0:
            time.sleep(wait)


def main():
    args = arg_parser.receiver_first()
    if args.option == 'deps':
        print 'python3'
    elif args.option == 'setup':
        from helpers import idioms
        idioms.check(context.third_party_dir)
    elif args.option == 'receiver':
        receiver(int(args.port))
    elif args.option == 'sender':
        sender(args.ip, int(args.port))


if __name__ == '__main__':
    main()
