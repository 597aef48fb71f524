"""Runs a Pantheon scheme wrapper as its checkout has it, under Python 3.

    python3 launch.py WRAPPER ARGUMENT...

The wrapper gets emu's own `arg_parser` and `context` modules (they sit
next to this file) in place of its checkout's, which Python 3 may not
read. The wrapper itself, and any module it imports from its checkout
(its helpers), is read as written, as `python2` says: Python 2's print
statements, implicit relative imports, builtins and text from
`check_output`. Nothing is written into the checkout: no bytecode is
cached.
"""
import importlib.machinery
import importlib.util
import os
import sys

import python2

sys.dont_write_bytecode = True


class CheckoutLoader(importlib.machinery.SourceFileLoader):
    """Reads a module of the wrapper's checkout as Python 2 meant it."""

    def source_to_code(self, data, path, *, _optimize=-1):
        return python2.compile_source(importlib.util.decode_source(data), path)

    def exec_module(self, module):
        python2.run_module(self.get_code(module.__name__), module.__dict__)


def checkout_hook(directories):
    finder = importlib.machinery.FileFinder.path_hook(
        (CheckoutLoader, importlib.machinery.SOURCE_SUFFIXES))

    def hook(entry):
        entry = os.path.abspath(entry)
        if any(entry == d or entry.startswith(d + os.sep) for d in directories):
            return finder(entry)
        raise ImportError('not in the checkout')
    return hook


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    here = os.path.dirname(os.path.abspath(__file__))
    wrapper = os.path.abspath(sys.argv[1])
    wrappers_dir = os.path.dirname(wrapper)
    sys.argv = [wrapper] + sys.argv[2:]
    sys.path[0:1] = [here, wrappers_dir]
    import arg_parser  # noqa: F401 (emu's, before the checkout's)
    import context
    checkout = {wrappers_dir, os.path.abspath(context.src_dir)}
    sys.path_hooks.insert(0, checkout_hook(checkout))
    sys.path_importer_cache.clear()
    with open(wrapper, encoding='utf-8') as file:
        code = python2.compile_source(file.read(), wrapper)
    python2.run_module(code, {'__name__': '__main__', '__file__': wrapper})


if __name__ == '__main__':
    main()
