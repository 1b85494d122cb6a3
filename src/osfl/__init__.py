"""osfl: a reference replication of one-shot federated learning (FedHydra, HFLDD, FedMHO, OFedED)."""

__version__ = "0.1.0"
