"""Facts from the other files of the project the linted file imports (resolve, summarise, cache)."""
