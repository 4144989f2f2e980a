"""What the tests share: one real-server helper, one in-process client (``tests.doubles``),
one CLI runner (the ``cli`` fixture of ``tests/conftest.py``)."""
