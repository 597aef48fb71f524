#!/usr/bin/env python
"""A scheme for emu's tests that moves no data: both sides wait until
they are stopped, as a scheme whose receiver never hears its sender
would look."""
import time

import arg_parser


def main():
    args = arg_parser.receiver_first()
    if args.option in ('receiver', 'sender'):
        while True:
            time.sleep(1)


if __name__ == '__main__':
    main()
