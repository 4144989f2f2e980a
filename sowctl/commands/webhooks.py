"""sowctl webhooks: webhook subscriptions of a sowctl server, their delivery log and redeliveries.

Remote mode (``--server URL``) goes through the server's admin API with its admin token
(``--admin-token`` or SOWCTL_ADMIN_TOKEN), as ``sowctl contract`` does. Local mode acts on the
database itself (``--db``): a ``sowctl serve`` running on that database delivers what is
subscribed. The delivery log and redeliveries are read and queued the same way in both modes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from sowctl.commands._context import AppContext, app_context
from sowctl.commands._options import Json, Quiet, QuietCreate, emit_created
from sowctl.foundation.errors import InvalidInput, UsageError
from sowctl.operations.admin import ADMIN, path_of
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_message, emit_object, emit_rows
from sowctl.services import organizations, webhooks

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

COLUMNS = [
    Column("ID", "id"),
    Column("STATUS", "status", kind="enum"),
    Column("ORG", "organizationId"),
    Column("EVENTS", lambda row: ",".join(row["eventTypes"] or ["*"]), kind="text", priority=2),
    Column("FAILURES", "consecutiveFailures", justify="right", kind="number", priority=2),
    Column("URL", "url", kind="text"),
]
DELIVERY_COLUMNS = [
    Column("ID", "id", justify="right", kind="number"),
    Column("EVENT", "eventId"),
    Column("ATTEMPT", "attempt", justify="right", kind="number"),
    Column("AT", "at", kind="datetime", priority=2),
    Column("OUTCOME", "outcome", kind="enum"),
    Column("STATUS", "status", justify="right", kind="number"),
    Column("MS", "latencyMs", justify="right", kind="number", priority=2),
    Column("ERROR", "error", kind="text", priority=3),
]
# The admin API's field -> the option that sets it (a refusal names what was typed).
OPTION_FOR = {
    "url": "--url",
    "organizationId": "--org",
    "eventTypes": "--event",
    "signing": "--signing",
    "secret": "--secret",
    "authorization": "--authorization",
    "maxFailures": "--max-failures",
    "limit": "--limit",
    "eventId": "EVENT_ID",
}


class Signing(StrEnum):
    standard_webhooks = "standard-webhooks"
    authorization = "authorization"


AdminToken = Annotated[
    str | None,
    typer.Option(
        "--admin-token",
        envvar="SOWCTL_ADMIN_TOKEN",
        help="The server's admin token, in remote mode (serve --admin prints it).",
        show_default=False,
    ),
]
SubscriptionId = Annotated[str, typer.Argument(help="The subscription's id (wh_...).", show_default=False)]


class Subscriptions:
    """The webhook operations in the CLI's mode: the admin API (remote) or the core (local)."""

    def __init__(
        self, context: AppContext, admin_token: str | None, command: str, *, write: bool = True
    ) -> None:
        self.context = context
        self.remote = context.settings.remote
        self.headers: dict[str, str] = {}
        if self.remote:
            if not admin_token:
                raise UsageError(
                    "--admin-token is required (or SOWCTL_ADMIN_TOKEN): /_admin takes the admin token"
                )
            self.headers = {"Authorization": f"Bearer {admin_token}"}
        else:
            context.open_local_database(command, write=write)

    def _admin(
        self, name: str, params: dict[str, str] | None = None, *, query: Any = None, body: Any = None
    ) -> Any:
        backend: Any = self.context.backend  # remote: it sends any route (sowctl api's raw call)
        return backend.raw(None, ADMIN[name].method, path_of(name, params), query or {}, body, self.headers)

    def organization(self, given: str | None) -> str:
        """--org, the profile's org, or (local mode) the database's only organization."""
        chosen = given or self.context.settings.org
        if chosen:
            return chosen
        if not self.remote:
            known = organizations.list_organizations()
            if len(known) == 1:
                return known[0].id
        raise UsageError("--org is required: the organization whose events are delivered")

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        body = {key: value for key, value in body.items() if value is not None}
        if self.remote:
            return _speak(lambda: self._admin("admin.webhooks.create", body=body))
        new = webhooks.NewWebhook(
            url=body.get("url"),
            organization_id=body.get("organizationId"),
            event_types=body.get("eventTypes"),
            signing=body.get("signing"),
            secret=body.get("secret"),
            authorization=body.get("authorization"),
            max_failures=body.get("maxFailures"),
        )
        return _speak(lambda: webhooks.create(new).model_dump())

    def all(self) -> list[dict[str, Any]]:
        if self.remote:
            return self._admin("admin.webhooks.list")
        return [subscription.model_dump() for subscription in webhooks.list_all()]

    def delete(self, subscription_id: str) -> None:
        if self.remote:
            self._admin("admin.webhooks.delete", {"id": subscription_id})
        else:
            webhooks.delete(subscription_id)

    def resume(self, subscription_id: str) -> dict[str, Any]:
        if self.remote:
            return self._admin("admin.webhooks.resume", {"id": subscription_id})
        return webhooks.resume(subscription_id).model_dump()

    def deliveries(self, subscription_id: str, limit: int) -> list[dict[str, Any]]:
        if self.remote:
            query = {"limit": str(limit)}
            return _speak(
                lambda: self._admin("admin.webhooks.deliveries", {"id": subscription_id}, query=query)
            )
        return _speak(
            lambda: [attempt.model_dump() for attempt in webhooks.deliveries(subscription_id, limit)]
        )

    def redeliver(self, subscription_id: str, event: str) -> dict[str, Any]:
        if self.remote:
            body = {"eventId": event}
            return _speak(lambda: self._admin("admin.webhooks.redeliver", {"id": subscription_id}, body=body))
        return _speak(lambda: webhooks.redeliver(subscription_id, event).model_dump())


