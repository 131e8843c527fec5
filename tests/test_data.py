import json
import warnings

import pandas as pd
import pytest

from conftest import FIXTURES, write_lines
from evqual.data import (
    Chunk,
    EvqualDataWarning,
    Span,
    char_spans,
    chunk_context,
    derive_query,
    detect_layout,
    load_data,
    load_jsonl,
    load_ragtruth,
    load_table,
    make_example,
    response_label,
    sentence_targets,
    to_frame,
)
from evqual.errors import EvqualDataError

# ------------------------------------------------------------------ RAGTruth layout


def test_ragtruth_small_loads_every_row(small_dir):
    data = load_ragtruth(small_dir)
    assert [ex.id for ex in data] == ["r1", "r2", "r3", "r4"]
    assert data.issues == [] and data.layout == "ragtruth"
    r1, r2, r3, r4 = data
    assert r1.query == "how many people live in paris" and r1.task_type == "QA"
    assert [c.id for c in r1.chunks] == ["passage 1", "passage 2"]
    assert r1.chunk_text(0) == "Paris has 2.1 million inhabitants. It is the capital of France."
    assert r3.query == derive_query("Summary") and r4.query == derive_query("Data2txt")
    assert [c.id for c in r3.chunks] == ["sentence 1", "sentence 2", "sentence 3"]
    assert r2.temperature is None and r2.quality is None and r1.temperature == 0.7
    assert r1.label == 0 and r2.label == 1 and len(r2.spans) == 2
    assert r2.spans[0].label_type == "Evident Conflict" and r2.spans[1].implicit_true


def test_ragtruth_data2txt_chunks_are_key_value_lines(small_dir):
    r4 = load_ragtruth(small_dir)[3]
    ids = [c.id for c in r4.chunks]
    assert ids == ["name", "city", "business_stars", "attributes.WiFi", "attributes.OutdoorSeating",
                   "review_info[0]"]
    assert r4.chunk_text(0) == "name: Café Zoë"
    assert r4.chunk_text(4) == "attributes / Outdoor Seating: false"
    # new lines inside a review are folded so one review is one line
    assert "Great crêpes and coffee. Friendly staff." in r4.chunk_text(5)
    for c in r4.chunks:
        assert "\n" not in r4.context[c.start:c.end]


def test_ragtruth_splits_filter(small_dir):
    assert [ex.id for ex in load_ragtruth(small_dir, splits=["train"])] == ["r1"]


def test_ragtruth_accepts_response_file_path(small_dir):
    assert len(load_data(small_dir / "response.jsonl")) == 4


def _copy_small(small_dir, tmp_path, mutate_response=None, mutate_source=None):
    resp = (small_dir / "response.jsonl").read_text(encoding="utf-8").splitlines()
    src = (small_dir / "source_info.jsonl").read_text(encoding="utf-8").splitlines()
    if mutate_response:
        resp = mutate_response(resp)
    if mutate_source:
        src = mutate_source(src)
    write_lines(tmp_path / "response.jsonl", resp)
    write_lines(tmp_path / "source_info.jsonl", src)
    return tmp_path


def _edit(lines, i, fn):
    obj = json.loads(lines[i])
    fn(obj)
    lines = list(lines)
    lines[i] = json.dumps(obj)
    return lines


BAD_RESPONSE_CASES = [
    ("E101", None, lambda ls: ls[:1] + ["{not json"] + ls[2:]),
    ("E101", None, lambda ls: ls[:1] + ["[1, 2]"] + ls[2:]),
    ("E102", "response", lambda ls: _edit(ls, 1, lambda o: o.pop("response"))),
    ("E102", "labels", lambda ls: _edit(ls, 1, lambda o: o.pop("labels"))),
    ("E103", "temperature", lambda ls: _edit(ls, 1, lambda o: o.update(temperature="hot"))),
    ("E103", "labels[0].start", lambda ls: _edit(ls, 1, lambda o: o["labels"][0].update(start="10"))),
    ("E104", "labels[0].start/end", lambda ls: _edit(ls, 1, lambda o: o["labels"][0].update(end=10_000))),
    ("E104", "labels[0].start/end", lambda ls: _edit(ls, 1, lambda o: o["labels"][0].update(start=5, end=5))),
    ("E105", "labels[1].text", lambda ls: _edit(ls, 1, lambda o: o["labels"][1].update(text="Louvre!"))),
    ("E106", "source_id", lambda ls: _edit(ls, 1, lambda o: o.update(source_id="nope"))),
    ("E108", "id", lambda ls: _edit(ls, 1, lambda o: o.update(id="r1"))),
]


