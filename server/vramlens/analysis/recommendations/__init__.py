"""Stage 7, recommendations: what to try, fitted to the cause; allocator knobs as experiments to measure."""

from vramlens.analysis.recommendations.stage import recommend

__all__ = ["recommend"]
