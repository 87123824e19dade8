"""Floor 1: source bytes to text and trees; AST helpers and the positions fixes are written in."""
