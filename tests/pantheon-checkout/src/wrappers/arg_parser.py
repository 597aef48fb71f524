# A stand-in for the arg_parser of a Pantheon checkout, in Python 2 as
# Pantheon's is: Python 3 cannot read this file. emu runs wrappers with its
# own arg_parser in place of it; a test fails if this one is ever imported.
import sys


def receiver_first():
    print "this checkout's own arg_parser was imported"
    sys.exit(3)


def sender_first():
    return receiver_first()
