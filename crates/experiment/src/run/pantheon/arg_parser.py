"""emu's own arg_parser for Pantheon scheme wrappers (Python 3).

A wrapper calls receiver_first() or sender_first() and acts on the
arguments it gets back: `option` (deps, run_first, setup,
setup_after_reboot, receiver, sender), with `port` for the side that runs
first and `ip` and `port` for the other. For `run_first` the side that
runs first is printed, which is how a runner learns it.
"""
import argparse
import sys

SIDES = ('receiver', 'sender')


def parse_wrapper_args(run_first):
    if run_first not in SIDES:
        sys.exit('run_first must be "receiver" or "sender", not %r' % (run_first,))
    other = 'sender' if run_first == 'receiver' else 'receiver'
    parser = argparse.ArgumentParser(
        description='A congestion-control scheme in Pantheon\'s wrapper interface.')
    options = parser.add_subparsers(dest='option')
    for name, text in (
            ('deps', 'print the packages the scheme needs to build, on one line'),
            ('run_first', 'print which side runs first (receiver or sender)'),
            ('setup', 'build the scheme (once)'),
            ('setup_after_reboot', 'set the scheme up again after a reboot')):
        options.add_parser(name, help=text)
    first = options.add_parser(run_first, help='run the %s, which starts first' % run_first)
    first.add_argument('port', help='port to listen on')
    second = options.add_parser(other, help='run the %s, which starts second' % other)
    second.add_argument('ip', metavar='IP', help='address of the %s' % run_first)
    second.add_argument('port', help='port of the %s' % run_first)
    args = parser.parse_args()
    if args.option is None:
        parser.error('say what to do: ' + ', '.join(options.choices))
    if args.option == 'run_first':
        print(run_first)
        sys.stdout.flush()
    return args


def receiver_first():
    return parse_wrapper_args('receiver')


def sender_first():
    return parse_wrapper_args('sender')
