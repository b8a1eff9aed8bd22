"""`python -m tape_vs_trace.cli`."""

from tape_vs_trace.cli import main

raise SystemExit(main())
