"""Security on the broker: listeners, TLS and SASL (who a connection is) and the
authorizer (what that principal may do)."""
