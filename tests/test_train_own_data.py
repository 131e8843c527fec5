"""Training on a user's own labelled logs (issue 10): response-level fallback without spans, clear errors."""

from __future__ import annotations

import json
import warnings

import pytest

from evqual.cli import main
from evqual.data import load_data
from evqual.errors import ResponseLevelFallbackWarning, TrainingDataError
from evqual.models import Detector, get_method, load_detector, read_meta, save_detector, training_needs

WORDS = ["river", "bridge", "museum", "harbour", "castle", "market", "tower", "garden", "library", "station"]


def rows(n: int, labels=None, spans: bool = False) -> list[dict]:
    """``n`` QA answers, one source each; hallucinated ones change the year and the length."""
    out = []
    for i in range(n):
        w1, w2 = WORDS[i % 10], WORDS[(i // 10) % 10]
        year, num = 1800 + (i * 37) % 200, 3 + (i * 11) % 90
        lab = labels[i] if labels is not None else int(i % 9 in (1, 3, 5, 7))
        ctx = f"The {w1} of town {i} was built in {year}. It is {num} metres long and stands next to the {w2}."
        out_year = year + 5 + i % 7 if lab else year
        output = f"The {w1} of town {i} was built in {out_year}. It is {num * 2 if lab else num} metres long."
        row = {"id": f"r{i}", "query": f"When was the {w1} of town {i} built?", "context": [ctx],
               "output": output, "label": lab, "task_type": "QA"}
        if spans and lab:
            start = output.index(str(out_year))
            row["spans"] = [{"start": start, "end": start + 4}]
        out.append(row)
    return out


def write(path, rs):
    path.write_text("".join(json.dumps(r) + "\n" for r in rs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    return write(tmp_path_factory.mktemp("own") / "own.jsonl", rows(120))


@pytest.fixture(scope="module")
def fitted(own):
    det = Detector("evqual")
    with pytest.warns(ResponseLevelFallbackWarning, match="no spans.*evqual-response"):
        det.fit(load_data(own))
    return det


def test_detector_without_spans_falls_back_to_the_response_variant_and_warns(fitted, own, tmp_path):
    det = fitted
    assert det.method == "evqual-response" and not det.spec.sentence_level
    assert det.fallback_["from"] == "evqual" and det.fallback_["to"] == "evqual-response"
    assert det.sentence_threshold_ is None and det.span_tagger_ is None
    folder = save_detector(det, tmp_path / "m")
    meta = read_meta(folder)
    assert meta["method"] == "evqual-response" and meta["fallback"] == det.fallback_
    loaded = load_detector(folder)
    assert loaded.method == "evqual-response"
    assert loaded.predict_proba(load_data(own)[:3]).shape == (3,)


def test_data_with_spans_keep_the_sentence_method(tmp_path):
    data = load_data(write(tmp_path / "spans.jsonl", rows(120, spans=True)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResponseLevelFallbackWarning)
        det = Detector("evqual").fit(data)
    assert det.method == "evqual" and det.fallback_ is None


def test_meta_fallback_is_validated(fitted, tmp_path):
    from evqual.models import ModelLoadError

    folder = save_detector(fitted, tmp_path / "m")
    meta_path = folder / "meta.json"
    meta = json.loads(meta_path.read_text())
    for bad, field in (({"from": "evqual", "to": "evqual-meta-response", "reason": "x"}, "fallback.to"),
                       ({"from": "tfidf-lr", "to": "evqual-response", "reason": "x"}, "fallback.from"),
                       ({"from": "evqual", "to": "evqual-response"}, "fallback"),
                       ({"from": "evqual", "to": "evqual-response", "reason": " "}, "fallback.reason")):
        meta_path.write_text(json.dumps({**meta, "fallback": bad}))
        with pytest.raises(ModelLoadError, match=field.replace(".", r"\.")):
            read_meta(folder)


@pytest.mark.parametrize("n, labels, found", [
    (3, None, "found 3 rows (1 hallucinated, 2 grounded) from 3 sources, short of 30 rows, 5 of each label, "
              "25 of the more common label, 5 sources;"),
    (10, None, "found 10 rows (4 hallucinated, 6 grounded) from 10 sources, short of 30 rows, 5 of each label, "
               "25 of the more common label;"),
    (60, [0] * 60, "found 60 rows (0 hallucinated, 60 grounded) (all one label) from 60 sources, short of 5 of "
                   "each label;"),
    (26, None, "found 26 rows (12 hallucinated, 14 grounded) from 26 sources, short of 30 rows, 25 of the more "
               "common label;"),
    (40, [int(i % 40 < 18) for i in range(40)], "found 40 rows (18 hallucinated, 22 grounded) from 40 sources, "
                                                "short of 25 of the more common label;"),
])
def test_too_little_data_is_a_clear_error(tmp_path, n, labels, found):
    data = load_data(write(tmp_path / "d.jsonl", rows(n, labels)))
    with pytest.raises(TrainingDataError, match=r"too little training data") as info:
        Detector("evqual").fit(data)
    msg = str(info.value)
    assert found in msg and ("need at least 30 rows: 5 hallucinated, 5 grounded and 25 of the more common label, "
                             "from at least 5 sources") in msg
    assert isinstance(info.value, ValueError) and info.value.rows == n


def test_too_few_sources_for_the_grouped_split(tmp_path):
    rs = rows(60, [i % 2 for i in range(60)])
    for i, r in enumerate(rs):
        r["source_id"] = f"s{i % 3}"
    with pytest.raises(TrainingDataError, match="from 3 sources, short of 5 sources; need .* from at least 5"):
        Detector("evqual").fit(load_data(write(tmp_path / "d.jsonl", rs)))


def test_needs_follow_calibration_and_validation_size():
    assert training_needs() == {"rows": 30, "per_label": 5, "majority": 25, "sources": 5}
    assert training_needs(calibration="none") == {"rows": 10, "per_label": 5, "majority": 5, "sources": 5}
    assert training_needs(n_splits=4) == {"rows": 24, "per_label": 4, "majority": 20, "sources": 4}


def test_one_sided_validation_part_is_a_clear_error():
    import pandas as pd

    frame = pd.DataFrame({"label": [0, 1] * 10, "source_id": range(20), "task_type": "QA"})
    val = pd.DataFrame({"label": [0, 0, 0, 1], "source_id": range(4), "task_type": "QA"})
    with pytest.raises(TrainingDataError, match=r"validation part holds 4 rows \(1 hallucinated, 3 grounded\); "
                                                r"it needs both labels and 5 rows of one of them"):
        Detector("majority").fit_frames(frame, val)
    one_sided = pd.DataFrame({"label": [0] * 8, "source_id": range(8), "task_type": "QA"})
    with pytest.raises(TrainingDataError, match=r"validation part holds 8 rows \(0 hallucinated, 8 grounded\)"):
        Detector("majority", calibration="none").fit_frames(frame, one_sided)


def test_other_sentence_methods_say_spans_are_needed(own):
    with pytest.raises(ValueError, match="learns from sentence labels.*spans"):
        Detector("logreg-attribution").fit(load_data(own))


def test_variants_are_known_methods_but_not_reproduced():
    from evqual.models import METHODS

    assert get_method("evqual-response").sentence_level is False
    assert get_method("evqual-meta-response").uses_metadata is True
    assert "evqual-response" not in METHODS


def test_cli_train_falls_back_with_one_stderr_line(own, tmp_path, capsys):
    assert main(["train", "--data", str(own), "--out", str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if line.startswith("evqual train: note:")]
    assert len(notes) == 1 and "evqual-response" in notes[0]
    assert "saved evqual-response" in err
    assert json.loads((tmp_path / "m" / "meta.json").read_text())["fallback"]["from"] == "evqual"


def test_cli_train_too_little_data_exit_code_and_message(tmp_path, capsys):
    path = write(tmp_path / "tiny.jsonl", rows(3))
    assert main(["train", "--data", str(path), "--out", str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert "evqual train: error: too little training data: found 3 rows" in err
    assert "Traceback" not in err and not (tmp_path / "m").exists()


def test_cli_evaluate_falls_back_and_records_it(own, tmp_path, capsys):
    assert main(["evaluate", "--data", str(own), "--out", str(tmp_path / "r"), "--protocol", "cv5",
                 "--no-importance"]) == 0
    err = capsys.readouterr().err
    assert sum(line.startswith("evqual evaluate: note:") for line in err.splitlines()) == 1
    assert json.loads((tmp_path / "r" / "metrics.json").read_text())["fallback"]["to"] == "evqual-response"
