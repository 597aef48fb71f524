"""Runs a Pantheon scheme wrapper as its checkout has it, under Python 3.

    python3 launch.py WRAPPER ARGUMENT...

The wrapper gets emu's own `arg_parser` and `context` modules (they sit
next to this file) in place of its checkout's, which Python 3 may not
read. The wrapper itself, and any module it imports from its checkout,
is read as written; where Python 3 refuses it, its Python 2 `print`
statements are read as calls and it is tried once more (nothing else of
Python 2 is translated). Nothing is written into the checkout: no
bytecode is cached.
"""
import builtins
import importlib.machinery
import importlib.util
import io
import os
import sys
import tokenize

sys.dont_write_bytecode = True


def print_calls(source):
    """`print x, y` as `print(x, y)`, wherever a statement starts with it."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    inserts = []
    starts = True
    for i, token in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if (starts and token.type == tokenize.NAME and token.string == 'print'
                and after is not None
                and not (after.type == tokenize.OP and after.string in '(=.')):
            last = token
            for later in tokens[i + 1:]:
                if later.type == tokenize.NEWLINE or (
                        later.type == tokenize.OP and later.string == ';'):
                    break
                if later.type not in (tokenize.COMMENT, tokenize.NL):
                    last = later
            inserts.append((token.end, '('))
            inserts.append((last.end, ')'))
        starts = token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT,
                                tokenize.DEDENT) or (
            token.type == tokenize.OP and token.string in (':', ';'))
    lines = source.splitlines(keepends=True)
    for (row, column), text in sorted(inserts, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:column] + text + line[column:]
    return ''.join(lines)


def compile_source(source, path):
    try:
        return compile(source, path, 'exec', dont_inherit=True)
    except SyntaxError as error:
        try:
            return compile(print_calls(source), path, 'exec', dont_inherit=True)
        except (SyntaxError, tokenize.TokenError):
            raise error


class CheckoutLoader(importlib.machinery.SourceFileLoader):
    """Reads a module of the wrapper's checkout as `compile_source` does."""

    def source_to_code(self, data, path, *, _optimize=-1):
        return compile_source(importlib.util.decode_source(data), path)


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
        code = compile_source(file.read(), wrapper)
    scope = {'__name__': '__main__', '__file__': wrapper, '__builtins__': builtins}
    exec(code, scope)


if __name__ == '__main__':
    main()
