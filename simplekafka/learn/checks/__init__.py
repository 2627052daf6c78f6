"""The exercise checks, one module per stage: each raises ExerciseFailed at a wrong answer."""
