"""The grid's runner: the plan, the worker processes, their rounds and outcomes, the pre-flight."""
