"""The companion commands' work: analyze stored runs, human review, prompt improvement."""
