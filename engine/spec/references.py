"""Reference check (spec mode): before the sandbox runs, read the tests (AST only) and
find what would fail for a reason that is not the logic under test — a name imported from the
module that it does not define, a call to a name defined nowhere, a call whose arguments do not
fit the function's signature. Pure functions over source text: nothing is imported or run.

Scope is deliberately loose: a name bound anywhere in a test file counts as defined, calls on
objects (`obj.method()`) are never judged, and other modules' names are taken on trust.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

_BUILTINS = frozenset(dir(builtins))
_MODULE_DUNDERS = frozenset({"__file__", "__name__", "__doc__", "__spec__", "__builtins__"})


class Params(BaseModel):
    """What a function accepts, reduced to what decides whether a call fits."""

    model_config = ConfigDict(frozen=True)

    positional: list[str]  # positional-only and positional-or-keyword, in order
    positional_only: int = 0  # how many of `positional` cannot be passed by keyword
    keyword_only: list[str] = []
    required: list[str] = []  # names without a default
    varargs: bool = False
    varkw: bool = False
    text: str  # the signature as written: `parse_duration(text: str) -> int`

    @classmethod
    def of(
        cls, name: str, node: ast.FunctionDef | ast.AsyncFunctionDef, *, bound: bool = False
    ) -> Params:
        """The parameters of a def; `bound` drops the first one (self / cls of a method)."""
        args = node.args
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        defaults = len(args.defaults)
        required = positional[: len(positional) - defaults] if defaults else list(positional)
        keyword_defaults = zip(args.kwonlyargs, args.kw_defaults, strict=True)
        required += [a.arg for a, default in keyword_defaults if default is None]
        posonly = len(args.posonlyargs)
        if bound and positional:
            dropped = positional[0]
            positional = positional[1:]
            required = [r for r in required if r != dropped]
            posonly = max(posonly - 1, 0)
        returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
        shown = _without_first(args) if bound else args
        return cls(
            positional=positional,
            positional_only=posonly,
            keyword_only=[a.arg for a in args.kwonlyargs],
            required=required,
            varargs=args.vararg is not None,
            varkw=args.kwarg is not None,
            text=f"{name}({ast.unparse(shown)}){returns}",
        )

    def same_shape(self, other: Params) -> bool:
        """Whether every call that fits one fits the other (annotations aside)."""
        return (
            self.positional == other.positional
            and self.positional_only == other.positional_only
            and self.keyword_only == other.keyword_only
            and sorted(self.required) == sorted(other.required)
            and (self.varargs, self.varkw) == (other.varargs, other.varkw)
        )


def _without_first(args: ast.arguments) -> ast.arguments:
    """A method's parameters as its callers see them: without self."""
    copy = ast.arguments(**{field: getattr(args, field) for field in args._fields})
    if args.posonlyargs:
        copy.posonlyargs = args.posonlyargs[1:]
    elif args.args:
        copy.args = args.args[1:]
    return copy


def misfit(params: Params, call: ast.Call) -> str | None:
    """Why `call`'s arguments do not fit `params`, in words; None when they fit (or when the
    call spreads `*args` / `**kwargs`, which only running it can judge)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    given = len(call.args)
    if given > len(params.positional) and not params.varargs:
        takes = len(params.positional)
        return (
            f"takes {takes} positional argument{'s' if takes != 1 else ''} but {given} "
            f"{'were' if given != 1 else 'was'} given"
        )
    filled = set(params.positional[:given])
    by_keyword = set(params.positional[params.positional_only :]) | set(params.keyword_only)
    for keyword in call.keywords:
        name = keyword.arg or ""
        if name in filled:
            return f"gets {name!r} twice, by position and by keyword"
        if name not in by_keyword and not params.varkw:
            return f"has no parameter {name!r} that can be passed by keyword"
        filled.add(name)
    missing = [name for name in params.required if name not in filled]
    if missing:
        listed = ", ".join(repr(name) for name in missing)
        return f"is missing the required argument{'s' if len(missing) != 1 else ''} {listed}"
    return None


# --- what the module defines ------------------------------------------------------------------


@dataclass(frozen=True)
class ModuleNames:
    """The top-level names of a module; `params` for those whose calls can be checked."""

    names: frozenset[str]
    params: Mapping[str, Params]
    open: bool  # a star import or a module __getattr__: any name may exist

    def defines(self, name: str) -> bool:
        return self.open or name in self.names

    def listing(self) -> str:
        public = sorted(n for n in self.names if not n.startswith("_"))
        return ", ".join(public) if public else "nothing public"


def module_names(source: str) -> ModuleNames | None:
    """What a module's source defines at top level; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    params: dict[str, Params] = {}
    star = False
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
            params[node.name] = Params.of(node.name, node)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            init = _explicit_init(node)
            if init is not None:
                params[node.name] = Params.of(node.name, init, bound=True)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    star = True
                else:
                    names.add(alias.asname or alias.name.split(".")[0])
        else:
            names |= _stored_names(node)
    for name in list(params):  # rebound later (`f = cache(f)`): the def no longer decides
        if _rebinds(tree.body, name):
            del params[name]
    return ModuleNames(frozenset(names), params, open=star or "__getattr__" in names)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that bind module-level names, inside if / try / with blocks too."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for block in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body)


def _stored_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
        targets: list[ast.AST] = []
        if isinstance(node, ast.For):
            targets.append(node.target)
        if isinstance(node, ast.With):
            targets += [item.optional_vars for item in node.items if item.optional_vars]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)
    }


