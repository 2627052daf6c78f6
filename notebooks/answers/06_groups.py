# --- right 1
# Now you try: which partitions of "orders" did alice own while bob was in the group?
# A sorted list of partition numbers (ints), e.g. [0, 2]; the range assignor's rule is
# above, and the members' ids start "alice-" and "bob-".
alice_partitions = [0, 1]  # 3 partitions over 2 members: 2 and 1, alice sorts first

# --- wrong 1
# Now you try: which partitions of "orders" did alice own while bob was in the group?
# A sorted list of partition numbers (ints), e.g. [0, 2]; the range assignor's rule is
# above, and the members' ids start "alice-" and "bob-".
alice_partitions = [0, 2]  # dealt one by one: that is the roundrobin assignor, not range
