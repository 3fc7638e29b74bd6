"""A quick run of the benchmark on a tiny corpus: it works, not how fast it is."""

import json
import sys

from memapp import bench
from memapp.memdir.frontmatter import MEMORY_TYPES
from memapp.memdir.scan import ScanCache, scan_memory_files


def test_the_generated_corpus_looks_like_a_memory_directory(tmp_path):
    corpus = bench.generate_corpus(tmp_path, 300, progress=False)

    headers = scan_memory_files(tmp_path, limit=None, cache=ScanCache())
    assert len(headers) == 300
    assert (tmp_path / "MEMORY.md").is_file() and (tmp_path / "team" / "MEMORY.md").is_file()
    assert {h.type for h in headers} == {*MEMORY_TYPES, None}  # daily logs are untyped
    assert {h.type_form for h in headers} == {"top", "metadata", None}
    assert any(h.path.startswith("logs/") for h in headers)
    assert any(h.path.startswith("team/web/") for h in headers)
    assert all(h.problem is None for h in headers)
    assert len(corpus.index_text.splitlines()) == sum(h.name is not None for h in headers)


def test_the_floors_see_the_same_files(tmp_path):
    bench.generate_corpus(tmp_path, 50, progress=False)
    assert bench.floor_cold_scan(str(tmp_path)) == 50
    assert bench.floor_stat_walk(str(tmp_path)) == 52  # and both MEMORY.md


def test_a_worker_prints_its_time_as_json(tmp_path, capsys):
    bench.generate_corpus(tmp_path, 10, progress=False)
    assert bench.main(["--worker", "scan", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["files"] == 10 and result["seconds"] > 0


def test_it_prints_a_table_with_every_row(capsys):
    assert bench.main(["--sizes", "20", "--runs", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    for measure in (
        "cold scan (fresh process)",
        "warm rescan (unchanged)",
        "format_manifest (20 headers)",
        "truncate_index (",
    ):
        assert measure in out
    assert "≤ 1.3×" in out and "≤ 1.5×" in out
    assert sum(line.lstrip().startswith("20  ") for line in out.splitlines()) == 4


def test_a_missing_section_dependency_is_a_skipped_row(tmp_path, monkeypatch):
    corpus = bench.generate_corpus(tmp_path, 5, progress=False)
    monkeypatch.setitem(sys.modules, "memapp.memdir.index", None)
    (row,) = bench.bench_index(corpus, 1)
    assert row.seconds is None and row.note.startswith("skipped:")
    assert "skipped:" in bench.format_table([row])
