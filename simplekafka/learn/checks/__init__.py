"""The exercise checks, one module per stage; each raises ExerciseFailed at the first wrong answer."""
