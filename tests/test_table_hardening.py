"""Table loaders lose nothing silently (issue 8, section 3), and bounded literal parsing."""

from __future__ import annotations

import json
import time
import warnings

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.cli import main
from evqual.data import load_jsonl, load_table
from evqual.data._json import loads_literal
from evqual.errors import EvqualDataError

HEADER = "id,query,context,output,label\n"


def load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_table(path)


def write(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_unclosed_quote_is_reported_and_the_next_rows_are_kept(tmp_path, capsys):
    path = write(tmp_path, HEADER + 'a,q1,c1,o1,1\nb,q2,"c2,o2,0\nc,q3,c3,o3,1\n')
    data = load(path)
    assert [ex.id for ex in data] == ["a", "c"]  # pandas silently merged row 3 into row 2
    [issue] = data.issues
    assert (issue.code, issue.line, issue.unit) == ("E103", 2, "row")
    assert "line 3" in issue.message and "quote" in issue.message
    out = tmp_path / "f.csv"
    assert main(["featurize", "--data", str(path), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "wrote 2 rows" in err and "row 2" in err


def test_stray_quote_swallowing_the_next_row_is_caught(tmp_path):
    # the quote closes on the next line, so the field count still matches: strict parsing catches it
    path = write(tmp_path, HEADER + 'a,q1,"c1,o1,1\nb,"q2",c2,o2,0\nc,q3,c3,o3,1\n')
    data = load(path)
    assert [ex.id for ex in data] == ["b", "c"] and data.issues[0].line == 1


def test_legit_multiline_and_quoted_fields_still_load(tmp_path):
    path = write(tmp_path, HEADER + 'a,q1,"multi\nline, with comma",o1,1\nb,q2,"say ""hi""",NA,0\n')
    data = load(path)
    assert data.issues == []
    assert data[0].context == "multi\nline, with comma" and data[1].context == 'say "hi"'
    assert data[1].output == "NA"  # text is taken as written, not as a missing value


def test_row_with_an_extra_field_is_left_out_alone(tmp_path):
    data = load(write(tmp_path, HEADER + "a,q1,c1,o1,1\nb,q2,c2,o2,0,extra\nc,q3,c3,o3,1\n"))
    assert [ex.id for ex in data] == ["a", "c"]
    [issue] = data.issues
    assert issue.line == 2 and "6 fields where the header has 5" in issue.message and "line 3" in issue.message


def test_undecodable_byte_names_its_row_and_line(tmp_path):
    data = load(write(tmp_path, HEADER.encode() + b"a,q1,c1,o1,1\nb,q2,c\xff2,o2,0\nc,q3,c3,o3,1\n"))
    assert [ex.id for ex in data] == ["a", "c"]
    [issue] = data.issues
    assert issue.code == "E101" and issue.line == 2
    assert "0xff" in issue.message and "line 3, column 7" in issue.message


def test_empty_and_header_only_files(tmp_path):
    with pytest.raises(EvqualDataError, match="E107"):
        load(write(tmp_path, ""))
    assert len(load(write(tmp_path, HEADER))) == 0
    with pytest.raises(EvqualDataError, match="required column"):
        load(write(tmp_path, "a,b\n1,2\n"))


@pytest.mark.parametrize("bad", ["0.7", "1.9", "-0.4", "2", "-1", "yes"])
def test_fractional_or_negative_labels_are_errors_in_csv(tmp_path, bad):
    data = load(write(tmp_path, HEADER + f"a,q,c,o,{bad}\nb,q,c,o,1\n"))
    assert [ex.id for ex in data] == ["b"]
    assert data.issues[0].field == "label" and "must be 0 or 1" in data.issues[0].message


@pytest.mark.parametrize("bad", [0.7, 1.9, -0.4, 2.0])
def test_fractional_or_negative_labels_are_errors_in_parquet_and_jsonl(tmp_path, bad):
    pytest.importorskip("pyarrow")
    path = tmp_path / "t.parquet"
    pd.DataFrame({"id": ["a", "b"], "query": ["q", "q"], "context": ["c", "c"], "output": ["o", "o"],
                  "label": [bad, 1.0]}).to_parquet(path)
    data = load(path)
    assert [ex.id for ex in data] == ["b"] and data[0].label == 1
    assert data.issues[0].field == "label"
    jl = tmp_path / "t.jsonl"
    jl.write_text(json.dumps({"id": "a", "query": "q", "context": "c", "output": "o", "label": bad}) + "\n"
                  + json.dumps({"id": "b", "query": "q", "context": "c", "output": "o", "label": 1.0}) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_jsonl(jl)
    assert [ex.id for ex in data] == ["b"] and data.issues[0].field == "label"


@pytest.mark.parametrize("good,expected", [("1", 1), ("0", 0), ("1.0", 1), ("true", 1), ("False", 0), ("", None)])
def test_label_spellings_accepted_in_csv(tmp_path, good, expected):
    data = load(write(tmp_path, HEADER + f"a,q,c,o,{good}\n"))
    assert data.issues == [] and data[0].label == expected


@pytest.mark.parametrize("crafted", ["-" * 1_000_000 + "1", "1+" * 200_000 + "1", "[" * 100_000,
                                     "(" * 50_000 + ")" * 50_000, "[{'start': " + "9" * 10_000 + "}]"])
def test_hallucination_labels_parse_with_bounded_cost(tmp_path, crafted):
    # ast.literal_eval raised MemoryError / RecursionError on the first two
    path = tmp_path / "t.csv"
    pd.DataFrame({"id": ["a", "b"], "query": ["q", "q"], "context": ["c", "c"], "output": ["out", "out"],
                  "hallucination_labels": [crafted, "[{'start': 0, 'end': 3}]"]}).to_csv(path, index=False)
    start = time.perf_counter()
    data = load(path)
    assert time.perf_counter() - start < 20
    assert [ex.id for ex in data] == ["b"] and data[0].label == 1
    assert data.issues[0].field.startswith("hallucination_labels")


_LIT = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(0, 9), c, max_size=4),
    max_leaves=15)


@settings(max_examples=200, deadline=None)
@given(_LIT)
def test_loads_literal_reads_python_reprs(value):
    assert loads_literal(repr(value)) == value


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_loads_literal_only_raises_value_error(text):
    try:
        loads_literal(text)
    except ValueError:
        pass
