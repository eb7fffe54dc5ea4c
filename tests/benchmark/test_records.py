"""JSONL records: what users' files look like (BOM, CRLF, blank lines) and what is refused."""

import pytest

from pointlab.benchmark.records import RecordError, predictions_by_id, read_jsonl


def test_bom_and_crlf_are_read(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": "q1", "prediction": "3"}\r\n\r\n{"id": "q2", "prediction": "B"}\r\n')
    assert predictions_by_id(read_jsonl(p)) == {"q1": "3", "q2": "B"}


@pytest.mark.parametrize("data,needle", [
    (b'{"id": "q1"}\n[1, 2]\n', "p.jsonl:2: expected a JSON object"),
    (b'{"id": "q1"}\n{"id": \n', "p.jsonl:2: not JSON"),
    (b"\xff\xfe{}\n", "cannot read"),
])
def test_malformed_files_name_the_problem(tmp_path, data, needle):
    p = tmp_path / "p.jsonl"
    p.write_bytes(data)
    with pytest.raises(RecordError, match=needle):
        read_jsonl(p)


def test_a_directory_is_a_record_error(tmp_path):
    with pytest.raises(RecordError, match="cannot read"):
        read_jsonl(tmp_path)
