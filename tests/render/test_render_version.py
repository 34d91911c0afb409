"""The reply cache's key follows the templates and render code: a reworded reply is not served from an old render."""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.render.version import RENDER_ROOTS, render_digest, tree_digest
from bot.service import Service


def _copy(tmp_path: Path) -> tuple[Path, ...]:
    roots = []
    for root in RENDER_ROOTS:
        dest = tmp_path / root.name
        shutil.copytree(root, dest, ignore=shutil.ignore_patterns("__pycache__"))
        roots.append(dest)
    return tuple(roots)


def test_a_copy_of_the_render_tree_has_the_same_digest(tmp_path: Path) -> None:
    assert tree_digest(_copy(tmp_path)) == render_digest()


def test_rewording_one_template_changes_the_digest(tmp_path: Path) -> None:
    roots = _copy(tmp_path)
    compare = roots[1] / "en" / "compare.j2"
    compare.write_text(compare.read_text(encoding="utf-8").replace("tok/s", "tokens/s"), encoding="utf-8")
    assert tree_digest(roots) != render_digest()


def test_moving_bytes_between_files_changes_the_digest(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.j2").write_text("ab")
    (tmp_path / "a" / "y.j2").write_text("c")
    before = tree_digest((tmp_path / "a",))
    (tmp_path / "a" / "x.j2").write_text("a")
    (tmp_path / "a" / "y.j2").write_text("bc")
    assert tree_digest((tmp_path / "a",)) != before


def test_compiled_caches_do_not_count(tmp_path: Path) -> None:
    roots = _copy(tmp_path)
    (roots[0] / "__pycache__").mkdir(exist_ok=True)
    (roots[0] / "__pycache__" / "junk.pyc").write_bytes(b"\x00\x01")
    assert tree_digest(roots) == render_digest()


def test_the_service_version_carries_the_render_digest() -> None:
    assert Service().version.endswith("+" + render_digest())


def test_the_service_version_carries_the_estimator_code_digest() -> None:
    """A changed estimator rule retires cached answers as a refit or a reworded template does."""
    import estimator
    from bot.service import estimator_digest

    assert estimator_digest() == tree_digest((Path(estimator.__file__).resolve().parent,))
    assert f".{estimator_digest()}+" in Service().version
