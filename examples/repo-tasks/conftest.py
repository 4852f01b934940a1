# The repositories are the tasks' snapshots: their tests run in the sandbox only. Run here,
# the plugin leaves them out itself (a repository case names each); this keeps them out of
# a run of the project this folder sits in, whose cases are elsewhere.
collect_ignore = ["repos"]
