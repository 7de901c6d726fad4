"""Runs: the one loop that plays matches into a results store, and the planners that steer it.

* :mod:`.core`: :func:`~referee.runs.core.play` and :class:`~referee.runs.core.Run`, which
  own the lock, the store, the deal secret, staging, the executor's lifecycle, building
  tasks, recording attempts and the event stream; :class:`~referee.runs.core.Planner`, the
  hooks a kind of run answers (every one a no-op by default);
* :mod:`.tournament`: ``referee tournament run``, the scheduled matches and the play-offs;
* :mod:`.comparison`: ``referee compare``, paired deals until a sequential test decides;
* :mod:`.league`: ``referee league run``, batches planned from the stored ratings, forever.

A new kind of run is a planner, never a subclass of the core or a copy of its loop.
"""
