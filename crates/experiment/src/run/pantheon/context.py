"""emu's own context module for Pantheon scheme wrappers (Python 3).

The directories of the Pantheon checkout the running wrapper lives in
(CHECKOUT/src/wrappers/SCHEME.py): `src_dir` (CHECKOUT/src, also put on
the module path, so the checkout's own packages import) and
`third_party_dir` (CHECKOUT/third_party, where the schemes are built).
"""
import os
import sys

wrappers_dir = os.path.dirname(os.path.abspath(sys.argv[0]))
src_dir = os.path.dirname(wrappers_dir)
base_dir = os.path.dirname(src_dir)
third_party_dir = os.path.join(base_dir, 'third_party')
if src_dir not in sys.path:
    sys.path.append(src_dir)
