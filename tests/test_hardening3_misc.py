"""Hardening, third round (issue 39), parts 3 and 4: one usable core, and the smaller items.

Grouped by attack: cores, a number JSON cannot hold, policy overrides, unknown paths, an unwritable audit
log, bidi controls in reports, terminal escapes in a model file's version strings, padding in a pack, the
wording of pack errors.  Each failed on the code before the fix.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evqual.models import ModelLoadError, default_model_path, load_detector
from evqual.scoring import Policy, Scorer, resolve_jobs, usable_cores
from evqual.scoring import _parallel

ITEM = {"query": "When did it open?", "context": ["The bridge opened in 1932."], "output": "It opened in 1932."}


# ------------------------------------------------------------------ 3. one usable core

def test_usable_cores_follow_a_cgroup_cpu_quota(tmp_path, monkeypatch):
    """A container with a one-CPU quota of a two-core machine has one usable core (its affinity shows two)."""
    quota = tmp_path / "cpu.max"
    real = _parallel._cgroup_cpu_quota
    monkeypatch.setattr(_parallel, "_cgroup_cpu_quota", lambda: real(str(quota)))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    quota.write_text("100000 100000\n")
    assert usable_cores() == 1 and resolve_jobs(0) == 1 and resolve_jobs(8) == 1
    quota.write_text("max 100000\n")
    assert usable_cores() == 2
    quota.write_text("250000 100000\n")  # 2.5 CPUs: at most the affinity's 2
    assert usable_cores() == 2
    quota.write_text("garbage\n")
    assert usable_cores() == 2
    quota.unlink()
    assert usable_cores() == 2


# ------------------------------------------------------------------ the service (server extra)

def _service():
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    from evqual.service import ServeConfig, create_app

    return httpx, ServeConfig, create_app


@pytest.fixture(scope="module")
def scorer():
    return Scorer.load(policy=Policy())


def _client(scorer, **cfg):
    httpx, ServeConfig, create_app = _service()
    from fastapi.testclient import TestClient  # noqa: F401 - the real server is tested in test_service.py

    app = create_app(ServeConfig(**cfg), scorer=scorer)
    return _Running(app)


class _Running:
    """The app in a real uvicorn server on 127.0.0.1, with an httpx client."""

    def __init__(self, app):
        import threading
        import time

        import httpx
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=30)


def test_a_number_json_cannot_hold_is_read_as_evqual_score_reads_it(scorer):
    """Before: ``"x": 1e999`` in one item was a 500 for the whole batch, with no audit record."""
    with _client(scorer) as client:
        body = ('{"items": [{"query":"q","context":"The bridge opened in 1932.","output":"It opened in 1932.",'
                '"x":1e999}, {"query":"q","context":1e999,"output":"o"}, '
                '{"query":"q","context":"The bridge opened.","output":"It opened."}]}')
        r = client.post("/v1/score", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text
        first, second, third = r.json()["results"]
        assert "risk" in first and [w["code"] for w in first["warnings"] if w["code"] != "W004"] == ["W002"]
        assert "risk" not in second and second["issues"][0]["code"] == "E103"
        assert second["issues"][0]["field"] == "context"
        assert "risk" in third
        single = client.post("/v1/score", content='{"query":"q","context":"c d.","output":"c d.","x":-1e999}',
                             headers={"Content-Type": "application/json"})
        assert single.status_code == 200 and [w["code"] for w in single.json()["result"]["warnings"] if w["code"] != "W004"] == ["W002"]


def test_policy_overrides_are_off_by_default_and_bounded_when_stricter(scorer):
    """Before: any client could send thresholds of 1 and an empty escalation list, switching flagging off."""
    loose = {"general_threshold": 1.0, "sensitive_threshold": 1.0, "escalate_band": None, "escalate_reasons": []}
    with _client(scorer) as client:
        r = client.post("/v1/score", json={**ITEM, "policy": loose})
        assert r.status_code == 403 and "switched off" in r.json()["error"]
        assert client.get("/v1/model").json()["policy_overrides"] == "off"
    with _client(scorer, policy_overrides="stricter") as client:
        r = client.post("/v1/score", json={**ITEM, "policy": loose})
        assert r.status_code == 403
        assert all(k in r.json()["error"] for k in ("general_threshold", "escalate_band", "escalate_reasons"))
        r = client.post("/v1/score", json={**ITEM, "policy": {"general_threshold": 0.1, "sensitive_threshold": 0.1}})
        assert r.status_code == 200 and r.json()["result"]["threshold"] == 0.1
        assert client.post("/v1/score", json={**ITEM, "policy": {"nope": 1}}).status_code == 422
    with _client(scorer, policy_overrides="any") as client:
        assert client.post("/v1/score", json={**ITEM, "policy": loose}).status_code == 200


_SEVERITY = {"show": 0, "warn": 1, "escalate": 2, "regenerate": 3, "abstain": 4}
_unit = st.floats(0, 1, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(general=st.one_of(st.none(), _unit), sensitive=_unit, regenerate=_unit, abstain=_unit,
       band=st.one_of(st.none(), st.tuples(_unit, _unit).map(sorted).map(tuple)),
       escalate_sensitive=st.booleans(),
       reasons=st.lists(st.sampled_from(["NUMBER_CONFLICT", "ENTITY_CONFLICT", "DATE_CONFLICT", "X"]), max_size=3),
       model_threshold=st.floats(0.05, 0.95),
       risks=st.lists(_unit, min_size=1, max_size=20))
def test_an_override_accepted_as_stricter_never_gives_a_milder_decision(general, sensitive, regenerate, abstain,
                                                                        band, escalate_sensitive, reasons,
                                                                        model_threshold, risks):
    base = Policy()
    try:
        new = base.with_overrides({"general_threshold": general, "sensitive_threshold": sensitive,
                                   "regenerate_at": regenerate, "abstain_at": abstain,
                                   "escalate_band": list(band) if band else None,
                                   "escalate_sensitive": escalate_sensitive, "escalate_reasons": reasons})
    except ValueError:
        return
    if new.looser_than(base, model_threshold):
        return
    for risk in [*risks, 0.0, 1.0, model_threshold, *(band or ())]:
        for topics in ((), ("healthcare",)):
            for found in ([], ["NUMBER_CONFLICT"]):
                a = base.decide(risk, topics=topics, reasons=found, model_threshold=model_threshold)
                b = new.decide(risk, topics=topics, reasons=found, model_threshold=model_threshold)
                assert _SEVERITY[b.decision] >= _SEVERITY[a.decision], (risk, topics, found, a, b)


def test_unknown_paths_and_methods_get_the_documented_error_shape(scorer):
    """Before: FastAPI's {"detail": "Not Found"}."""
    with _client(scorer) as client:
        r = client.get("/nope", headers={"X-Request-ID": "abc-1"})
        assert r.status_code == 404 and set(r.json()) == {"error", "request_id"}
        assert r.json()["request_id"] == "abc-1" and r.headers["x-request-id"] == "abc-1"
        r = client.get("/v1/score")
        assert r.status_code == 405 and set(r.json()) == {"error", "request_id"}


