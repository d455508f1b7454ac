from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...models.subscription import Subscription
from ...models.subscription_request import SubscriptionRequest
from ...types import Response


def _get_kwargs(
    room_id: int,
    *,
    body: SubscriptionRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/rooms/{room_id}/subscriptions/".format(
            room_id=quote(str(room_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | FieldErrors | Subscription | None:
    if response.status_code == 201:
        response_201 = Subscription.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = FieldErrors.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = FieldErrors.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | FieldErrors | Subscription]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    room_id: int,
    *,
    client: AuthenticatedClient,
    body: SubscriptionRequest,
) -> Response[Error | FieldErrors | Subscription]:
    """Subscribe to a room

     The reply is the only one that shows a push subscription's `signing_secret` in full (see rotate-
    secret). Limits: `max_in_flight` 1–1000, `max_per_second` 1–10000 or null, `timeout_ms` 100–300000,
    `delivery_attempts` 0–100, `delivery_delay_multiplier` 1–100, `max_delivery_delay_ms` at least
    `delivery_delay_ms` when both are set here.

    Args:
        room_id (int):
        body (SubscriptionRequest): A subscription; `signing_secret` is in full only in the create
            and rotate-secret replies.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | Subscription]
    """

    kwargs = _get_kwargs(
        room_id=room_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    room_id: int,
    *,
    client: AuthenticatedClient,
    body: SubscriptionRequest,
) -> Error | FieldErrors | Subscription | None:
    """Subscribe to a room

     The reply is the only one that shows a push subscription's `signing_secret` in full (see rotate-
    secret). Limits: `max_in_flight` 1–1000, `max_per_second` 1–10000 or null, `timeout_ms` 100–300000,
    `delivery_attempts` 0–100, `delivery_delay_multiplier` 1–100, `max_delivery_delay_ms` at least
    `delivery_delay_ms` when both are set here.

    Args:
        room_id (int):
        body (SubscriptionRequest): A subscription; `signing_secret` is in full only in the create
            and rotate-secret replies.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | Subscription
    """

    return sync_detailed(
        room_id=room_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    room_id: int,
    *,
    client: AuthenticatedClient,
    body: SubscriptionRequest,
) -> Response[Error | FieldErrors | Subscription]:
    """Subscribe to a room

     The reply is the only one that shows a push subscription's `signing_secret` in full (see rotate-
    secret). Limits: `max_in_flight` 1–1000, `max_per_second` 1–10000 or null, `timeout_ms` 100–300000,
    `delivery_attempts` 0–100, `delivery_delay_multiplier` 1–100, `max_delivery_delay_ms` at least
    `delivery_delay_ms` when both are set here.

    Args:
        room_id (int):
        body (SubscriptionRequest): A subscription; `signing_secret` is in full only in the create
            and rotate-secret replies.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | Subscription]
    """

    kwargs = _get_kwargs(
        room_id=room_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    room_id: int,
    *,
    client: AuthenticatedClient,
    body: SubscriptionRequest,
) -> Error | FieldErrors | Subscription | None:
    """Subscribe to a room

     The reply is the only one that shows a push subscription's `signing_secret` in full (see rotate-
    secret). Limits: `max_in_flight` 1–1000, `max_per_second` 1–10000 or null, `timeout_ms` 100–300000,
    `delivery_attempts` 0–100, `delivery_delay_multiplier` 1–100, `max_delivery_delay_ms` at least
    `delivery_delay_ms` when both are set here.

    Args:
        room_id (int):
        body (SubscriptionRequest): A subscription; `signing_secret` is in full only in the create
            and rotate-secret replies.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | Subscription
    """

    return (
        await asyncio_detailed(
            room_id=room_id,
            client=client,
            body=body,
        )
    ).parsed
