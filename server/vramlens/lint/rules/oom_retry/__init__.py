"""Out-of-memory handling: retries inside the except block that still holds the failed attempt."""
