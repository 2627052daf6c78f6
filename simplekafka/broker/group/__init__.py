"""The group coordinator (consumer groups and committed offsets, on ``__consumer_offsets``).

``state`` holds a group, its members and its state machine, ``records`` the
bytes of its ``__consumer_offsets`` records, ``metadata_manager`` reads and
writes them, and ``coordinator`` decides; which partitions it owns is the
shared ``broker.coordinator.runtime``'s.
"""
