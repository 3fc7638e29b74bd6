import ast
import importlib
import subprocess
import sys
import types
from pathlib import Path

import memapp.memdir

CORE = Path(memapp.memdir.__file__).parent
ROOT = CORE.parent.parent


# The names the core was first asked for, by the module that owns each.
ISSUE_NAMES = {
    "frontmatter": ["parse_memory", "render_memory", "Memory"],
    "index": ["truncate_index", "IndexTruncation", "index_health"],
    "scan": ["scan_memory_files", "format_manifest", "MemoryHeader"],
    "freshness": ["memory_age", "memory_header", "render_recalled"],
    "paths": ["sanitize_path", "canonical_git_root", "memory_dir_for", "parse_repo_slug"],
    "keys": ["validate_key", "PathTraversalError", "validate_memory_dir_override"],
    "atomic": ["write_atomic"],
}


def test_the_issue_names_are_all_public():
    for module, names in ISSUE_NAMES.items():
        source = importlib.import_module(f"memapp.memdir.{module}")
        for name in names:
            assert name in source.__all__
            assert getattr(source, name) is not None


def _core_imports(path: Path):
    """(module, name) of every `from memapp.memdir.<module> import name` in a file."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memapp.memdir."):
            for alias in node.names:
                yield node.module, alias.name


def test_every_core_module_says_what_is_public():
    for module in CORE.glob("*.py"):
        if module.name != "__init__.py":
            source = importlib.import_module(f"memapp.memdir.{module.stem}")
            assert isinstance(getattr(source, "__all__", None), list), module.name
            assert all(hasattr(source, name) for name in source.__all__), module.name


def test_the_rest_of_memhub_uses_only_the_cores_public_names():
    outside = [
        path
        for package in ("memapp", "teamsync", "snapshots")
        for path in (ROOT / package).rglob("*.py")
        if CORE not in path.parents
    ]
    private = sorted(
        f"{path.relative_to(ROOT)}: {module}.{name}"
        for path in outside
        for module, name in _core_imports(path)
        if name not in importlib.import_module(module).__all__
    )
    assert private == []


def test_the_package_re_exports_nothing():
    """Only its modules hang off `memapp.memdir`: a name is imported from the module owning it."""
    names = {n: v for n, v in vars(memapp.memdir).items() if not n.startswith("__")}
    assert all(isinstance(value, types.ModuleType) for value in names.values()), sorted(names)


def test_the_core_imports_nothing_from_django():
    for module in CORE.glob("*.py"):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "django" for n in names), module.name


def test_the_core_loads_without_django_configured():
    code = "import memapp.memdir, sys; print('django' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.stdout.strip() == "False"


def test_the_path_rules_load_without_yaml_or_the_ranker():
    """A hook starts a new process on every prompt: finding the project must stay cheap."""
    code = (
        "import sys, memapp.memdir.paths\n"
        "heavy = {'yaml', 'memapp.memdir.offline_recall', 'memapp.memdir.frontmatter'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
