"""sowctl for other people's test suites: a served instance, its admin API, and a pytest plugin.

* ``SowctlServer`` (``sowctl.testing.server``): ``sowctl serve`` in a subprocess on a free
  port with the admin API on, stopped by its PID;
* ``AdminClient`` (``sowctl.testing.admin``): reset, datasets, credentials, faults, clock,
  checkpoints, the request log and ``verify`` (an assertion with a near-miss report);
* ``sowctl.testing.plugin``: the pytest plugin (fixtures ``sowctl_server`` and
  ``sowctl_service``, markers, options), loaded by pytest through sowctl's ``pytest11``
  entry point. Nothing here imports pytest except the plugin module itself.
"""

from __future__ import annotations

from sowctl.testing.admin import AdminClient, VerificationError
from sowctl.testing.server import SowctlServer

__all__ = ["AdminClient", "SowctlServer", "VerificationError"]
