"""Core values: cases, prompt versions, requests, responses, results and their files."""
