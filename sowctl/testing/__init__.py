"""sowctl for other people's test suites: a served instance, its admin API, and a pytest plugin.

* ``SowctlServer`` (``sowctl.testing.server``): ``sowctl serve`` in a subprocess on a free
  port with the admin API on, stopped by its PID;
* ``AdminClient`` (``sowctl.testing.admin``): reset, datasets, credentials, faults, clock,
  checkpoints, the request log and ``verify`` (an assertion with a near-miss report);
* ``SandboxSession`` (``sowctl.testing.shared``): a session's sandbox on a shared server;
* ``sowctl.testing.plugin``: the pytest plugin (fixtures ``sowctl_server`` and
  ``sowctl_service``, markers, options), loaded by pytest through sowctl's ``pytest11``
  entry point. Nothing here imports pytest except the plugin module itself.
"""

from __future__ import annotations

from sowctl.testing.admin import AdminClient, AdminError, VerificationError
from sowctl.testing.server import SowctlServer
from sowctl.testing.shared import SandboxSession

__all__ = ["AdminClient", "AdminError", "SandboxSession", "SowctlServer", "VerificationError"]
