"""`trajlab figures` and `trajlab tables` into a full or read-only folder (a small tmpfs): a one-line
error naming the file, exit status 1, no traceback, and the files of an earlier export left as they were."""

from __future__ import annotations

import pytest
from cli_harness import fails, run, snapshot
from tmpfs import fill, read_only, tmpfs

from trajlab.figures import export_figures, find_browser

HAS_BROWSER = find_browser() is not None


def test_tables_on_a_full_then_read_only_disk_name_the_file_and_keep_the_old_tables(fig_lab, tmp_path):
    """Both were an OSError traceback (from the table writer, and from creating the folder)."""
    lab = str(fig_lab.root)
    with tmpfs(tmp_path / "fs", 1) as fs:
        out = fs / "tables"
        assert run("tables", lab, "--out", str(out), "--only", "tool_gaps").code == 0
        before = snapshot(out)
        filler = fill(fs)
        err = fails("tables", lab, "--out", str(out), "--only", "tool_gaps")
        assert f"Error: cannot write {out}/tool_gaps." in err and "No space left on device" in err
        assert len(err.strip().splitlines()) == 1, err
        assert snapshot(out) == before
        filler.unlink()
        read_only(fs)
        err = fails("tables", lab, "--out", str(out), "--only", "tool_gaps")
        assert f"Error: cannot write {out}/tool_gaps." in err and "Read-only file system" in err
        err = fails("tables", lab, "--out", str(fs / "new"), "--only", "tool_gaps")
        assert f"Error: cannot write {fs / 'new'}: Read-only file system" in err
        assert snapshot(out) == before


@pytest.mark.browser
@pytest.mark.slow
def test_figures_into_a_read_only_folder_name_the_folder(fig_lab, tmp_path):
    if not HAS_BROWSER:
        pytest.skip("no Chromium (apt-get install chromium)")
    with tmpfs(tmp_path / "fs", 1) as fs:
        read_only(fs)
        out = fs / "figs"
        args = ("figures", str(fig_lab.root), "--out", str(out), "--only", "tool_gaps", "--no-progress")
        err = fails(*args, "--format", "svg")
        assert f"Error: cannot write {out}: Read-only file system" in err
        assert not out.exists()


@pytest.mark.browser
@pytest.mark.slow
def test_an_image_that_does_not_fit_leaves_the_earlier_one_in_place(fig_lab, tmp_path):
    """kaleido wrote each image in place (truncating the earlier one) and deleted it when the write
    failed: on a full disk the export that should have replaced tool_gaps.png removed the earlier one."""
    if not HAS_BROWSER:
        pytest.skip("no Chromium (apt-get install chromium)")
    with tmpfs(tmp_path / "fs", 1) as fs:
        out = fs / "figs"
        rep = export_figures(fig_lab, out, formats=("png",), only=["tool_gaps"], progress=False)
        assert rep.ok
        earlier = (out / "tool_gaps.png").read_bytes()
        # an earlier, smaller image: the new one cannot fit in the space the old one frees; the three
        # pages left are room for the sidecars (a few KB each)
        (out / "tool_gaps.png").write_bytes(earlier[:100])
        assert len(earlier) > 5 * 4096 and len((out / "tool_gaps.json").read_bytes()) < 2 * 4096
        filler = fill(fs, leave=3 * 4096)
        rep = export_figures(fig_lab, out, formats=("png",), only=["tool_gaps"], progress=False)
        assert not rep.ok and "No space left on device" in rep.failed["tool_gaps"]
        assert (out / "tool_gaps.png").read_bytes() == earlier[:100]
        assert sorted(p.name for p in out.iterdir()) == ["index.json", "tool_gaps.json", "tool_gaps.png"]
        args = ("figures", str(fig_lab.root), "--out", str(out), "--only", "tool_gaps", "--no-progress")
        r = run(*args, "--format", "png")
        assert r.code == 1 and "Error: " in r.stderr
        assert (out / "tool_gaps.png").read_bytes() == earlier[:100]
        filler.unlink()
        rep = export_figures(fig_lab, out, formats=("png",), only=["tool_gaps"], progress=False)
        assert rep.ok and (out / "tool_gaps.png").read_bytes().startswith(earlier[:40])


@pytest.mark.browser
@pytest.mark.slow
def test_figures_on_a_full_disk_leave_no_empty_folders(fig_lab, tmp_path):
    """`figures --out a/b/figs` made a/, a/b/ and figs/ and left them empty when the first file could
    not be written."""
    if not HAS_BROWSER:
        pytest.skip("no Chromium (apt-get install chromium)")
    with tmpfs(tmp_path / "fs", 1) as fs:
        fill(fs)
        out = fs / "a" / "b" / "figs"
        args = ("figures", str(fig_lab.root), "--out", str(out), "--only", "tool_gaps", "--no-progress")
        err = fails(*args, "--format", "svg")
        assert f"Error: cannot write {out}/tool_gaps." in err and "No space left on device" in err
        assert sorted(p.name for p in fs.iterdir()) == ["filler"]
