# The repositories are the tasks' snapshots: their tests run in the sandbox, not here.
collect_ignore = ["repos"]
