"""The released lint corpus, shared by every test that reads it. (pytest's default import mode puts this
folder first on the path, so its helper modules, realworld/ included, import by name.)"""

from contextlib import nullcontext

import pytest
from realworld import archives as ar
from realworld import corpora


@pytest.fixture(scope="session")
def released_corpus(request) -> corpora.ReleasedCorpus:
    """The released lint corpora with every archive in the cache: downloaded once per machine, after a
    line on the terminal that says how much and where; an unreachable package index fails the test with
    the reason."""
    corpus = corpora.released_corpus()
    cache = corpus.cache or ar.cache_dir()
    archives = list(dict.fromkeys(corpus.archives()))
    missing = [a for a in archives if ar.cached(a, cache) is None]
    if missing:
        _tell(request.config,
              f"lint corpus: downloading {len(missing)} of {len(archives)} pinned archives (about "
              f"{corpora.RELEASED_DOWNLOAD_MB} MB in all) with pip into {cache} "
              f"(set {ar.CACHE_ENV} to keep them elsewhere; later runs reuse them)")
    failure = None
    try:
        corpus.download()
    except ar.DownloadError as err:
        failure = str(err)
    if failure:  # outside the except block, so the sentence is all that is printed
        pytest.fail(failure, pytrace=False)
    return corpus


def _tell(config: pytest.Config, line: str) -> None:
    """A line on the terminal even under -q and output capture."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled() if capture else nullcontext():
        reporter.write("\n")  # progress dots may be on the current line
        reporter.write_line(line, bold=True)

