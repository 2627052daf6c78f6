"""What the group and the transaction coordinators share (Kafka's coordinator runtime).

Both keep their state in the partitions of an internal, compacted topic
(``__consumer_offsets``, ``__transaction_state``) and coordinate exactly the
keys of the partitions this broker leads. ``runtime`` holds that machinery
once: the topic's log (create, append with acks=all, read back), and which of
its partitions are owned, loading or unloaded as leadership moves.
"""
