# A helper of the checkout's own in the Python 2 of Pantheon's helpers: an
# implicit relative import, `unicode`, `xrange`, and `check_output`'s
# answer used as text.
import subprocess

from announce import where


def check(third_party_dir):
    answer = subprocess.check_output(['echo', 'key = value'])
    assert answer.split('=')[-1].strip() == 'value'
    assert isinstance(answer, unicode) and list(xrange(2)) == [0, 1]
    where(third_party_dir)
