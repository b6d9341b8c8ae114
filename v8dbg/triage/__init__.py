"""Many cores grouped into crash buckets: signatures, one core's crash, the fleet run."""
