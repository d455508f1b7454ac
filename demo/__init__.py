"""`make demo`: the whole of Dovecote in one process (embedded mode) with seeded rooms, a flaky receiver and traffic.

- `management/commands/demo.py`: the `demo` command (binds the port, locks the saved state, runs everything);
- `state.py`: the saved state (SQLite file, login) and its lock;
- `embedded.py`: the Celery worker and beat in background threads;
- `seed.py`: the demo's rooms, subscriptions and login, and what a restart does to them;
- `receiver.py`: the built-in webhook receiver that fails now and then (served at /demo/receiver/);
- `traffic.py`: the thread that publishes a few events a second.
"""
