#!/usr/bin/env python3
"""The docs check catches pictures: in a scratch root whose docs/img/ has one picture altered, one
missing and one extra, sync_docs.sync_pictures counts all three as stale without writing under
--check, then redraws them, after which nothing is stale.

    expect_stale_pictures.py REPO BUILD"""
import pathlib
import shutil
import sys
import tempfile


def main(repo, build):
    repo, build = pathlib.Path(repo), pathlib.Path(build)
    sys.path.insert(0, str(repo / "scripts"))
    import sync_docs

    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        (root / "docs" / "snippets").mkdir(parents=True)
        shutil.copy(repo / "docs" / "snippets" / "doc_pictures.cpp", root / "docs" / "snippets")
        shutil.copytree(repo / "docs" / "img", root / "docs" / "img")
        shutil.copytree(repo / "docs" / "data", root / "docs" / "data")
        img = root / "docs" / "img"
        pictures = sorted(img.glob("*.svg"))
        assert len(pictures) >= 3, pictures
        pictures[0].write_text(pictures[0].read_text() + "<!-- edited -->")          # stale
        pictures[1].unlink()                                                          # missing
        (img / "old.svg").write_text("<svg/>")                                        # no longer drawn
        ctx = sync_docs.Context(root, build, False, True, False)
        assert sync_docs.sync_pictures(ctx, check=True) == 3, "three stale pictures"
        assert not pictures[1].exists(), "--check writes nothing"
        assert sync_docs.sync_pictures(ctx, check=False) == 3
        assert sync_docs.sync_pictures(ctx, check=True) == 0, "redrawn: in sync"
        assert not (img / "old.svg").exists()
        assert ctx.failed == 0
    print("expect_stale_pictures: all checks passed")


if __name__ == "__main__":
    main(*sys.argv[1:])
