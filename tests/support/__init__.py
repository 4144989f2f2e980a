"""What the tests share: one real-server helper (``server.py``), one in-process client
(``client.py``; ``doubles.py`` adds the admin API and the demo dataset), one CLI runner and the
fake production runner (``cli.py``), and the two-modes helper (``modes.py``)."""
