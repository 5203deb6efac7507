"""numprobe locate: the level-by-level search for where two trainings part, run end to end.

Rounds (docs/locate.md): 0 preflight (structure + environment, optional reproducibility),
1 L0 statistics (the first divergent module), 2 mix statistics scoped to it (the first divergent
API), 3 tensor dump of that API and its neighbours (tensor evidence), 4 acc-check of the API on its
recorded inputs (kernel bug, or inputs already off). The user's commands are run unchanged;
NUMPROBE_CONFIG points their PrecisionDebugger at the config of each round.
"""
