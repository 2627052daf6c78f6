# --- right 1
# Now you try: after 8 more requests, (in flight, waiting) in the core.
counts = (5, 4)

# --- wrong 1
# Now you try: after 8 more requests, (in flight, waiting) in the core.
# (forgets the request already in flight)
counts = (5, 3)