def test_an_unwritable_audit_log_stops_serve_in_one_line(tmp_path):
    """Before: a 22-line uvicorn traceback and exit 3."""
    _service()
    target = tmp_path / "no-such-folder" / "audit.jsonl"
    proc = subprocess.run([sys.executable, "-m", "evqual", "serve", "--port", "0", "--audit-log", str(target)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "EVQUAL_API_TOKENS": ""})
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("evqual serve: error:") and "audit.jsonl" in lines[0]
    assert "Traceback" not in proc.stderr and not target.exists()


# ------------------------------------------------------------------ bidi controls in reports

HOSTILE_IDS = ["a1\u202e lanigiro", "x\u2067y", "\u05e9\u05dc\u05d5\u05dd 12", "z\u202d\u200f9", "q\u2069\u2068"]


def _results(ids):
    from evqual.scoring import ScoreResult

    return [ScoreResult(id=i, risk=0.8, flagged=True, decision="warn", threshold=0.5,
                        output="It has 69 million people.") for i in ids]


def test_reports_show_bidi_controls_and_isolate_right_to_left_text():
    from evqual.explain import render_html, render_markdown

    controls = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
    for page in (render_html(_results(HOSTILE_IDS)), render_markdown(_results(HOSTILE_IDS))):
        # every explicit control of the input is shown; what remains are balanced isolates we added
        shown = page.replace("\\[", "[").replace("\\]", "]")  # markdown escapes the brackets
        assert "[U+202E]" in shown and "[U+2067]" in shown and "[U+202D]" in shown and "[U+200F]" in shown
        left = controls.findall(page)
        assert set(left) <= {"\u2068", "\u2069"} and left.count("\u2068") == left.count("\u2069")
        assert "\u2068\u05e9\u05dc\u05d5\u05dd 12\u2069" in page  # the Hebrew id, isolated


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1 \u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                                             "\u200e\u200f\u05d0\u0627")), max_size=30))
def test_markdown_text_never_leaves_an_explicit_control(text):
    from evqual._markdown import md_text

    out = md_text(text)
    inner = out[1:-1] if out.startswith("\u2068") else out
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f]", inner)


