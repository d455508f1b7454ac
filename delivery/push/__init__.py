"""The push path: a worker's event loop runs a session per subscription that POSTs its messages.

- `claims.py`: which workers run a subscription's sessions (a claim per subscription and worker),
  starting sessions through Celery when work appears, and more of them when it is hot;
- `engine.py`: one event loop per worker process, running every session it was given;
- `session.py`: one subscription's session: frames from its queue, at most its share of
  `max_in_flight` POSTs at once through delivery/transports.py;
- `session_breaker.py`: the circuit breaker as the session runs it (its rules in
  subscriptions/breaker_rules.py);
- `steps.py`: the two database steps of an attempt, one function each, for every session: start
  attempts for frames, record outcomes (an ordered delivery's success through sequencing), their
  common case run by the executor the engine picks once;
- `ledger.py`: that executor on PostgreSQL: fresh claims and successes recorded on the event loop
  itself, coalesced across sessions (no thread hand-off, no ORM);
- `bookkeeper.py`: the rest of the database and broker work of all sessions, in batches on its
  own threads (whatever function it is given: every frame rule, failures and retries; all of it on SQLite);
- `outcomes.py`: what a POST's outcome does (delivered, retried, dead-lettered, disabled), on the bookkeeper.
The frame rules are in delivery/frame_rules.py and delivery/attempts.py (pull uses them too);
the retry rule in subscriptions/retry.py; the recording of outcomes in delivery/settle.py.
"""
