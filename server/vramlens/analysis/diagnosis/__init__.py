"""Stage 6, diagnosis: which of the causes applies, with the numbers as evidence and a calibrated confidence."""

from vramlens.analysis.diagnosis.stage import Diagnosed, diagnose

__all__ = ["Diagnosed", "diagnose"]
