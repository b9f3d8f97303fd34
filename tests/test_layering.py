"""The package's layers, held: its imports form a DAG (function-level imports included) and
cross between folders only along the edges below, the same rules `docs/ARCHITECTURE.md`
states folder by folder."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import cosmic_curriculum

PACKAGE = Path(cosmic_curriculum.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "ARCHITECTURE.md"
ROOT = "cosmic_curriculum"

# What each unit (a folder, or a module at the top) may import besides itself and the
# package root (`cosmic_curriculum/__init__.py`: the version and the data directory).
# The leaves import nothing of the package, and every layer above the arena may use them.
LEAVES = {"errors", "defaults", "scoring"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "defaults": set(),
    "scoring": set(),
    "system": {"errors"},
    "progress": {"system"},
    "arena": {"errors", "defaults"},
    "bots": {"arena", "system", *LEAVES},
    "vcs": {"system", *LEAVES},
    "workspace": {"vcs", "bots", "system", "progress", *LEAVES},
    "evaluation": {"workspace", "bots", "arena", "system", *LEAVES},
    "envs": {"workspace", "system", *LEAVES},
    "core": {"workspace", "evaluation", *LEAVES},
    "launchers": {"workspace", "system", "progress", *LEAVES},
    "tracking": {"workspace", "system", *LEAVES},
    "reports": {"core", "evaluation", "workspace", "system", "progress", *LEAVES},
    "status": {"core", "reports", "workspace", "system", "progress", *LEAVES},
    "train": {
        *("tracking", "reports", "bots", "arena", "envs", "workspace", "vcs", "system"),
        "progress",
        *LEAVES,
    },
    "curriculum": {
        *("tracking", "core", "reports", "evaluation", "envs", "launchers", "workspace"),
        *("bots", "vcs"),
        *("system", "progress", *LEAVES),
    },
    "compare": {
        *("train", "envs", "evaluation", "bots", "arena", "workspace", "vcs"),
        *("system", "progress", *LEAVES),
    },
    "cli": {
        "compare",
        *("tracking", "curriculum", "status", "reports", "train", "evaluation", "envs"),
        "launchers",
        *("workspace", "core", "bots", "arena", "vcs", "system", "progress", *LEAVES),
    },
    "entry": {"cli", "status", "errors", "defaults"},
    "__main__": {"entry"},
}
MAX_TOP_LEVEL_MODULES = 8
# Importing the pure core may load, besides the core's own modules, at most this many of
# the package's modules (packages' __init__ files not counted): the models it works on.
MAX_CORE_IMPORT = 8
MAX_MODULE_LINES = 400


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def imports_of(name: str) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its file (function bodies
    included, ``if TYPE_CHECKING:`` blocks not), with the packages that importing them
    initialises (except ``name``'s own parents, already initialised)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    direct: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            direct.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            direct.update(s for s in subs if s in MODULES)
            if any(s not in MODULES for s in subs) and node.module in MODULES:
                direct.add(node.module)
    found = set(direct)
    for target in direct:
        parts = target.split(".")
        for i in range(2, len(parts)):
            package = ".".join(parts[:i])
            if not (name == package or name.startswith(package + ".")):
                found.add(package)
    found.discard(name)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def unit(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in colour and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if node not in colour and (found := visit(node)) is not None:
            return found
    return None


def test_the_scan_sees_function_level_imports_and_skips_type_checking() -> None:
    # guards against a scan that finds nothing
    assert "cosmic_curriculum.bots.onnx_model" in GRAPH["cosmic_curriculum.bots.specs"]
    assert "cosmic_curriculum.core.transitions" in GRAPH["cosmic_curriculum.curriculum.loop"]
    assert "cosmic_curriculum.cli" in GRAPH["cosmic_curriculum.entry"]  # inside main()
    trends = "cosmic_curriculum.status.trends"
    assert "from cosmic_curriculum.workspace.state import" in MODULES[trends].read_text()
    assert "cosmic_curriculum.workspace.state" not in GRAPH[trends]  # under TYPE_CHECKING


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set()}) is None


def test_imports_form_a_dag() -> None:
    assert cycle_in(GRAPH) is None


def test_every_unit_has_a_rule() -> None:
    units = {unit(name) for name in MODULES} - {ROOT}
    assert units == set(ALLOWED), "give every folder and top-level module a rule"


def test_imports_cross_folders_only_along_the_allowed_edges() -> None:
    offending = sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if unit(target) not in {unit(name), ROOT, *ALLOWED.get(unit(name), set())}
    )
    assert offending == []


def test_at_most_eight_modules_at_the_top() -> None:
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_importing_the_pure_core_loads_few_modules() -> None:
    probe = (
        "import sys, cosmic_curriculum.core.transitions; "
        "print('\\n'.join(m for m in sys.modules if m.startswith('cosmic_curriculum')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = out.stdout.split()
    assert "cosmic_curriculum.core.transitions" in loaded
    outside = [
        m for m in loaded if unit(m) != "core" and m in MODULES and MODULES[m].name != "__init__.py"
    ]
    assert len(outside) <= MAX_CORE_IMPORT, outside
    assert "cosmic_curriculum.curriculum.loop" not in loaded


def test_architecture_md_states_the_same_rules() -> None:
    stated: dict[str, set[str]] = {}
    pattern = re.compile(r"^- `([\w.]+)/?` may import: (.*)$")
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        if (m := pattern.match(line)) is not None:
            text = m.group(2).strip().rstrip(".")
            names = set() if text == "nothing" else {n.strip(" `/") for n in text.split(",")}
            stated[m.group(1)] = names
    assert stated == ALLOWED


def test_no_package_binds_a_name_one_of_its_modules_would_replace() -> None:
    # Importing `pkg.name` sets the attribute `pkg.name` to that module: a function or
    # class of the same name bound in `pkg/__init__.py` is then replaced for everyone
    # after the first such import.
    clashes = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(PACKAGE.parent).parts)
        bound: set[str] = set()
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.module not in (None, package):
                # `from pkg.name import name` loads that module first: it cannot replace it
                bound |= {
                    alias.asname or alias.name
                    for alias in node.names
                    if node.module != f"{package}.{alias.name}"
                }
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                bound.add(node.name)
        clashes += [
            f"{init.parent.relative_to(PACKAGE.parent)}/{name}"
            for name in sorted(bound)
            if (init.parent / f"{name}.py").exists() or (init.parent / name).is_dir()
        ]
    assert not clashes, f"modules named like a function or class of their package: {clashes}"
