# ruff: noqa: F821  (each section runs in its notebook, where these names are defined)
# --- right 1
# Now you try: name the segment file that holds offset 37.
base = max(segment.base_offset for segment in log.segments if segment.base_offset <= 37)
segment_file = f"{base:020d}.log"

# --- wrong 1
# Now you try: name the segment file that holds offset 37.
# (the first segment whose base offset is past 37: one segment too far)
base = min(segment.base_offset for segment in log.segments if segment.base_offset > 37)
segment_file = f"{base:020d}.log"
