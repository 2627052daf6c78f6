"""Learner mode: build a stage yourself, checked by the stage's exercise tests.

``simplekafka learn start STAGE`` writes a starter module (signatures,
docstrings, ``NotImplementedError`` bodies) made from the reference solution in
:mod:`simplekafka.learn.solutions`; ``simplekafka learn check STAGE`` runs the
stage's exercises (:mod:`simplekafka.learn.catalog`) against the learner's module
and explains the first failure: a byte diff with the dissector's field tree, or
the steps that led to a wrong behaviour. The checks compare with SimpleKafka's
own code wherever it has the answer (the codec, the dissector, the ISR rules).
"""