@pytest.mark.parametrize("code, field, mutate", BAD_RESPONSE_CASES)
def test_ragtruth_bad_row_reported_and_good_rows_kept(small_dir, tmp_path, code, field, mutate):
    folder = _copy_small(small_dir, tmp_path, mutate_response=mutate)
    with pytest.warns(EvqualDataWarning, match=code):
        data = load_ragtruth(folder)
    assert [ex.id for ex in data] == ["r1", "r3", "r4"]
    assert len(data.issues) == 1
    issue = data.issues[0]
    assert issue.code == code and issue.line == 2 and issue.field == field
    assert issue.file.endswith("response.jsonl")
    assert f"line 2" in str(issue) and "response.jsonl" in str(issue)


@pytest.mark.parametrize("code, field, mutate", BAD_RESPONSE_CASES)
def test_ragtruth_strict_raises_with_location(small_dir, tmp_path, code, field, mutate):
    folder = _copy_small(small_dir, tmp_path, mutate_response=mutate)
    with pytest.raises(EvqualDataError) as info:
        load_ragtruth(folder, strict=True)
    issue = info.value.issues[0]
    assert issue.code == code and issue.line == 2
    assert "line 2" in str(info.value)


@pytest.mark.parametrize(
    "code, field, mutate",
    [
        ("E103", "task_type", lambda ls: _edit(ls, 0, lambda o: o.update(task_type="Chat"))),
        ("E103", "source_info", lambda ls: _edit(ls, 0, lambda o: o.update(source_info="text"))),
        ("E102", "source_info.question", lambda ls: _edit(ls, 0, lambda o: o["source_info"].pop("question"))),
        ("E108", "source_id", lambda ls: ls + [ls[0]]),
    ],
)
def test_ragtruth_bad_source_rows(small_dir, tmp_path, code, field, mutate):
    folder = _copy_small(small_dir, tmp_path, mutate_source=mutate)
    with pytest.warns(EvqualDataWarning):
        data = load_ragtruth(folder)
    codes = [(i.code, i.field) for i in data.issues]
    assert (code, field) in codes
    # a bad QA source loses its two responses (E106), the rest stays
    if code != "E108":
        assert [ex.id for ex in data] == ["r3", "r4"]
        assert sum(i.code == "E106" for i in data.issues) == 2
    else:
        assert len(data) == 4


def test_ragtruth_missing_files(tmp_path):
    with pytest.raises(EvqualDataError, match="E109"):
        load_ragtruth(tmp_path)


def test_blank_lines_are_not_rows(small_dir, tmp_path):
    folder = _copy_small(small_dir, tmp_path, mutate_response=lambda ls: ls[:2] + ["", "   "] + ls[2:])
    data = load_ragtruth(folder)
    assert len(data) == 4 and data.issues == []


def test_invalid_utf8_line(small_dir, tmp_path):
    folder = _copy_small(small_dir, tmp_path)
    raw = (folder / "response.jsonl").read_bytes().split(b"\n")
    raw[2] = b'{"id": "\xff\xfe"}'
    (folder / "response.jsonl").write_bytes(b"\n".join(raw))
    with pytest.warns(EvqualDataWarning):
        data = load_ragtruth(folder)
    assert data.issues[0].code == "E101" and data.issues[0].line == 3 and len(data) == 3


def test_all_rows_bad_raises(tmp_path, small_dir):
    folder = _copy_small(small_dir, tmp_path, mutate_response=lambda ls: ["{"] * 3)
    with pytest.raises(EvqualDataError, match="0 good rows"):
        load_ragtruth(folder)


