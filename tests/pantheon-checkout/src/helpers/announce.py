# A module of the checkout's own, in Python 2 as Pantheon's helpers are.


def where(third_party_dir):
    print 'third_party is', third_party_dir
