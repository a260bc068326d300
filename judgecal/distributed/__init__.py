"""Scale-out on a Ray cluster: judging (:mod:`.judge`) and the audit's per-item sums (:mod:`.audit`).

The workspace stays on the driver: workers receive rendered requests (or judgment shards) through
Ray's object store and send answers (or reduced sums) back; every write goes through the driver,
keyed by the judgment's content hash, so a retried task or a re-run never duplicates a judgment.
"""
