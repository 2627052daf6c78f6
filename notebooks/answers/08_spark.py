# ruff: noqa: F821  (each section runs in its notebook, where these names are defined)
# --- right 1
# Now you try: how many views of `on_time` fall in the one-minute window starting at 09:03?
# An int, computed from `on_time` (a list of dicts; "event_time" is an ISO-8601 string such
# as "2026-01-05T09:03:04.000Z").
views_at_0903 = sum(1 for v in on_time if v["event_time"][11:16] == "09:03")

# --- wrong 1
# Now you try: how many views of `on_time` fall in the one-minute window starting at 09:03?
# An int, computed from `on_time` (a list of dicts; "event_time" is an ISO-8601 string such
# as "2026-01-05T09:03:04.000Z").
# (09:03 and 09:04 both: the window's end is not part of it, nor the minute after)
views_at_0903 = sum(1 for v in on_time if "09:03" <= v["event_time"][11:16] <= "09:04")