def _rebinds(body: list[ast.stmt], name: str) -> bool:
    stores = [
        node
        for node in _top_level(body)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and name in _stored_names(node)
    ]
    decorated = any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.name == name
        and node.decorator_list
        for node in _top_level(body)
    )
    return bool(stores) or decorated


def _explicit_init(node: ast.ClassDef) -> ast.FunctionDef | None:
    if node.decorator_list or node.bases or node.keywords:
        return None  # a dataclass, a NamedTuple, an inherited __init__: not knowable here
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return item
    return None


# --- what the tests use -----------------------------------------------------------------------


class ReferenceProblem(BaseModel):
    """One line of a test that would fail before the logic under test is reached."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    test: str = ""  # the enclosing test function, when there is one
    source: str = ""  # the offending line, stripped
    message: str


@dataclass(frozen=True)
class Target:
    """The module the tests are checked against."""

    path: str  # durations.py
    import_name: str  # durations
    names: ModuleNames
    # Calls to these names are judged against these signatures (the spec's), not the module's.
    authoritative: Mapping[str, Params]


def check_tests(target: Target, tests: Mapping[str, str]) -> list[ReferenceProblem]:
    """Every reference problem in the test files {path: source}, in file and line order."""
    problems: list[ReferenceProblem] = []
    for path in sorted(tests):
        try:
            tree = ast.parse(tests[path])
        except (SyntaxError, ValueError):
            continue  # pytest reports a test file that does not parse better than we can
        problems += _FileCheck(target, path, tests[path], tree).run()
    return problems


class _FileCheck:
    def __init__(self, target: Target, path: str, source: str, tree: ast.Module) -> None:
        self.target = target
        self.path = path
        self.lines = source.splitlines()
        self.tree = tree
        self.imported: dict[str, str] = {}  # local name -> name in the module
        self.aliases: set[str] = set()  # dotted names that mean the module itself
        self.star = False  # `from <module> import *`
        self.other_star = False  # a star import from another module: any name may exist
        self.bound = _bound_names(tree)
        self.problems: list[ReferenceProblem] = []
        self.owners = _enclosing_tests(tree)
        self.called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}

    def run(self) -> list[ReferenceProblem]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                self.read_import(node)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.check_call(node)
            elif isinstance(node, ast.Attribute) and id(node) not in self.called:
                self.check_attribute(node)
        return sorted(self.problems, key=lambda p: p.line)

    def read_import(self, node: ast.ImportFrom | ast.Import) -> None:
        target = self.target
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == target.import_name:
                    self.aliases.add(alias.asname or alias.name)
            return
        if node.level or node.module != target.import_name:
            if any(alias.name == "*" for alias in node.names):
                self.other_star = True
            return
        for alias in node.names:
            if alias.name == "*":
                self.star = True
                continue
            self.imported[alias.asname or alias.name] = alias.name
            if not target.names.defines(alias.name):
                self.report(
                    node,
                    f"imports {alias.name} from {target.import_name}, but {target.path} does "
                    f"not define it (it defines {target.names.listing()})",
                )

    def check_call(self, call: ast.Call) -> None:
        func = call.func
        if isinstance(func, ast.Name):
            name = func.id
            if name in self.imported:
                self.check_arguments(call, self.imported[name])
            elif name in self.bound or name in _BUILTINS or name in _MODULE_DUNDERS:
                return
            elif self.star and self.target.names.defines(name):
                self.check_arguments(call, name)
            elif not self.other_star:
                where = f"not in {self.target.path}, not imported, not a builtin"
                self.report(call, f"calls {name}, which is defined nowhere: {where}")
        elif (
            isinstance(func, ast.Attribute)
            and _dotted(func.value) in self.aliases
            and self.check_attribute(func)
        ):
            self.check_arguments(call, func.attr)

    def check_attribute(self, node: ast.Attribute) -> bool:
        """For `<module>.name`: False (and a problem) when the module does not define it."""
        if _dotted(node.value) not in self.aliases:
            return True
        if self.target.names.defines(node.attr):
            return True
        self.report(
            node,
            f"uses {_dotted(node.value)}.{node.attr}, but {self.target.path} does not define "
            f"{node.attr} (it defines {self.target.names.listing()})",
        )
        return False

    def check_arguments(self, call: ast.Call, name: str) -> None:
        target = self.target
        spec = target.authoritative.get(name)
        params = spec or target.names.params.get(name)
        if params is None:
            return
        why = misfit(params, call)
        if why is not None:
            whose = "the spec's signature" if spec is not None else f"{target.path} defines"
            self.report(call, f"calls {ast.unparse(call)}, which {why}: {whose} {params.text}")

    def report(self, node: ast.expr | ast.stmt, message: str) -> None:
        line = getattr(node, "lineno", 0)
        source = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.problems.append(
            ReferenceProblem(
                file=self.path,
                line=line,
                test=self.owners.get(line, ""),
                source=source,
                message=message,
            )
        )


def _dotted(node: ast.expr) -> str:
    """`a.b.c` for a chain of names; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the file binds anywhere (scope-blind on purpose: fewer false alarms)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def _enclosing_tests(tree: ast.Module) -> dict[int, str]:
    """line -> the name of the top-level function (or Class.method) it belongs to."""
    owners: dict[int, str] = {}
    for node in tree.body:
        functions: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            functions += [
                (f"{node.name}.{item.name}", item)
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
        for name, function in functions:
            start = getattr(function, "lineno", 0)
            end = getattr(function, "end_lineno", start) or start
            for line in range(start, end + 1):
                owners[line] = name
    return owners
