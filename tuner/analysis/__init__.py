"""Reading a results directory for people: the ready answers (best, effect, pareto) and the
report's figures and HTML page."""
