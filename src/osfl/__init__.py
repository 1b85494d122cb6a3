"""osfl: a reference replication of one-shot federated learning (FedHydra, HFLDD, FedMHO, OFedED)."""
import time as _time

IMPORTED_AT = _time.time()  # when a stage process first imported osfl (its start-up time is measured from here)
__version__ = "0.1.0"
