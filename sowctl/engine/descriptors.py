"""File descriptors: as many as the system lets a server have, and a word when that is too few.

Every open connection is a descriptor, so a worker holding ``max_connections`` connections
needs about that many, plus its threads' database connections and files. Where the soft limit
is low (256 on macOS, 1,024 on many Linux systems), clients beyond it used to make ``accept()``
fail; the parser now backs off and keeps serving when that happens, but the limit still caps
how many clients are served at once. ``serve`` raises the soft limit to the hard one at start.
"""

from __future__ import annotations

# Descriptors a worker uses besides its connections: listening sockets, the database, logs.
SPARE = 64


def raise_soft_limit(needed: int) -> str | None:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit (children inherit it);
    a sentence for the operator when the result is below ``needed``, else None."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft != resource.RLIM_INFINITY and target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < needed:
        return (
            f"the open-file limit is {soft}, below the {needed} that the workers' connections may "
            "need; clients past it wait until others close (raise it with ulimit -n)"
        )
    return None
