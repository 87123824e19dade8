"""Floor 4: the ordered walk that keeps taint state and hands each statement and call to the rules."""
