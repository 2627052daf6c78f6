"""Stage 7: the replicated three-broker cluster (chapter, failover demo, system tests)."""
