"""Floor 5: the rule families, one subpackage each; every rule declares its codes and their docs."""
