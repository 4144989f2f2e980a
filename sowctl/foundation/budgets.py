"""What one request, file or command may make sowctl read, hold or say: every budget, once.

Each bound is checked before the cost it bounds is paid: a JSON text's nesting before it
is parsed (``json_input``), a list's length before any of its elements is validated
(``schemas.common.bounded_list``), an error's problems as they are collected
(``errors.bounded_issues``). docs/server.md's "Limits on what one caller can make the server
do" lists them in a table; change a value here and there.
"""

from __future__ import annotations

MIB = 1024 * 1024

# --- what a request or file may hold --------------------------------------------------

# A request body (``ServerSettings.max_body_bytes`` defaults to it; tests may lower it).
MAX_BODY_BYTES = MIB
# A dataset sent to the test double's ``POST /_admin/dataset``.
MAX_DATASET_BYTES = 256 * MIB
# Arrays and objects inside one another, in any JSON text sowctl reads: request bodies,
# dataset files, ``--from-file`` bodies, record files, baselines. The API's own bodies nest 4
# levels at most; without a bound, the streaming parser's memory grew with the square of
# the depth (20,000 levels, a 40 KB file: 1 GiB).
MAX_JSON_DEPTH = 64
# Lines of one purchase order: in a request, and in a dataset's ``purchaseOrders``. A page
# of the purchase-order list (100 orders) is bounded by it.
MAX_LINE_ITEMS = 1000
# Entries of one reorder request (``PUT /api/sow/{sowId}/items/reorder``).
MAX_REORDER_ENTRIES = 10_000
# A dataset's nested lists: contacts of one client, lines of one budget-view snapshot (the
# snapshot's answer holds them all, so they bound its size).
MAX_CONTACTS = 1000
MAX_SNAPSHOT_LINES = 10_000
# Route patterns of one fault config of the test double (``/_admin/faults``, ``serve
# --fault-route``): every request is matched against each.
MAX_FAULT_ROUTES = 100
# Contract mode names at most this many instances of one departure per request (a request of
# thousands of unknown fields is marked, not stored thousands of times), each clipped.
MAX_MARKS_PER_DEPARTURE = 5
MAX_MARK_DETAIL_CHARS = 200
# Levels of the item hierarchy: a top-level item is at level 1. Bounds what one caller can
# make every later reader walk and encode (a chain tree nests two JSON levels per item).
MAX_HIERARCHY_DEPTH = 100
# Records in one page of a list (a larger ``limit`` is clamped); ``ServerSettings.max_limit``
# defaults to it.
MAX_PAGE_SIZE = 100
# Events in one page of the changes feed (``GET /api/events``, ``/_admin/events``): a larger
# ``limit`` is refused (a client that reads a feed catches up with pages of up to this).
MAX_EVENT_PAGE = 1000
# Bytes of one page of the changes feed, about (each event's resource counted as stored): a
# page stops after the event that passes it, so one holds at least one event, and the next
# page starts right after the last one given. 1,000 events of 10,000-character titles would
# otherwise be a page of tens of MB, built whole in memory.
MAX_EVENT_PAGE_BYTES = 1024 * 1024

# --- what an error may say -----------------------------------------------------------

# Problems one refusal lists (message and issues); the rest are counted ("and 4980 more").
MAX_REPORTED_ISSUES = 20
# Characters of a refused value an error repeats (a 20,000-character title is quoted cut).
ECHO_LIMIT = 80
# Characters of an error's message and of each problem's: a refusal's answer stays small
# whatever was sent (a cycle through 10,000 items, a key of a megabyte).
MAX_MESSAGE_CHARS = 2000

# Webhooks (``services.webhooks``): subscriptions a server keeps, a URL's length, the event
# types one lists, the attempts one keeps in its delivery log, the redeliveries one queues,
# the receiver's answer kept per attempt, and the delivery fault rules.
MAX_WEBHOOKS = 100
MAX_WEBHOOK_URL_CHARS = 2048
MAX_WEBHOOK_EVENT_TYPES = 32
MAX_WEBHOOK_DELIVERIES_KEPT = 200
MAX_WEBHOOK_REDELIVERIES = 100
MAX_WEBHOOK_EXCERPT_CHARS = 512
MAX_DELIVERY_FAULT_RULES = 10

# --- sandboxes of a shared test double (``services.sandboxes``) -----------------------

# Sandboxes alive on one server at a time: each holds an organization's records, checkpoints
# and copies, and every request may look at the faults of each.
MAX_SANDBOXES = 100
# The longest a sandbox lives (its time to live is asked at creation): a CI job's is an hour.
MAX_SANDBOX_TTL_SECONDS = 7 * 24 * 3600
# Checkpoints one sandbox keeps (each is a copy of its records).
MAX_SANDBOX_CHECKPOINTS = 20
