"""What leaves the machine: webhook POSTs with their address check, and mail. Called by
the tasks, and by an action for the address check; never by a page."""
