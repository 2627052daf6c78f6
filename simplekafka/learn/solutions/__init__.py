"""Reference solutions of the learner exercises, one module per stage.

``learn start`` turns each into the learner's starter module (bodies of the
exercise functions replaced by ``NotImplementedError``); the tests fill a
starter with its solution and check that every exercise passes, and apply the
mutations in ``tests/test_learn.py`` to check that each one is caught.
"""
