"""Property-based tests (hypothesis) of the features."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evqual.data import make_example
from evqual.features import EvidenceFeaturizer, feature_spec
from evqual.text import STOP_WORDS
from evqual.text._sentences import ABBREVIATIONS

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# words that never trip the sentence splitter's abbreviation/initial rules
WORDS = [w for w in ["river", "stone", "market", "garden", "signal", "harbor", "copper", "window", "forest",
                     "ticket", "silver", "engine", "planet", "valley", "bridge", "castle", "pepper", "candle",
                     "rocket", "violin", "meadow", "island", "thunder", "saddle"]
         if w not in STOP_WORDS and w not in ABBREVIATIONS]
NAMES = ["Paris", "Berlin", "Acme Corp", "Tim Cook", "Lake Tahoe", "Zoë Martin", "NASA"]
NUMBERS = ["12", "1,600", "3.5", "$23.70", "16%", "67 million", "2014"]

word = st.sampled_from(WORDS)
token = st.one_of(word, word, word, st.sampled_from(NAMES), st.sampled_from(NUMBERS))


@st.composite
def sentence(draw):
    first = draw(word).capitalize()
    rest = draw(st.lists(token, min_size=1, max_size=10))
    return " ".join([first] + rest + [draw(word)]) + "."


sentences = st.lists(sentence(), min_size=1, max_size=6)
any_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300)
task = st.sampled_from(["QA", "Summary", "Data2txt", None])


def featurize(examples, **kw):
    fz = EvidenceFeaturizer(**kw).fit(examples)
    return dict(zip(fz.get_feature_names_out(), fz.transform(examples).T)), fz


@SETTINGS
@given(query=any_text, context=st.one_of(any_text, st.lists(any_text, max_size=4)), output=any_text, task=task)
def test_every_feature_stays_in_its_documented_range(query, context, output, task):
    ex = make_example(query=query, context=context, output=output, task_type=task)
    for level in ("response", "sentence"):
        fz = EvidenceFeaturizer(level=level).fit([ex])
        X = fz.transform([ex])
        assert np.isfinite(X).all()
        for j, name in enumerate(fz.get_feature_names_out()):
            spec = feature_spec(name)
            assert (X[:, j] >= spec.low - 1e-12).all() and (X[:, j] <= spec.high + 1e-12).all(), name


@SETTINGS
@given(chunks=sentences, task=st.sampled_from(["QA", None]))
def test_output_identical_to_context_is_fully_supported(chunks, task):
    ex = make_example(query="q", context=chunks, output=" ".join(chunks), task_type=task)
    f, _ = featurize([ex])
    for name in ("coverage.output_context.v1", "support.mean.v1", "support.min.v1", "chain.jaccard.min.v1",
                 "chain.recall.min.v1"):
        assert f[name][0] == 1.0, name
    for name in ("chain.tfidf.min.v1", "chain.bm25.min.v1", "chain.ecs.min.v2"):
        assert abs(f[name][0] - 1.0) < 1e-9, name
    for name in ("entity.unsupported_count.v1", "entity.unsupported_rate.v1", "number.unsupported_count.v2",
                 "number.new_rate.v2", "number.conflict.v2", "support.margin.v1"):
        assert f[name][0] == 0.0, name


@SETTINGS
@given(chunks=sentences, picks=st.lists(st.integers(0, 100), min_size=1, max_size=6),
       extra=st.lists(st.sampled_from(WORDS), max_size=5))
def test_numbers_and_entities_from_the_context_are_never_unsupported(chunks, picks, extra):
    # build an output from context sentences (any order) plus context-free filler words
    body = [chunks[p % len(chunks)] for p in picks]
    if extra:
        body.append("Also " + " ".join(extra) + ".")
    ex = make_example(query="q", context=chunks, output=" ".join(body), task_type="QA")
    f, _ = featurize([ex])
    assert f["number.unsupported_count.v2"][0] == 0
    assert f["entity.unsupported_count.v1"][0] == 0


@SETTINGS
@given(chunks=sentences, output=sentences, seed=st.integers(0, 2**32 - 1))
def test_permuting_chunks_keeps_max_based_features(chunks, output, seed):
    perm = np.random.default_rng(seed).permutation(len(chunks))
    a = make_example(query="q", context=chunks, output=" ".join(output), task_type="QA")
    b = make_example(query="q", context=[chunks[i] for i in perm], output=" ".join(output), task_type="QA")
    fa, fz = featurize([a])
    fb, _ = featurize([b])
    invariant = [n for n in fz.get_feature_names_out()
                 if n.split(".")[0] in ("coverage", "support", "semantic", "entity", "length", "task", "refusal")
                 or n.startswith(("chain.jaccard", "chain.tfidf", "chain.bm25"))
                 or n in ("number.count.v2", "number.unsupported_count.v2", "number.new_rate.v2")]
    for name in invariant:
        assert abs(fa[name][0] - fb[name][0]) < 1e-9, name


@SETTINGS
@given(query=any_text, context=st.lists(any_text, max_size=3), output=any_text)
def test_deterministic_repeat(query, context, output):
    ex = make_example(query=query, context=context, output=output)
    fz = EvidenceFeaturizer(level="sentence").fit([ex])
    assert fz.transform([ex]).tobytes() == fz.transform([ex]).tobytes()
    fz2 = EvidenceFeaturizer().fit([ex])
    assert fz2.transform([ex, ex])[0].tobytes() == fz2.transform([ex])[0].tobytes()


# ---------------------------------------------------------------- token features (span tagger)
@SETTINGS
@given(ctx=sentences, out=sentences, punct=st.lists(st.sampled_from([", ", "; ", " (", ") ", " - "]), max_size=3),
       raw=any_text)
def test_token_block_properties(ctx, out, punct, raw):
    from evqual.features import TOKEN_FEATURE_NAMES, token_block
    from evqual.features._analysis import analyze
    from evqual.text import token_spans

    output = " ".join(out) + "".join(punct) + raw
    ex = make_example(query="What happened?", context=" ".join(ctx), output=output)
    an = analyze(ex, None)
    spans = [(0, min(5, len(output)))] if output else []
    block = token_block(output, an, spans)
    V = block.values
    col = {n: i for i, n in enumerate(TOKEN_FEATURE_NAMES)}
    assert V.shape == (len(block.offsets), len(TOKEN_FEATURE_NAMES)) and np.isfinite(V).all()
    # the tokens are the output's tokens inside sentences, in order, each inside its sentence
    inside = [(s, e) for s, e, _ in token_spans(output) if any(a <= s and e <= b for a, b in an.offsets)]
    assert [tuple(o) for o in block.offsets.tolist()] == inside
    for (s, e), i in zip(block.offsets.tolist(), block.sentence.tolist()):
        a, b = an.offsets[i]
        assert a <= s < e <= b
    # novel implies content and absent from the context; shares lie in [0, 1]
    assert (V[V[:, col["tok.novel"]] == 1, col["tok.content"]] == 1).all()
    assert (V[V[:, col["tok.novel"]] == 1, col["tok.in_context"]] == 0).all()
    for name in ("tok.window3", "tok.window8", "tok.clause_novel", "tok.clause_near", "tok.pos_sentence",
                 "tok.pos_response", "tok.clause_pos"):
        assert ((V[:, col[name]] >= 0) & (V[:, col[name]] <= 1)).all(), name
    assert (V[:, col["tok.dist_novel"]][V[:, col["tok.novel"]] == 1] == 0).all()
    # labels: a token is positive exactly when it overlaps a gold span
    want = [int(any(s < ge and e > gs for gs, ge in spans)) for s, e in block.offsets.tolist()]
    assert block.labels.tolist() == want
