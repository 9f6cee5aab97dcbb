-- Every lease first re-queues expired leases: this index keeps that a probe of the running
-- jobs whose lease has passed, instead of a scan of every running job.
CREATE INDEX jobs_lease_expiry ON jobs (state, lease_expires);
