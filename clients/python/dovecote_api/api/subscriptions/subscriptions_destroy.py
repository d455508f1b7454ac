from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.subscription_deleted import SubscriptionDeleted
from ...types import Response


def _get_kwargs(
    subscription_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/api/v1/subscriptions/{subscription_id}/".format(
            subscription_id=quote(str(subscription_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | SubscriptionDeleted | None:
    if response.status_code == 200:
        response_200 = SubscriptionDeleted.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | SubscriptionDeleted]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[Error | SubscriptionDeleted]:
    """Delete a subscription

     Every delivery still on its way (pending, queued, retrying, leased) is dead-lettered with the reason
    'subscription {id} was deleted' and stays in the message log; the subscription's queues on the
    broker are emptied. Nothing more is delivered to it. The reply says how many deliveries were dead-
    lettered.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SubscriptionDeleted]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
) -> Error | SubscriptionDeleted | None:
    """Delete a subscription

     Every delivery still on its way (pending, queued, retrying, leased) is dead-lettered with the reason
    'subscription {id} was deleted' and stays in the message log; the subscription's queues on the
    broker are emptied. Nothing more is delivered to it. The reply says how many deliveries were dead-
    lettered.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SubscriptionDeleted
    """

    return sync_detailed(
        subscription_id=subscription_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[Error | SubscriptionDeleted]:
    """Delete a subscription

     Every delivery still on its way (pending, queued, retrying, leased) is dead-lettered with the reason
    'subscription {id} was deleted' and stays in the message log; the subscription's queues on the
    broker are emptied. Nothing more is delivered to it. The reply says how many deliveries were dead-
    lettered.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SubscriptionDeleted]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
) -> Error | SubscriptionDeleted | None:
    """Delete a subscription

     Every delivery still on its way (pending, queued, retrying, leased) is dead-lettered with the reason
    'subscription {id} was deleted' and stays in the message log; the subscription's queues on the
    broker are emptied. Nothing more is delivered to it. The reply says how many deliveries were dead-
    lettered.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SubscriptionDeleted
    """

    return (
        await asyncio_detailed(
            subscription_id=subscription_id,
            client=client,
        )
    ).parsed
