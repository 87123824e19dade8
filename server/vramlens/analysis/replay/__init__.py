"""Stage 2, replay: one pass over the allocator trace — timeline, peak, OOM, per-line aggregates."""

from vramlens.analysis.replay.stage import Replayed, run

__all__ = ["Replayed", "run"]
