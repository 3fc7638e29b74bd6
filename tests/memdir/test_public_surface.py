import ast
import subprocess
import sys
from pathlib import Path

import memapp.memdir

CORE = Path(memapp.memdir.__file__).parent


def test_the_issue_names_are_all_public():
    for name in [
        "parse_memory",
        "render_memory",
        "Memory",
        "truncate_index",
        "IndexTruncation",
        "scan_memory_files",
        "format_manifest",
        "MemoryHeader",
        "memory_age",
        "memory_header",
        "render_recalled",
        "sanitize_path",
        "canonical_git_root",
        "memory_dir_for",
        "parse_repo_slug",
        "validate_key",
        "PathTraversalError",
        "validate_memory_dir_override",
        "write_atomic",
        "index_health",
    ]:
        assert name in memapp.memdir.__all__
        assert getattr(memapp.memdir, name) is not None


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


def test_every_public_name_resolves_to_its_modules_object():
    assert sorted(memapp.memdir._EXPORTS) == sorted(memapp.memdir.__all__)
    for name, (module, attribute) in memapp.memdir._EXPORTS.items():
        source = __import__(f"memapp.memdir.{module}", fromlist=[attribute])
        assert getattr(memapp.memdir, name) is getattr(source, attribute)


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