def _speak(call: Any) -> Any:
    """``call()``, its refusal naming the option the user typed instead of the API's field."""
    try:
        return call()
    except InvalidInput as exc:
        field, sep, rest = exc.message.partition(": ")
        name, bracket, index = field.partition("[")
        option = OPTION_FOR.get(name)
        if not sep or option is None:
            raise
        raise InvalidInput(f"{option}{bracket}{index}: {rest}") from None


@app.command("create")
@output_options()
def create(
    ctx: typer.Context,
    url: Annotated[str, typer.Option("--url", help="Where deliveries are POSTed (http:// or https://).")],
    org: Annotated[
        str | None,
        typer.Option("--org", help="Whose events (default: the profile's org).", show_default=False),
    ] = None,
    event: Annotated[
        list[str] | None,
        typer.Option(
            "--event", help="An event type (item.created) or dependency.*; repeat it. None: every event."
        ),
    ] = None,
    signing: Annotated[
        Signing,
        typer.Option("--signing", help="standard-webhooks (signed with a whsec_ secret) or authorization."),
    ] = Signing.standard_webhooks,
    secret: Annotated[
        str | None, typer.Option("--secret", help="The whsec_ secret to sign with (default: a new one).")
    ] = None,
    authorization: Annotated[
        str | None, typer.Option("--authorization", help="With --signing authorization: the header's value.")
    ] = None,
    max_failures: Annotated[
        int | None,
        typer.Option(
            "--max-failures", help="Consecutive failed attempts before it pauses (default 5).", min=1
        ),
    ] = None,
    admin_token: AdminToken = None,
    json_: Json = False,
    quiet: QuietCreate = False,
) -> None:
    """Subscribe a URL to an organization's events; the signing secret is shown only here.

    Example: sowctl webhooks create --url https://ci.example.test/hook --event item.created
    """
    subscriptions = Subscriptions(app_context(ctx), admin_token, "webhooks create")
    body = {
        "url": url,
        "organizationId": subscriptions.organization(org),
        "eventTypes": list(event) if event else None,
        "signing": signing.value,
        "secret": secret,
        "authorization": authorization,
        "maxFailures": max_failures,
    }
    emit_created(subscriptions.create(body), json_mode=json_, quiet=quiet)


@app.command("list")
@output_options(columns=True, pager=True)
def list_webhooks(
    ctx: typer.Context, admin_token: AdminToken = None, json_: Json = False, quiet: Quiet = False
) -> None:
    """List the webhook subscriptions (never their secrets).

    Example: sowctl webhooks list
    """
    subscriptions = Subscriptions(app_context(ctx), admin_token, "webhooks list", write=False)
    emit_rows(subscriptions.all(), COLUMNS, json_mode=json_, quiet=quiet)


@app.command("delete")
@output_options()
def delete(
    ctx: typer.Context, subscription_id: SubscriptionId, admin_token: AdminToken = None, json_: Json = False
) -> None:
    """Drop a subscription and its delivery log.

    Example: sowctl webhooks delete wh_0123456789abcdef0123
    """
    Subscriptions(app_context(ctx), admin_token, "webhooks delete").delete(subscription_id)
    emit_message(f"deleted {subscription_id}", json_mode=json_, body={"deleted": subscription_id})


@app.command("resume")
@output_options()
def resume(
    ctx: typer.Context, subscription_id: SubscriptionId, admin_token: AdminToken = None, json_: Json = False
) -> None:
    """Make a paused subscription active again: the event it stopped at is tried at once.

    Example: sowctl webhooks resume wh_0123456789abcdef0123
    """
    emit_object(
        Subscriptions(app_context(ctx), admin_token, "webhooks resume").resume(subscription_id),
        json_mode=json_,
    )


@app.command("deliveries")
@output_options(columns=True, pager=True)
def deliveries(
    ctx: typer.Context,
    subscription_id: SubscriptionId,
    limit: Annotated[int, typer.Option("--limit", help="The last N attempts (1 to 200).")] = 50,
    admin_token: AdminToken = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """The last delivery attempts of a subscription, oldest first: status, latency, outcome.

    Example: sowctl webhooks deliveries wh_0123456789abcdef0123 --limit 10
    """
    found = Subscriptions(app_context(ctx), admin_token, "webhooks deliveries", write=False)
    emit_rows(found.deliveries(subscription_id, limit), DELIVERY_COLUMNS, json_mode=json_, quiet=quiet)


@app.command("redeliver")
@output_options()
def redeliver(
    ctx: typer.Context,
    subscription_id: SubscriptionId,
    event_id: Annotated[str, typer.Argument(help="The event to send again (evt_...).", show_default=False)],
    admin_token: AdminToken = None,
    json_: Json = False,
) -> None:
    """Queue an event again for a subscription, ahead of the events it has still to deliver.

    Example: sowctl webhooks redeliver wh_0123456789abcdef0123 evt_0000000000000042
    """
    queued = Subscriptions(app_context(ctx), admin_token, "webhooks redeliver").redeliver(
        subscription_id, event_id
    )
    emit_message(f"queued {queued['queued']} for {subscription_id}", json_mode=json_, body=queued)
