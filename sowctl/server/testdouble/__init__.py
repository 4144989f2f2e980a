"""``sowctl serve`` as a test double: what a test suite needs around the real API.

Off unless asked for (``serve --admin``, ``--latency``, ``--fault-*``, ``--seed``,
``--clock``, ``--record``); the API itself (``sowctl.server``) does not depend on it.

* ``layer``: the WSGI layer in front of the API (latency, injected faults, the
  request log, the recorder);
* ``admin_api``: the ``/_admin`` routes (reset, datasets, tokens, keys, faults,
  clock, request log);
* ``state``: the test double's state kept in the database (request log, faults,
  clock), shared by every worker;
* ``faults``, ``recorder``, ``replay``: fault configuration, the record file of
  successful writes, and ``sowctl replay`` of such a file.
"""
