"""Domain types: jobs, states, errors and the clock. Standard library only."""
