"""Citations of the design document stay honest.

Code, templates, tests and the README cite `docs/design.md §n`. Every cited section must exist
in docs/design.md, and nothing may cite the behaviour spec outside the repository (a clone does
not have it) or a bare `§n` without saying which document it is in.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"

SUFFIXES = {".py", ".html", ".md", ".toml", ".txt", ".cfg", ".ini", ".js", ".css", ".yml", ".yaml"}
SKIPPED_DIRS = {".git", ".venv", "var", "node_modules", "test-artifacts", "__pycache__", "build"}
# Names of documents that live outside the repository (joined so this file does not cite them).
OUTSIDE = ("DESIGN" + ".md", "DESIGN" + " §", "DESIGN" + "§", "../" + "shared", "/work/" + "shared")
OUTSIDE += ("DEPENDENCIES" + ".md", "STYLE" + ".md")

MARK = r"§\d+[a-z]?(?:\.\d+)?"
SECTION = r"§(\d+[a-z]?(?:\.\d+)?)"  # the same, capturing the section number
# `docs/design.md §7`, `docs/design.md §1, §3, §13`, `docs/design.md §7–§8`.
CITATION = re.compile(rf"docs/design\.md\s+{MARK}(?:\s*(?:,|–|-|and)\s*{MARK})*")
BARE = re.compile(r"§\d")
HEADING = re.compile(r"^(#{2,3}) (\d+[a-z]?)\. (.+)$", re.MULTILINE)
SUBSECTION = re.compile(r"^- \*\*(\d+\.\d+) ", re.MULTILINE)


def section_ids(design: str) -> list[str]:
    """The sections docs/design.md has: `## 10a. Title` headings and `- **14.1 …**` items."""
    return [m.group(2) for m in HEADING.finditer(design)] + SUBSECTION.findall(design)


def cited_sections(text: str) -> list[str]:
    """Every section a text cites as `docs/design.md §…` (each member of a list or range)."""
    return [
        found for match in CITATION.finditer(text) for found in re.findall(SECTION, match.group(0))
    ]


def uncited_marks(text: str) -> list[str]:
    """`§n` marks that are not part of a `docs/design.md §…` citation."""
    return BARE.findall(CITATION.sub("", text))


def repository_files() -> list[Path]:
    files = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
            continue
        wanted = path.suffix in SUFFIXES or parts[0] == "scripts"
        if wanted and path.is_file() and path != Path(__file__).resolve():
            files.append(path)
    return sorted(files)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def test_the_guard_reads_citations_as_they_are_written():
    text = (
        "see docs/design.md §1, §3 and §13; (docs/design.md §7–§8) and docs/design.md §10a, "
        "docs/design.md §14.1, but " + "DESIGN" + " §4 and a stray §2"
    )
    assert cited_sections(text) == ["1", "3", "13", "7", "8", "10a", "14.1"]
    assert uncited_marks(text) == ["§4", "§2"]


def test_sections_are_numbered_once_and_listed_in_the_contents():
    design = _read(DESIGN)
    ids = section_ids(design)
    assert len(ids) == len(set(ids)), "a section number is used twice"
    assert {"1", "2", "10", "10a", "14", "19", "20"} <= set(ids)
    for level, number, title in HEADING.findall(design):
        if level != "##":
            continue
        anchor = re.sub(r"[^a-z0-9 -]", "", f"{number}. {title}".lower()).replace(" ", "-")
        assert f"(#{anchor})" in design, f"§{number} is missing from the contents"


def test_every_cited_section_exists_in_the_design_doc():
    ids = set(section_ids(_read(DESIGN)))
    missing = [
        f"{path.relative_to(ROOT)}: §{section}"
        for path in repository_files()
        for section in cited_sections(_read(path))
        if section not in ids
    ]
    # The design doc refers to its own sections without naming itself.
    missing += [
        f"docs/design.md: §{section}"
        for section in re.findall(SECTION, _read(DESIGN))
        if section not in ids
    ]
    assert not missing, "citations of sections docs/design.md does not have:\n" + "\n".join(missing)


def test_nothing_cites_documents_outside_the_repository_or_a_bare_section():
    problems = []
    for path in repository_files():
        text = _read(path)
        problems += [f"{path.relative_to(ROOT)}: {name}" for name in OUTSIDE if name in text]
        if path != DESIGN:
            problems += [f"{path.relative_to(ROOT)}: {mark}" for mark in uncited_marks(text)]
    assert not problems, "cite `docs/design.md §n` instead:\n" + "\n".join(problems)
