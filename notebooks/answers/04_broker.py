# ruff: noqa: F821  (each section runs in its notebook, where these names are defined)
# --- right 1
# Now you try: the offset the next record written to clicks/0 will get.
next_offset = max(offset for partition, offset in delivered if partition == 0) + 1

# --- wrong 1
# Now you try: the offset the next record written to clicks/0 will get.
# (the last offset written, not the next one)
next_offset = max(offset for partition, offset in delivered if partition == 0)
