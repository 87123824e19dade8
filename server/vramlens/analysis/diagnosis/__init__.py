"""Stage 6, diagnosis: which of the causes applies, with the numbers as evidence and a calibrated confidence."""
