#!/usr/bin/env python3
"""Checks python/tests/sanitize_subset.txt against the test files without
running them (no torch, pytest or GPU needed): every listed node id must
name a test function of its file, and a parametrized id must be one that
pytest generates from the function's `@pytest.mark.parametrize` literals.
A stale id makes `scripts/gpu-run.sh --sanitize` stop before any test runs
(pytest exit 4), which is only seen on the GPU machine.

    scripts/check-sanitize-subset.py [TESTS_DIR [SUBSET_FILE]]

(defaults: python/tests and its sanitize_subset.txt; node ids are
relative to TESTS_DIR).

Exits 1 and names each bad line; ids it cannot decide (parameters from
variables, fixtures or explicit ids) are accepted when the function exists.
"""

from __future__ import annotations

import ast
import itertools
import os
import sys


def read_subset(path):
    ids = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if line:
                ids.append((number, line))
    return ids


class Undecidable(Exception):
    pass


def evaluate(node, names):
    """The value of a literal expression: constants, lists and tuples,
    arithmetic, module-level names bound to such, range(), float('inf')."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [evaluate(element, names) for element in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, names)
    if isinstance(node, ast.BinOp):
        operations = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                      ast.Mult: lambda a, b: a * b, ast.LShift: lambda a, b: a << b,
                      ast.FloorDiv: lambda a, b: a // b}
        operation = operations.get(type(node.op))
        if operation:
            return operation(evaluate(node.left, names), evaluate(node.right, names))
    if isinstance(node, ast.Name) and node.id in names:
        return evaluate(names[node.id], names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        arguments = [evaluate(argument, names) for argument in node.args]
        if node.func.id == "range":
            return list(range(*arguments))
        if node.func.id == "float" and len(arguments) == 1 and isinstance(arguments[0], str):
            return float(arguments[0])
    raise Undecidable()


def pytest_id(value, argname, index):
    """pytest's default id of one parameter value: scalars as text, other
    objects as the argument's name and the case's index. (Strings pytest
    would escape, bytes and complex numbers are left undecided.)"""
    if isinstance(value, str) and not (value.isascii() and value.isprintable()):
        raise Undecidable()
    if isinstance(value, (bool, int, float, str)) or value is None:
        return str(value)
    if isinstance(value, (bytes, complex)):
        raise Undecidable()
    return f"{argname}{index}"


def parametrize_ids(decorator, names):
    """The ids of one @pytest.mark.parametrize(argnames, values) decorator
    ([] for another decorator); Undecidable when not computable here."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "parametrize"):
        return []
    if any(keyword.arg == "ids" for keyword in decorator.keywords) or len(decorator.args) < 2:
        raise Undecidable()
    argnames = evaluate(decorator.args[0], names)
    # Names as a sequence (even of one) unpack each value; a string of one
    # name does not.
    unpack = not isinstance(argnames, str) or "," in argnames
    if isinstance(argnames, str):
        argnames = [name.strip() for name in argnames.split(",") if name.strip()]
    values = evaluate(decorator.args[1], names)
    ids = []
    for index, value in enumerate(values):
        items = value if unpack else [value]
        if not isinstance(items, list) or len(items) != len(argnames):
            raise Undecidable()
        ids.append("-".join(pytest_id(item, argname, index)
                            for item, argname in zip(items, argnames)))
    # pytest makes repeated ids unique with suffixes (1_0, 1_1): not modelled.
    if len(set(ids)) != len(ids):
        raise Undecidable()
    return ids


def function_ids(function, names):
    """Every id pytest gives `function`'s cases ([] when unparametrized),
    or None when they cannot be computed. The decorator nearest the
    function comes first in an id."""
    per_decorator = []
    try:
        for decorator in reversed(function.decorator_list):
            ids = parametrize_ids(decorator, names)
            if ids:
                per_decorator.append(ids)
    except (Undecidable, TypeError, ValueError, RecursionError):
        return None
    if not per_decorator:
        return []
    return ["-".join(combo) for combo in itertools.product(*per_decorator)]


def main(argv):
    tests = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests")
    subset = argv[2] if len(argv) > 2 else os.path.join(tests, "sanitize_subset.txt")
    modules = {}
    bad = []
    for number, node in read_subset(subset):
        file_name, _, rest = node.partition("::")
        name, _, params = rest.partition("[")
        params = params[:-1] if params.endswith("]") else params
        path = os.path.join(tests, file_name)
        if not os.path.isfile(path):
            bad.append(f"{subset}:{number}: {node}: no file {file_name}")
            continue
        if path not in modules:
            with open(path) as f:
                modules[path] = ast.parse(f.read(), path)
        body = modules[path].body
        functions = {f.name: f for f in body
                     if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        names = {target.id: statement.value for statement in body
                 if isinstance(statement, ast.Assign)
                 for target in statement.targets if isinstance(target, ast.Name)}
        function = functions.get(name)
        if function is None:
            bad.append(f"{subset}:{number}: {node}: {file_name} has no test {name}")
            continue
        ids = function_ids(function, names)
        if ids is None:
            continue  # undecidable here: accepted
        if not params and ids:
            bad.append(f"{subset}:{number}: {node}: {name} is parametrized; name a case")
        elif params and params not in ids:
            shown = ", ".join(ids[:6]) + (", ..." if len(ids) > 6 else "")
            bad.append(f"{subset}:{number}: {node}: no case [{params}] "
                       f"(pytest ids: {shown or 'none, it is not parametrized'})")
    for line in bad:
        print(line, file=sys.stderr)
    if not bad:
        print(f"sanitize subset: {len(read_subset(subset))} node ids checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
