# ruff: noqa: F821  (each section runs in its notebook, where these names are defined)
# --- right 1
# Now you try: what was the partition's LSO while transaction txn-1 was open (once written to)?
# An int: the offset read_committed's end_offsets answered then. `log` (above) holds
# (offset, value) for every record a read_uncommitted consumer returns.
lso_during_txn_1 = min(offset for offset, value in log if value.startswith(b"txn-1-"))

# --- wrong 1
# Now you try: what was the partition's LSO while transaction txn-1 was open (once written to)?
# An int: the offset read_committed's end_offsets answered then. `log` (above) holds
# (offset, value) for every record a read_uncommitted consumer returns.
# (the last offset read_committed could read: an end offset is one past it)
lso_during_txn_1 = min(offset for offset, value in log if value.startswith(b"txn-1-")) - 1