def _browser():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(not _browser(), reason="no chromium on PATH (Debian's chromium package)")
def test_badges_read_in_order_in_a_real_browser(tmp_path):
    """Headless Chromium lays out the HTML report: for every hostile id, the id, the risk and the decision
    badge stand left to right, and the risk text reads left to right ('r' before 'k')."""
    from evqual.explain import render_html

    page = render_html(_results(["plain", *HOSTILE_IDS]))
    probe = """<script>
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('.card-head').forEach(function (h) {
    var rid = h.querySelector('.rid').getBoundingClientRect(), risk = h.querySelector('.risk'),
        badge = h.querySelector('.badge').getBoundingClientRect(), t = risk.firstChild, r = document.createRange();
    r.setStart(t, 0); r.setEnd(t, 1); var first = r.getBoundingClientRect().left;
    r.setStart(t, 3); r.setEnd(t, 4); var fourth = r.getBoundingClientRect().left;
    out.push([rid.left, rid.right, risk.getBoundingClientRect().left, badge.left, first, fourth,
              h.querySelector('.badge').textContent]);
  });
  var pre = document.createElement('pre'); pre.id = 'bidi-probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""
    # the probe is an inline script: the report's Content-Security-Policy (script hashes) would block it
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace("</body>", probe + "</body>")
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    cmd = [_browser(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000", "--dump-dom", path.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    m = re.search(r'<pre id="bidi-probe">(.*?)</pre>', proc.stdout)
    assert m, proc.stderr[-2000:]
    rows = json.loads(m.group(1))
    assert len(rows) == 1 + len(HOSTILE_IDS)
    for rid_left, rid_right, risk_left, badge_left, first, fourth, badge in rows:
        assert rid_left < risk_left < badge_left and rid_right <= risk_left + 1
        assert first < fourth and badge == "warn"


# ------------------------------------------------------------------ model files: version strings, padding, wording

def _pack_copy(tmp_path: Path, name: str = "model") -> Path:
    dst = tmp_path / name
    shutil.copytree(default_model_path(), dst)
    return dst


def _members(folder: Path) -> dict:
    with zipfile.ZipFile(folder / "model.evqpack") as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _install(folder: Path, members: dict) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    data = buf.getvalue()
    (folder / "model.evqpack").write_bytes(data)
    meta = json.loads((folder / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(data).hexdigest()  # as an attacker can
    (folder / "meta.json").write_text(json.dumps(meta))


def _one_line_refusal(folder: Path, match: str):
    with pytest.raises(ModelLoadError, match=match) as info:
        load_detector(folder)
    text = str(info.value)
    assert "\n" not in text and "\x1b" not in text
    return text


ESCAPES = "1.6.1\x1b[31m\nFAKE LOG LINE\x1b[0m"


def test_escapes_in_a_packed_estimators_version_are_refused(tmp_path):
    folder = _pack_copy(tmp_path)
    members = _members(folder)
    graph = json.loads(members["graph.json"])
    text = json.dumps(graph, separators=(",", ":"))
    assert '"_sklearn_version":' in text
    text = re.sub(r'"_sklearn_version":"[^"]*"', lambda m: '"_sklearn_version":' + json.dumps(ESCAPES), text, count=1)
    _install(folder, {"graph.json": text.encode("ascii"), "arrays.bin": members["arrays.bin"]})
    assert "_sklearn_version is not a version string" in _one_line_refusal(folder, "not a version string")


def test_escapes_in_meta_versions_are_refused(tmp_path):
    for key in ("sklearn_version", "evqual_version", "python_version", "numpy_version"):
        folder = _pack_copy(tmp_path, key)
        meta = json.loads((folder / "meta.json").read_text())
        meta[key] = ESCAPES
        (folder / "meta.json").write_text(json.dumps(meta))
        assert key in _one_line_refusal(folder, "not a version string")


def test_escapes_in_a_skops_files_version_are_refused(tmp_path, evqual_sample_detector):
    from evqual.models import save_detector

    folder = save_detector(evqual_sample_detector, tmp_path / "skops", model_format="skops")
    with zipfile.ZipFile(folder / "model.skops") as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    schema = members["schema.json"].decode()
    assert "_sklearn_version" in schema
    schema = re.sub(r'("_sklearn_version": ?\{[^{}]*?"content": ?)"(?:[^"\\]|\\.)*"',
                    lambda m: m.group(1) + json.dumps(json.dumps(ESCAPES)), schema, count=1)
    members["schema.json"] = schema.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    (folder / "model.skops").write_bytes(buf.getvalue())
    meta = json.loads((folder / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))
    _one_line_refusal(folder, "not a version string")


def test_zero_padding_in_a_pack_is_refused_before_it_is_read(tmp_path):
    """Before: 300 MB of zeros after the arrays loaded (an 814 MB peak) and stayed in memory."""
    folder = _pack_copy(tmp_path, "blob")
    members = _members(folder)
    _install(folder, {"graph.json": members["graph.json"], "arrays.bin": members["arrays.bin"] + bytes(20_000_000)})
    assert "need exactly" in _one_line_refusal(folder, "need exactly")
    folder = _pack_copy(tmp_path, "graph")
    _install(folder, {"graph.json": members["graph.json"] + b" " * 1_000_000, "arrays.bin": members["arrays.bin"]})
    _one_line_refusal(folder, "white space or padding")
    folder = _pack_copy(tmp_path, "gap")  # padding between arrays: an offset past the aligned end
    graph = json.loads(members["graph.json"])
    blob = bytearray(members["arrays.bin"])
    first_end = graph["arrays"][1][2]
    for row in graph["arrays"][1:]:
        row[2] += 4096
    blob[first_end:first_end] = bytes(4096)
    _install(folder, {"graph.json": json.dumps(graph, separators=(",", ":")).encode(), "arrays.bin": bytes(blob)})
    _one_line_refusal(folder, "rounded up")


def test_pack_errors_say_evqual_model_pack(tmp_path):
    folder = _pack_copy(tmp_path, "extra")
    members = _members(folder)
    _install(folder, {**members, "extra.py": b"print(1)"})
    text = _one_line_refusal(folder, "an evqual model pack holds exactly 'graph.json' and 'arrays.bin'")
    assert "skops" not in text and "unexpected zip member 'graph.json'" not in text
    folder = _pack_copy(tmp_path, "notzip")
    (folder / "model.evqpack").write_bytes(b"not a zip at all")
    meta = json.loads((folder / "meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(b"not a zip at all").hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))
    assert "skops" not in _one_line_refusal(folder, "not a valid evqual model pack")
