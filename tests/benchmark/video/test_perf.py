"""``pointlab perf video`` runs end to end on a short synthetic video (structure only: timings are
measured by the command, never asserted by tests)."""

import json

import pytest
from typer.testing import CliRunner

from pointlab.benchmark.video.frames import open_frames
from pointlab.benchmark.video.perf import make_synthetic_video, percentiles, synthetic_frames
from pointlab.bridge.cli import app


def test_percentiles_by_hand():
    p = percentiles([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (p["p50"], p["min"], p["max"], p["n"]) == (3.0, 1.0, 5.0, 5)
    assert p["p90"] == 4.6  # linear interpolation: 4 + 0.6 * (5 - 4)


def test_synthetic_video_frames_differ(tmp_path):
    frames = list(synthetic_frames(3, 64, 48))
    assert frames[0].shape == (48, 64, 3) and not (frames[0] == frames[1]).all()
    info = make_synthetic_video(tmp_path / "s.mp4", duration_s=2, fps=10, width=64, height=48, gop=5)
    assert info["frames"] == 20
    with open_frames(tmp_path / "s.mp4") as src:
        assert (src.total, src.fps) == (20, 10.0)


def test_cli_perf_video_short(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "perf",
            "video",
            "--duration-s",
            "2",
            "--fps",
            "15",
            "--width",
            "64",
            "--height",
            "48",
            "--budgets",
            "4,8",
            "--repeats",
            "1",
            "--keep",
            str(tmp_path / "v.mp4"),
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["video"]["frames"] == 30 and set(out["seek"]) == {"4", "8"}
    assert out["seek"]["8"]["num_frames"] == 8 and out["seek"]["8"]["speedup_vs_sequential"] > 0
    assert "decoded_fps" in out["baseline_sequential"]
    r = CliRunner().invoke(app, ["perf", "video", "--width", "63"])
    assert r.exit_code == 2


@pytest.mark.parametrize(
    "args, needle, code",
    [
        (["--duration-s", "inf"], "--duration-s: inf is not a finite number", 2),  # was an OverflowError traceback
        (["--duration-s", "nan"], "--duration-s: nan is not a finite number", 2),
        (["--duration-s", "0.01"], "gives no whole frame", 2),  # was "synthetic.mp4: no such file", exit 1
        (["--gop", "0"], "--gop", 2),  # was accepted and reported as gop 0
        (["--budgets", "4,x"], "--budgets must be comma-separated integers", 2),
    ],
)
def test_cli_perf_video_bad_options_are_one_line_errors(args, needle, code):
    r = CliRunner().invoke(app, ["perf", "video", "--repeats", "1", "--width", "64", "--height", "48", *args])
    assert r.exit_code == code and needle in r.stderr, r.output


def test_cli_perf_video_keep_under_a_file_is_a_one_line_error(tmp_path):
    (tmp_path / "afile").write_text("x")  # --keep afile/v.mp4: the folder cannot be made
    r = CliRunner().invoke(
        app,
        [
            "perf",
            "video",
            "--duration-s",
            "1",
            "--fps",
            "4",
            "--width",
            "64",
            "--height",
            "48",
            "--budgets",
            "2",
            "--repeats",
            "1",
            "--keep",
            str(tmp_path / "afile" / "v.mp4"),
        ],
    )
    assert r.exit_code == 1 and "cannot write the synthetic video" in r.stderr, r.output
    assert isinstance(r.exception, SystemExit)  # typer.Exit, not a raw OSError
