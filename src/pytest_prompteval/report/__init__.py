"""Reports built on the controller from the results that travel on test reports."""
