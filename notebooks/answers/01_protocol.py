# ruff: noqa: F821  (each section runs in its notebook, where these names are defined)
# --- right 1
# Now you try: put Kafka's frame around `request` by hand.
my_frame = len(request).to_bytes(4, "big") + request

# --- wrong 1
# Now you try: put Kafka's frame around `request` by hand.
# (counts the 4 length bytes in the length: one frame too long for the broker)
my_frame = (len(request) + 4).to_bytes(4, "big") + request
