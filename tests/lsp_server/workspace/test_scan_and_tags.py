"""The workspace scan (.gitignore, exclusions, bounds) and the tree-sitter definitions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_server.secrets import excluded_by
from lsp_server.workspace.scan import scan
from lsp_server.workspace.tags import TagIndex, definition_text, definitions, supports


def write(root: Path, relative: str, text: str = "def code_here():\n    pass\n") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def labels(root: Path, **kwargs) -> list[str]:
    options = dict(max_files=1000, max_bytes=100_000, excluded=lambda p: excluded_by(p) is not None)
    options.update(kwargs)
    return sorted(f.label for f in scan([str(root)], **options))


def test_scan_honours_gitignore_rules(tmp_path: Path):
    write(tmp_path, ".gitignore", "*.gen.py\nignored_dir/\n/anchored.py\n!keep.gen.py\n")
    write(tmp_path, "pkg/.gitignore", "local.py\n")
    for name in ("a.py", "x.gen.py", "keep.gen.py", "ignored_dir/b.py", "anchored.py", "pkg/anchored.py",
                 "pkg/local.py", "pkg/c.go", "node_modules/dep/index.js", "README.md"):
        write(tmp_path, name)
    assert labels(tmp_path) == ["a.py", "keep.gen.py", "pkg/anchored.py", "pkg/c.go"]


def test_scan_never_yields_excluded_binary_large_or_linked_files(tmp_path: Path):
    write(tmp_path, "ok.py")
    write(tmp_path, "secret_keys.py")          # matches *secret*
    write(tmp_path, "big.py", "x = 1\n" * 50_000)
    (tmp_path / "blob.py").write_bytes(b"\0\1\2binary")
    os.symlink(tmp_path / "ok.py", tmp_path / "link.py")
    write(tmp_path, "private/data.py")
    assert labels(tmp_path, excluded=lambda p: excluded_by(p, ("private/*",)) is not None) == ["ok.py"]


def test_scan_stops_at_max_files(tmp_path: Path):
    for i in range(10):
        write(tmp_path, f"f{i}.py")
    assert len(labels(tmp_path, max_files=4)) == 4


def test_a_folder_listed_twice_or_inside_another_is_scanned_once(tmp_path: Path):
    """`workspace/didChangeWorkspaceFolders` may add a folder the server has (or one inside it): each file was read
    and counted once per folder, so fewer distinct files fitted in `max_files`."""
    for name in ("a.py", "sub/b.py", "sub/c.py", "d.py"):
        write(tmp_path, name)
    options = dict(max_files=1000, max_bytes=100_000, excluded=lambda p: False)
    folders = [str(tmp_path / "sub"), str(tmp_path), str(tmp_path)]
    assert sorted(f.path for f in scan(folders, **options)) == sorted(
        str(tmp_path / name) for name in ("a.py", "sub/b.py", "sub/c.py", "d.py"))
    assert len(list(scan(folders, **{**options, "max_files": 3}))) == 3


@pytest.mark.parametrize("language, source, expected", [
    ("python", "class ShapeBase:\n    def area(self):\n        return 0\n\nLIMIT = 3\n",
     {"ShapeBase", "area", "LIMIT"}),
    ("go", "package geo\n\nfunc AreaOf(r float64) float64 {\n\treturn r\n}\n\ntype Shape struct{}\n",
     {"AreaOf", "Shape"}),
    ("typescript", "export function areaOf(r: number): number { return r }\ninterface Shape { x: number }\n"
                   "class Circle { radius() { return 1 } }\n", {"areaOf", "Shape", "Circle", "radius"}),
    ("javascript", "function areaOf(r) { return r }\nclass Circle { radius() { return 1 } }\n",
     {"areaOf", "Circle", "radius"}),
    ("rust", "pub fn area_of(r: f64) -> f64 { r }\npub struct Shape;\nimpl Shape { fn grow(&self) {} }\n",
     {"area_of", "Shape", "grow"}),
    ("java", "public class Circle { double radius() { return 1; } }\n", {"Circle", "radius"}),
    ("c", "int area_of(int r) { return r; }\nstruct shape { int x; };\n", {"area_of", "shape"}),
])
def test_definitions_per_language(language, source, expected):
    if not supports(language):
        pytest.skip(f"the tree-sitter grammar for {language} is not installed")
    assert {d.name for d in definitions(source, language)} >= expected


def test_unknown_language_has_no_definitions():
    assert definitions("whatever", "cobol") == []


def test_tag_index_replaces_a_files_definitions_and_caps_long_ones():
    index = TagIndex()
    index.add("/w/a.py", "a.py", "python", "def first_fn():\n    pass\n")
    index.add("/w/a.py", "a.py", "python", "def second_fn():\n    pass\n")
    assert index.lookup("first_fn") == [] and [d.label for d in index.lookup("second_fn")] == ["a.py"]
    long_source = "def long_fn():\n" + "".join(f"    x{i} = {i}\n" for i in range(100))
    index.add("/w/b.py", "b.py", "python", long_source)
    (definition,) = index.lookup("long_fn")
    assert definition_text(long_source.split("\n"), definition).count("\n") < 10
    index.remove("/w/b.py")
    assert index.lookup("long_fn") == []


def test_build_output_folders_follow_the_gitignore_where_there_is_one(tmp_path: Path):
    write(tmp_path, ".gitignore", "dist/\n")
    for name in ("src/a.ts", "dist/a.js", "build/gen.py", "target/t.rs"):
        write(tmp_path, name)
    # dist/ is listed there; build/ and target/ are not, so they are committed code like any other folder
    assert labels(tmp_path) == ["build/gen.py", "src/a.ts", "target/t.rs"]


def test_without_a_gitignore_build_output_is_scanned_only_when_it_is_the_only_code(tmp_path: Path):
    package = tmp_path / "package"  # an unpacked npm package: no .gitignore, its code only in build/lib
    write(package, "package.json", "{}")
    write(package, "build/lib/index.js", "export function f() {}\n")
    write(package, "build/lib/util/dist/x.js", "export const x = 1\n")
    assert labels(package) == ["build/lib/index.js", "build/lib/util/dist/x.js"]
    source = tmp_path / "source"  # sources beside their build output: the output stays out
    write(source, "src/index.ts")
    write(source, "dist/index.js")
    assert labels(source) == ["src/index.ts"]


def test_a_watched_file_event_in_build_output_follows_the_walk(tmp_path: Path):
    from lsp_server.workspace.scan import entry_for

    options = dict(max_bytes=100_000, excluded=lambda p: False)
    write(tmp_path / "package", "build/lib/index.js")
    assert entry_for(str(tmp_path / "package/build/lib/index.js"), [str(tmp_path / "package")], **options)
    write(tmp_path / "source", "src/index.ts")
    write(tmp_path / "source", "dist/index.js")
    assert entry_for(str(tmp_path / "source/dist/index.js"), [str(tmp_path / "source")], **options) is None
    assert entry_for(str(tmp_path / "source/src/index.ts"), [str(tmp_path / "source")], **options)