def test_report_lists_count_and_first_issues(small_dir, tmp_path):
    folder = _copy_small(small_dir, tmp_path, mutate_response=lambda ls: [ls[0]] + ["{"] * 8 + ls[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_ragtruth(folder)
    text = data.report(max_shown=3)
    assert "8 bad rows" in text and "and 5 more" in text and len(data) == 4


# ------------------------------------------------------------------ generic JSONL


def test_generic_jsonl():
    data = load_jsonl(FIXTURES / "generic.jsonl")
    g1, g2, g3, g4 = data
    assert g1.id == "g1" and g1.label == 0 and g1.spans is None and g1.model == "my-llm"
    assert [c.id for c in g1.chunks] == ["chunk 1", "chunk 2"]
    assert g1.context == "Paris is the capital of France.\n\nIt has 2.1 million inhabitants."
    assert g2.label == 1 and g2.spans == (Span(12, 17),)
    assert g3.id == "generic:3" and g3.label == 1 and "Zürich" in g3.context
    assert g4.output == "" and g4.label is None


@pytest.mark.parametrize(
    "row, code, field",
    [
        ({"query": "q", "output": "o"}, "E102", "context"),
        ({"query": "q", "context": "c"}, "E102", "output"),
        ({"query": "q", "context": ["a", 3], "output": "o"}, "E103", "context[1]"),
        ({"query": "q", "context": "c", "output": "o", "label": 2}, "E103", "label"),
        ({"query": "q", "context": "c", "output": "o", "label": "yes"}, "E103", "label"),
        ({"query": "q", "context": "c", "output": "o", "spans": [{"start": 0}]}, "E102", "spans[0].end"),
        ({"query": "q", "context": "c", "output": "o", "spans": [{"start": 0, "end": 9}]}, "E104", "spans[0].start/end"),
        ({"query": "q", "context": "c", "output": "abc", "spans": [{"start": 0, "end": 1, "text": "x"}]},
         "E105", "spans[0].text"),
        ({"query": "q", "context": "c", "output": "abc", "label": 0, "spans": [{"start": 0, "end": 1}]},
         "E103", "label"),
        ({"query": "q", "context": "c", "output": 5}, "E103", "output"),
    ],
)
def test_generic_jsonl_bad_rows(tmp_path, row, code, field):
    good = {"id": "ok", "query": "q", "context": "c", "output": "o"}
    path = write_lines(tmp_path / "logs.jsonl", [json.dumps(good), json.dumps(row), json.dumps(dict(good, id="ok2"))])
    with pytest.warns(EvqualDataWarning):
        data = load_jsonl(path)
    assert [ex.id for ex in data] == ["ok", "ok2"]
    assert (data.issues[0].code, data.issues[0].line, data.issues[0].field) == (code, 2, field)


def test_generic_jsonl_query_is_optional_as_in_the_python_api(tmp_path):
    """One rule for both (issue 21): a row without ``query`` loads, its query derived from the task type."""
    rows = [{"id": "a", "context": "c", "output": "o"}, {"id": "b", "context": "c", "output": "o", "query": None},
            {"id": "c", "context": "c", "output": "o", "task_type": "Summary"}]
    data = load_jsonl(write_lines(tmp_path / "x.jsonl", [json.dumps(r) for r in rows]))
    assert not data.issues
    assert [ex.query for ex in data] == ["", "", "Summarize the following news article."]


def test_generic_jsonl_whitespace_and_empty_context(tmp_path):
    rows = [{"id": "a", "query": "q", "context": "   \n  ", "output": "Some answer."},
            {"id": "b", "query": "q", "context": [], "output": "Some answer."},
            {"id": "c", "query": "q", "context": "", "output": ""}]
    data = load_jsonl(write_lines(tmp_path / "x.jsonl", [json.dumps(r) for r in rows]))
    assert [len(ex.chunks) for ex in data] == [0, 0, 0]


def test_generic_jsonl_huge_context(tmp_path):
    sentence = "The quick brown fox number 42 jumps over the lazy dog near Paris. "
    context = sentence * (1_000_000 // len(sentence) + 1)
    row = {"id": "big", "query": "q", "context": context, "output": "The fox jumps over 42 dogs in Paris."}
    data = load_jsonl(write_lines(tmp_path / "big.jsonl", [json.dumps(row)]))
    assert len(data[0].context) >= 1_000_000 and len(data[0].chunks) > 10_000


# ------------------------------------------------------------------ table layout


def test_processed_csv():
    data = load_table(FIXTURES / "processed.csv")
    p1, p2, p3 = data
    assert p1.id == "p1" and p1.label == 1 and p1.spans[0].label_type == "Evident Conflict"
    assert [c.id for c in p1.chunks] == ["passage 1", "passage 2"] and p1.temperature == 0.7
    assert p2.label == 0 and [c.id for c in p2.chunks] == ["name", "city"] and p2.temperature is None
    assert p2.quality is None
    assert p3.spans is None and p3.label == 1  # from hallucination_labels_processed


def test_processed_parquet(tmp_path):
    df = pd.read_csv(FIXTURES / "processed.csv", dtype=str, keep_default_na=False)
    df["temperature"] = pd.to_numeric(df["temperature"].replace("", None))
    path = tmp_path / "processed.parquet"
    df.to_parquet(path)
    data = load_data(path)
    assert [ex.id for ex in data] == ["p1", "p2", "p3"] and data.layout == "table"
    assert data[0].label == 1


def test_table_missing_columns(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"query": ["q"], "output": ["o"]}).to_csv(path, index=False)
    with pytest.raises(EvqualDataError, match="E107.*context"):
        load_table(path)


def test_table_bad_row_names_row_and_field(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"query": ["q", "q"], "context": ["c", "c"], "output": ["abc", "abc"],
                  "hallucination_labels": ['[{"start": 0, "end": 2}]', '[{"start": 0, "end": 99}]']}).to_csv(
        path, index=False)
    with pytest.warns(EvqualDataWarning):
        data = load_table(path)
    assert len(data) == 1
    assert (data.issues[0].code, data.issues[0].line, data.issues[0].field) == (
        "E104", 2, "hallucination_labels[0].start/end")
    assert "t.csv, row 2, field 'hallucination_labels[0].start/end'" in str(data.issues[0])


# ------------------------------------------------------------------ dispatch, frames, targets


def test_detect_layout(small_dir, tmp_path):
    assert detect_layout(small_dir) == "ragtruth"
    assert detect_layout(FIXTURES / "generic.jsonl") == "jsonl"
    assert detect_layout(FIXTURES / "processed.csv") == "table"
    with pytest.raises(EvqualDataError, match="E107"):
        detect_layout(tmp_path)
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(EvqualDataError, match="E107"):
        detect_layout(tmp_path / "x.txt")
    with pytest.raises(EvqualDataError, match="E109"):
        detect_layout(tmp_path / "missing.jsonl")


def test_to_frame_round_trip(small_dir):
    data = load_ragtruth(small_dir)
    df = to_frame(data)
    assert list(df["id"]) == ["r1", "r2", "r3", "r4"]
    assert list(df["label"]) == [0, 1, 1, 1] and list(df["n_spans"]) == [0, 2, 1, 1]
    assert df.loc[3, "chunks"][0] == ("name", 0, len("name: Café Zoë"))


def test_response_and_sentence_targets(small_dir):
    r2 = load_ragtruth(small_dir)[1]
    assert response_label(r2) == 1
    targets = sentence_targets(r2)
    assert [t["label"] for t in targets] == [1]
    assert targets[0]["label_types"] == ["Evident Baseless Info", "Evident Conflict"]
    assert char_spans(r2) == [(10, 19), (36, 46)]
    assert char_spans(r2, exclude_implicit_true=True) == [(10, 19)]


def test_exclude_implicit_true_can_flip_response_label():
    ex = make_example(query="q", context="c", output="Paris. Louvre.",
                      spans=[Span(7, 13, implicit_true=True)])
    assert response_label(ex) == 1
    assert response_label(ex, exclude_implicit_true=True) == 0
    assert [t["label"] for t in sentence_targets(ex, exclude_implicit_true=True)] == [0, 0]


def test_sentence_targets_unknown_without_spans():
    ex = make_example(query="q", context="c", output="Yes. No.", label=1)
    assert [t["label"] for t in sentence_targets(ex)] == [None, None]
    assert response_label(ex) == 1


def test_chunk_context_strategies():
    text, chunks = chunk_context("passage 1: Alpha beta.\n\npassage 2:Gamma.", "QA")
    assert [(c.id, text[c.start:c.end]) for c in chunks] == [("passage 1", "Alpha beta."), ("passage 2", "Gamma.")]
    text, chunks = chunk_context("One. Two.", "Summary")
    assert [text[c.start:c.end] for c in chunks] == ["One.", "Two."]
    text, chunks = chunk_context("name: X\n\ncity: Y", "Data2txt")
    assert [(c.id, text[c.start:c.end]) for c in chunks] == [("line 1", "name: X"), ("line 2", "city: Y")]
    with pytest.raises(TypeError, match="context"):
        chunk_context(42)


def test_make_example_with_precomputed_chunks():
    ex = make_example(query="q", context="abc def", output="o", chunks=[("a", 0, 3), Chunk("b", 4, 7)])
    assert ex.chunk_texts == ["abc", "def"]
