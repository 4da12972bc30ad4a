"""What the typed-renderer tests look for in a module's syntax tree: functions, their parameters, and
reads by a literal string key (``x["name"]``, ``x.get("name")``) with the name of what they read."""

from __future__ import annotations

import ast


def functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    args = fn.args
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]


def root(node: ast.expr) -> str:
    """The name a lookup chain starts from: ``a["x"][0]["y"]`` -> a; ``block.scalars`` -> scalars."""
    while isinstance(node, (ast.Subscript, ast.Call)):
        node = node.value if isinstance(node, ast.Subscript) else node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def literal_key_reads(tree: ast.AST) -> list[tuple[ast.expr, str]]:
    """(the lookup, the name of what it reads) of every ``x["literal"]`` read and ``x.get("literal", ...)``
    call (f-strings and other expressions as keys are not literal field names)."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            found.append((node, root(node.value)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node, root(node.func.value)))
    return found
