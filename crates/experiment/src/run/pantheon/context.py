"""emu's own context module for Pantheon scheme wrappers (Python 3).

The directories of the Pantheon checkout the running wrapper lives in
(CHECKOUT/src/wrappers/SCHEME.py): `src_dir` (CHECKOUT/src, also put on
the module path, so the checkout's own packages import) and
`third_party_dir` (CHECKOUT/third_party, where the schemes are built).
`base_dir`, under which Pantheon's helpers keep their scratch directory
(`utils.tmp_dir`, BASE/tmp, made on import), is not the checkout but the
directory emu names in EMU_PANTHEON_BASE (a run's own), else `base`
beside this file: nothing is written into the checkout.
"""
import os
import sys

wrappers_dir = os.path.dirname(os.path.abspath(sys.argv[0]))
src_dir = os.path.dirname(wrappers_dir)
third_party_dir = os.path.join(os.path.dirname(src_dir), 'third_party')
base_dir = os.environ.get('EMU_PANTHEON_BASE') or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'base')
if src_dir not in sys.path:
    sys.path.append(src_dir)
