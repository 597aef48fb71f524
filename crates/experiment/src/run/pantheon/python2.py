"""How emu reads a Pantheon checkout's Python 2 modules under Python 3.

Pantheon's wrappers and helpers (`src/helpers`: utils, kernel_ctl,
subprocess_wrappers) are Python 2. Each checkout module is read as
written, in memory, with four readings of Python 2 and nothing else:

- `print x, y` statements are read as calls (only where Python 3 refuses
  the module as it is);
- an implicit relative import (`from subprocess_wrappers import call` in
  helpers/kernel_ctl.py) names the sibling module it meant, except
  `context` and `arg_parser`, which are emu's everywhere (the wrappers'
  and the helpers' alike);
- the Python 2 names `unicode`, `basestring`, `long`, `xrange`,
  `raw_input` are Python 3's `str`, `str`, `int`, `range`, `input`;
- `subprocess.check_output` gives text, as Python 2's `str` was, unless
  the caller asked for text or bytes itself.

The cost: one parse of each module more than Python would do, and a
module Python 3 cannot read even so fails as Python reports it.
"""
import ast
import builtins
import io
import os
import subprocess
import tokenize
import types

# Modules of emu's own that replace the checkout's under any package.
EMU_MODULES = ('context', 'arg_parser')


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


def parse(source, path):
    """The module's syntax tree, its `print` statements read as calls if
    Python 3 refuses it as it is."""
    try:
        return ast.parse(source, path)
    except SyntaxError as error:
        try:
            return ast.parse(print_calls(source), path)
        except (SyntaxError, tokenize.TokenError):
            raise error


def siblings(path):
    """The modules beside `path` in its package (none outside a package)."""
    directory = os.path.dirname(path)
    if not os.path.isfile(os.path.join(directory, '__init__.py')):
        return set()
    names = set()
    for entry in os.listdir(directory):
        stem, extension = os.path.splitext(entry)
        if extension == '.py' and stem != '__init__':
            names.add(stem)
        elif os.path.isfile(os.path.join(directory, entry, '__init__.py')):
            names.add(entry)
    return names - set(EMU_MODULES)


class RelativeImports(ast.NodeTransformer):
    """Python 2's implicit relative imports of `names` made explicit."""

    def __init__(self, names):
        self.names = names

    def visit_ImportFrom(self, node):
        if node.level == 0 and node.module and node.module.split('.')[0] in self.names:
            node.level = 1
        return node

    def visit_Import(self, node):
        local = [a for a in node.names if a.name in self.names]
        if not local:
            return node
        others = [a for a in node.names if a.name not in self.names]
        made = [ast.ImportFrom(module=None, names=local, level=1)]
        if others:
            made.append(ast.Import(names=others))
        return [ast.copy_location(n, node) for n in made]


def compile_source(source, path):
    """`source` (the module at `path`) compiled as Python 2 meant it."""
    tree = parse(source, path)
    local = siblings(path)
    if local:
        tree = ast.fix_missing_locations(RelativeImports(local).visit(tree))
    return compile(tree, path, 'exec', dont_inherit=True)


def check_output(*args, **kwargs):
    """Python 2's `subprocess.check_output`: the output as text."""
    output = subprocess.check_output(*args, **kwargs)
    if isinstance(output, bytes):
        return output.decode('utf-8', 'surrogateescape')
    return output


def text_subprocess():
    """`subprocess` as a Python 2 module sees it."""
    module = types.ModuleType('subprocess', subprocess.__doc__)
    module.__dict__.update(
        (k, v) for k, v in vars(subprocess).items() if not k.startswith('__'))

    def text_check_output(*args, **kwargs):
        asked = {'text', 'universal_newlines', 'encoding', 'errors'}
        if asked & set(kwargs):
            return subprocess.check_output(*args, **kwargs)
        return check_output(*args, **kwargs)
    module.check_output = text_check_output
    return module


def python2_builtins():
    """The builtins a checkout module runs with."""
    names = dict(vars(builtins))
    names.update(unicode=str, basestring=str, long=int, xrange=range,
                 raw_input=input)
    replaced = {'subprocess': text_subprocess()}
    real_import = builtins.__import__

    def python2_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name in replaced:
            return replaced[name]
        return real_import(name, globals, locals, fromlist, level)
    names['__import__'] = python2_import
    return names


BUILTINS = python2_builtins()


def run_module(code, scope):
    """Runs a checkout module's `code` in `scope` with Python 2's names."""
    scope['__builtins__'] = BUILTINS
    exec(code, scope)

