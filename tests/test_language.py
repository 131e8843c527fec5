"""evqual.text.language_warning: a documented heuristic for answers likely not in English (issue 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.text import language_signal, language_warning

DEV = Path(__file__).parent / "data" / "language" / "language_dev.jsonl"


def dev_rows():
    return [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_dev_set_is_big_and_varied_enough():
    rows = dev_rows()
    assert len(rows) >= 120
    assert len({r["lang"] for r in rows if r["expect_warning"]}) >= 8
    kinds = {r["kind"] for r in rows if not r["expect_warning"]}
    assert {"list", "numbers", "table", "names", "code", "short"} <= kinds


def test_dev_set_precision_and_recall_floor():
    # measured by scripts/language_eval.py: precision 1.000, recall 0.921 (58 of 63), no English text warned
    tp = fp = fn = 0
    for r in dev_rows():
        warned = language_warning(r["text"]) is not None
        tp += warned and r["expect_warning"]
        fp += warned and not r["expect_warning"]
        fn += (not warned) and r["expect_warning"]
    assert fp == 0
    assert tp / (tp + fn) >= 0.9


@pytest.mark.parametrize("text, rule, language", [
    ("Le musée a été fondé en 1793 et il est situé au cœur de Paris.", "function_words", "fr"),
    ("Das Museum wurde 1793 gegründet und befindet sich im Zentrum von Paris.", "function_words", "de"),
    ("该博物馆成立于1793年，位于巴黎市中心，是世界上参观人数最多的博物馆之一。", "script", "Han"),
    ("Музей был основан в 1793 году и находится в центре Парижа.", "script", "Cyrillic"),
])
def test_warning_shape(text, rule, language):
    w = language_warning(text)
    assert w["code"] == "W001" and "not in English" in w["message"]
    assert w["details"]["rule"] == rule and w["details"]["language"] == language
    json.dumps(w)  # serialisable as part of a result


@pytest.mark.parametrize("text", ["Oui.", "42", "", "   ", "Sí.", "Да.", "| a | b |\n| 1 | 2 |"])
def test_too_short_is_not_judged(text):
    assert language_warning(text) is None


def test_min_letters_is_the_cut():
    text = "Le musée est à Paris et il est très beau."
    letters = language_signal(text)["letters"]
    assert language_warning(text, min_letters=letters + 1) is None
    assert language_warning(text, min_letters=letters) is not None


def test_english_quoting_foreign_names_and_code_is_not_warned():
    for text in ("Banco de España and the Deutsche Bundesbank both raised their forecasts for the year.",
                 "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
                 "Los Angeles, Las Vegas and El Paso are among the cities the airline will serve from May."):
        assert language_warning(text) is None


def test_large_input_is_handled():
    text = ("The museum was founded in 1793 and it is located in Paris. " * 20000)[:1_000_000]
    assert language_warning(text) is None
    w = language_warning(("Le musée a été fondé en 1793 et il est situé à Paris. " * 20000)[:1_000_000])
    assert w["details"]["language"] == "fr" and w["details"]["words"] > 100000


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_never_raises_and_is_deterministic(text):
    first = language_warning(text)
    assert first == language_warning(text)
    assert first is None or (first["code"] == "W001" and isinstance(first["message"], str))
    s = language_signal(text)
    assert 0.0 <= s["non_latin_share"] <= 1.0 and 0.0 <= s["english_share"] <= 1.0


def test_non_string_input_is_converted():
    assert language_warning(12345) is None
