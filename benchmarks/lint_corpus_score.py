"""Precision and recall of `vramlens lint` on tests/lint/corpus.

A true positive is an expected (line, rule) that is found; every other warning or error is a
false positive (info findings count only where a file expects them).
"""

from __future__ import annotations

import sys

from harness.lint_corpus import expectations

compare, corpus_files = expectations.compare, expectations.corpus_files


def main() -> int:
    true_positives = false_positives = false_negatives = 0
    per_rule: dict[str, list[int]] = {}
    for kind in ("positive", "negative"):
        for path in corpus_files(kind):
            result = compare(path)
            true_positives += len(result.hits)
            false_negatives += len(result.missed)
            false_positives += len(result.unexpected)
            for _, rule in result.hits:
                per_rule.setdefault(rule, [0, 0, 0])[0] += 1
            for _, rule in result.unexpected:
                per_rule.setdefault(rule, [0, 0, 0])[1] += 1
            for _, rule in result.missed:
                per_rule.setdefault(rule, [0, 0, 0])[2] += 1
            for line, rule in sorted(result.missed):
                print(f"  missed      {path.parent.name}/{path.name}:{line} {rule}")
            for line, rule in sorted(result.unexpected):
                print(f"  unexpected  {path.parent.name}/{path.name}:{line} {rule}")
    precision = true_positives / (true_positives + false_positives) if true_positives + false_positives else 1.0
    recall = true_positives / (true_positives + false_negatives) if true_positives + false_negatives else 1.0
    print(f"files: {len(corpus_files('positive'))} positive, {len(corpus_files('negative'))} negative")
    for rule, (tp, fp, fn) in sorted(per_rule.items()):
        print(f"  {rule:24} tp={tp:3} fp={fp:3} fn={fn:3}")
    print(f"precision: {precision:.3f}  recall: {recall:.3f}  (tp={true_positives} fp={false_positives} fn={false_negatives})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
