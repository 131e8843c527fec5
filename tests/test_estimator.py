"""The featurizer's scikit-learn contract, tested explicitly.

``parametrize_with_checks`` skips estimators whose input is not a 2-D array,
so each part of the contract that applies to a text transformer is checked
here by hand.
"""

import hashlib
import os
import pickle
import subprocess
import sys

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from evqual.data import load_sample, to_frame
from evqual.features import EvidenceFeaturizer, InvalidParameterError


@pytest.fixture(scope="module")
def data():
    return load_sample().examples


def test_default_params_and_repr():
    fz = EvidenceFeaturizer()
    assert fz.get_params() == {"level": "response", "families": None, "include_metadata": False,
                               "entity_backend": "regex"}
    assert repr(fz) == "EvidenceFeaturizer()"
    assert repr(EvidenceFeaturizer(level="sentence")) == "EvidenceFeaturizer(level='sentence')"


def test_params_are_keyword_only():
    with pytest.raises(TypeError):
        EvidenceFeaturizer("sentence")


def test_params_stored_as_given_and_set_params():
    fams = ["chain", "number"]
    fz = EvidenceFeaturizer(families=fams)
    assert fz.families is fams
    fz.set_params(level="sentence", include_metadata=True)
    assert fz.level == "sentence" and fz.include_metadata is True


def test_clone_unfitted_copy(data):
    fz = EvidenceFeaturizer(families=("chain",), include_metadata=True).fit(data)
    c = clone(fz)
    assert c.get_params() == fz.get_params()
    assert not hasattr(c, "feature_names_out_")


def test_not_fitted_errors(data):
    with pytest.raises(NotFittedError):
        EvidenceFeaturizer().transform(data)
    with pytest.raises(NotFittedError):
        EvidenceFeaturizer().get_feature_names_out()


@pytest.mark.parametrize(
    "params, match",
    [
        ({"level": "word"}, "'level' parameter of EvidenceFeaturizer must be a str among"),
        ({"entity_backend": "bert"}, "'entity_backend' parameter"),
        ({"include_metadata": "yes"}, "'include_metadata' parameter"),
        ({"families": ["chain", "colour"]}, "'families' parameter"),
        ({"families": "chain"}, "'families' parameter"),
        ({"families": []}, "'families' parameter"),
        ({"families": ["meta"]}, "include_metadata=True"),
    ],
)
def test_invalid_params_fail_at_fit(data, params, match):
    fz = EvidenceFeaturizer(**params)  # construction never validates (sklearn convention)
    with pytest.raises(InvalidParameterError, match=match):
        fz.fit(data)


@pytest.mark.parametrize("bad", ["just a string", np.zeros((2, 3)), 42, [1, 2]])
def test_bad_input_types(bad):
    with pytest.raises(TypeError, match="EvidenceFeaturizer expects"):
        EvidenceFeaturizer().fit(bad)


def test_feature_names_and_shape(data):
    fz = EvidenceFeaturizer().fit(data)
    X = fz.transform(data)
    assert X.shape == (len(data), fz.n_features_out_) and X.dtype == np.float64
    assert len(fz.get_feature_names_out()) == X.shape[1]
    assert fz.entity_backend_ == "regex"


@pytest.mark.parametrize("families", [["number", "chain"], ["chain"], ["support", "length"], ["entity"]])
def test_families_select_columns_without_changing_values(data, families):
    a = EvidenceFeaturizer(families=families).fit(data)
    b = EvidenceFeaturizer(families=families[::-1]).fit(data)
    assert list(a.get_feature_names_out()) == list(b.get_feature_names_out())
    full = EvidenceFeaturizer().fit(data)
    cols = [list(full.get_feature_names_out()).index(n) for n in a.get_feature_names_out()]
    np.testing.assert_array_equal(a.transform(data), full.transform(data)[:, cols])


def test_rows_keep_input_order(data):
    fz = EvidenceFeaturizer().fit(data)
    X = fz.transform(data)
    perm = list(range(len(data)))[::-1]
    np.testing.assert_array_equal(fz.transform([data[i] for i in perm]), X[perm])


def test_pickle_and_joblib_round_trip(data, tmp_path):
    fz = EvidenceFeaturizer(include_metadata=True).fit(data)
    X = fz.transform(data)
    fz2 = pickle.loads(pickle.dumps(fz))
    np.testing.assert_array_equal(fz2.transform(data), X)
    joblib.dump(fz, tmp_path / "fz.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "fz.joblib").transform(data), X)


def test_dataframe_and_dict_inputs_match_examples(data):
    fz = EvidenceFeaturizer(include_metadata=True).fit(data)
    X = fz.transform(data)
    np.testing.assert_array_equal(fz.transform(to_frame(data)), X)
    dicts = [{"query": ex.query, "context": ex.context, "output": ex.output, "task_type": ex.task_type,
              "model": ex.model, "quality": ex.quality, "temperature": ex.temperature,
              "chunks": [(c.id, c.start, c.end) for c in ex.chunks]} for ex in data]
    np.testing.assert_array_equal(fz.transform(dicts), X)


def test_works_inside_a_pipeline_with_cross_validation(data):
    y = np.array([ex.label for ex in data])
    pipe = make_pipeline(EvidenceFeaturizer(), StandardScaler(), LogisticRegression(max_iter=1000))
    scores = cross_val_score(pipe, data, y, cv=3, scoring="roc_auc")
    assert scores.shape == (3,) and np.all(np.isfinite(scores))


def test_sentence_level_rows_and_frame(data):
    fz = EvidenceFeaturizer(level="sentence").fit(data)
    X = fz.transform(data)
    df = fz.sentence_frame(data)
    assert len(df) == X.shape[0] == sum(len(a.sentences) for a in fz.analyze(data)[1])
    np.testing.assert_array_equal(df[list(fz.get_feature_names_out())].to_numpy(), X)
    first = data[0]
    rows = df[df["id"] == first.id]
    for _, r in rows.iterrows():
        assert first.output[r["start"]:r["end"]].strip() == first.output[r["start"]:r["end"]]
    assert set(df["label"].dropna().unique()) <= {0, 1}
    with pytest.raises(ValueError, match="level='sentence'"):
        EvidenceFeaturizer().fit(data).sentence_frame(data)


def test_frame_response_level(data):
    fz = EvidenceFeaturizer().fit(data)
    df = fz.frame(data)
    assert list(df.columns[:6]) == ["id", "source_id", "split", "task_type", "model", "label"]
    assert list(df["id"]) == [ex.id for ex in data]


def test_empty_input(data):
    fz = EvidenceFeaturizer().fit(data)
    assert fz.transform([]).shape == (0, fz.n_features_out_)
    assert len(EvidenceFeaturizer(level="sentence").fit(data).frame([])) == 0


_SCRIPT = (
    "import hashlib, numpy as np\n"
    "from evqual.data import load_sample\n"
    "from evqual.features import EvidenceFeaturizer\n"
    "d = load_sample().examples\n"
    "X = EvidenceFeaturizer(level='{level}', include_metadata=True).fit(d).transform(d)\n"
    "print(hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest())\n"
)


@pytest.mark.parametrize("level", ["response", "sentence"])
def test_byte_identical_across_processes(level, data):
    digests = set()
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", _SCRIPT.format(level=level)], capture_output=True,
                             text=True, env=env, check=True)
        digests.add(out.stdout.strip())
    here = EvidenceFeaturizer(level=level, include_metadata=True).fit(data).transform(data)
    digests.add(hashlib.sha256(np.ascontiguousarray(here).tobytes()).hexdigest())
    assert len(digests) == 1
