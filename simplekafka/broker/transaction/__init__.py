"""The transaction coordinator (KIP-98), on ``__transaction_state``, as ZooKeeper-mode Kafka has it.

``state`` holds one transactional id's metadata and its state machine,
``records`` the bytes of its ``__transaction_state`` records,
``metadata_manager`` reads and writes them, ``marker_channel`` sends
WriteTxnMarkers to the partition leaders, ``producer_ids`` reserves producer
ids in ZooKeeper, and ``coordinator`` decides; which partitions it owns is the
shared ``broker.coordinator.runtime``'s.
"""
