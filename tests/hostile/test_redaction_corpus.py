"""`report --redact` on a corpus of planted secrets of many kinds (secrets_corpus.py), with fresh
random values for every seed: nothing planted may survive, and public text must."""

from __future__ import annotations

import pytest

import secrets_corpus
from vramlens.analysis.rendering.redact import redact


def leaks(seed: int) -> list[tuple[str, str, str]]:
    found = []
    for kind, text, secrets in secrets_corpus.planted(seed):
        shown = redact(text, ["/srv/project"])
        found += [(kind, secret, shown) for secret in secrets if secret in shown]
    return found


def test_the_corpus_has_more_than_thirty_kinds():
    assert len(secrets_corpus.KINDS) >= 30


@pytest.mark.parametrize("seed", range(4))
def test_no_planted_secret_survives_redaction(seed):
    assert leaks(seed) == []


def test_public_text_survives_redaction():
    for text in secrets_corpus.KEPT:
        assert redact(f"see {text} here", ["/srv/project"]) == f"see {text} here"


def test_a_secret_in_a_holder_name_is_redacted_in_the_report_and_in_the_payload(tmp_path):
    import json
    import shutil

    from vramlens.analysis.pipeline import analyze_capture
    from vramlens.analysis.rendering.redact import redact_counted
    from vramlens.analysis.rendering.report import build_report
    from vramlens.capture import load_capture

    source = secrets_corpus.REPO / "tests" / "fixtures" / "captures" / "notebook_kept_outputs"
    shutil.copytree(source, tmp_path / "c")
    census = json.loads((tmp_path / "c" / "census.json").read_text())
    token = "hf_" + "Zq8" * 8
    census["holders"][0]["path"] = f"__main__.cache_{token}"
    (tmp_path / "c" / "census.json").write_text(json.dumps(census))
    capture = load_capture(tmp_path / "c")
    analysis = analyze_capture(capture)
    report = build_report(analysis, capture.meta, None, "t")
    assert token in report  # the name is shown unredacted…
    assert token not in redact_counted(report, [analysis.user_root, analysis.local_root]).text  # …and hidden when asked
