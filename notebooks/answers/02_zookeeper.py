# ruff: noqa: F821  (each section runs in its notebook, where these names are defined)
# --- right 1
# Now you try: read broker 7's broker epoch from ZooKeeper, with `zk`.
broker_epoch = zk.exists(ZkPaths.broker(7)).czxid

# --- wrong 1
# Now you try: read broker 7's broker epoch from ZooKeeper, with `zk`.
# (the session that owns the znode, not the transaction that created it)
broker_epoch = zk.exists(ZkPaths.broker(7)).ephemeralOwner
