# ruff: noqa: F821  (each section runs in its notebook, where these names are defined)
# --- right 1
# Now you try: from `leos` and `isr_then` above, what high watermark does the leader compute?
# An int. The leader knows its own LEO; of a follower it knows the LEO that follower's
# last fetch reported, here the LEO in its files (`leos[broker]`).
hw_from_rule = min(leos[broker] for broker in isr_then)  # every in-sync replica, dead or not

# --- wrong 1
# Now you try: from `leos` and `isr_then` above, what high watermark does the leader compute?
# An int. The leader knows its own LEO; of a follower it knows the LEO that follower's
# last fetch reported, here the LEO in its files (`leos[broker]`).
# (only the replicas still running: but the dead follower is still in the ISR)
hw_from_rule = min(leos[broker] for broker in isr_then if broker != follower)
