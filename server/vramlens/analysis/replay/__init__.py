"""Stage 2, replay: one pass over the allocator trace — timeline, peak, OOM, per-line aggregates."""
