"""JSONL records: what users' files look like (BOM, CRLF, blank lines) and what is refused."""

import pytest

from pointlab.benchmark.records import RecordError, predictions_by_id, read_jsonl, read_jsonl_lenient, write_jsonl


def test_bom_and_crlf_are_read(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": "q1", "prediction": "3"}\r\n\r\n{"id": "q2", "prediction": "B"}\r\n')
    assert predictions_by_id(read_jsonl(p)) == {"q1": "3", "q2": "B"}


@pytest.mark.parametrize(
    "data,needle",
    [
        (b'{"id": "q1"}\n[1, 2]\n', "p.jsonl:2: expected a JSON object"),
        (b'{"id": "q1"}\n{"id": \n', "p.jsonl:2: not JSON"),
        (b"\xff\xfe{}\n", "cannot read"),
    ],
)
def test_malformed_files_name_the_problem(tmp_path, data, needle):
    p = tmp_path / "p.jsonl"
    p.write_bytes(data)
    with pytest.raises(RecordError, match=needle):
        read_jsonl(p)


def test_a_directory_is_a_record_error(tmp_path):
    with pytest.raises(RecordError, match="cannot read"):
        read_jsonl(tmp_path)


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085"])  # (control characters are escaped)
def test_a_line_separator_inside_a_string_stays_in_its_record(tmp_path, sep):
    """JSON Lines ends a record at "\\n" only: str.splitlines() also breaks on U+2028, U+2029 and
    U+0085, which json.dumps(ensure_ascii=False) (our writer) leaves unescaped inside strings."""
    p = tmp_path / "p.jsonl"
    recs = [{"id": "a", "prediction": f"left{sep}right"}, {"id": "b", "prediction": "2"}]
    assert write_jsonl(p, recs) == 2
    assert sep in p.read_text(encoding="utf-8")  # written raw, the case that split records before
    assert read_jsonl(p) == recs
    good, bad = read_jsonl_lenient(p)
    assert [r for _, r in good] == recs and bad == []


def test_an_integer_over_the_digit_limit_is_one_unreadable_line(tmp_path):
    """json.loads raises a plain ValueError (not JSONDecodeError) on an integer over Python's
    4300-digit limit: that line is unreadable, the others are read."""
    p = tmp_path / "p.jsonl"
    p.write_text(
        '{"id": "a", "prediction": "1"}\n{"id": "b", "prediction": ' + "9" * 5000 + "}\n"
        '{"id": "c", "prediction": "3"}\n'
    )
    good, bad = read_jsonl_lenient(p)
    assert [r["id"] for _, r in good] == ["a", "c"]
    assert len(bad) == 1 and bad[0].startswith(f"{p}:2: not JSON (Exceeds the limit")
    with pytest.raises(RecordError, match=r"p.jsonl:2: not JSON"):
        read_jsonl(p)


def test_deep_nesting_is_one_unreadable_line(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "a", "prediction": ' + "[" * 100_000 + "]" * 100_000 + '}\n{"id": "b", "prediction": "2"}\n')
    good, bad = read_jsonl_lenient(p)
    assert [r["id"] for _, r in good] == ["b"] and bad == [f"{p}:1: not JSON (nested too deeply)"]


@pytest.mark.parametrize("scorer", ["vsi", "pinpoint", "egopoint", "localization", "pointing"])
def test_an_empty_ground_truth_is_a_one_line_error(tmp_path, scorer):
    """An empty ground truth is a wrong path or an unfinished export, not a score of n = 0: exit 2."""
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    gt, pred = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl"
    gt.write_text("\n")
    pred.write_text('{"id": "a", "prediction": "1"}\n')
    r = CliRunner().invoke(app, ["score", scorer, "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 2 and "no ground-truth items" in r.output


def test_a_file_written_in_place_gets_the_mode_of_any_new_file(tmp_path):
    # mkstemp's 0600 made generated question files unreadable to the rest of a lab sharing the folder
    import os

    from pointlab.benchmark.records import replaced_on_success

    old = os.umask(0o022)
    try:
        with replaced_on_success(tmp_path / "q.jsonl") as tmp:
            tmp.write_text("{}\n")
    finally:
        os.umask(old)
    assert (tmp_path / "q.jsonl").stat().st_mode & 0o777 == 0o644
