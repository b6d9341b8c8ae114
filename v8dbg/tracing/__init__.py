"""What `trace` and `catch` ask of a running process: the probe programs
(bpftrace) built from the binary's probe sites, and their kernel-side maps
decoded into reports."""
