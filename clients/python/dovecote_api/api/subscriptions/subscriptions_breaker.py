from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.breaker_history import BreakerHistory
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...types import Response


def _get_kwargs(
    subscription_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/subscriptions/{subscription_id}/breaker/".format(
            subscription_id=quote(str(subscription_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> BreakerHistory | Error | FieldErrors | None:
    if response.status_code == 200:
        response_200 = BreakerHistory.from_dict(response.json())

        return response_200

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
) -> Response[BreakerHistory | Error | FieldErrors]:
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
) -> Response[BreakerHistory | Error | FieldErrors]:
    """Read a push subscription's circuit breaker and its history

     The state (`closed`, `open`, `half_open`), why, the next probe time when open, and the latest
    transitions, each with its time, reason and the attempt that caused it (docs/delivery-
    semantics.md#circuit-breaker).

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BreakerHistory | Error | FieldErrors]
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
) -> BreakerHistory | Error | FieldErrors | None:
    """Read a push subscription's circuit breaker and its history

     The state (`closed`, `open`, `half_open`), why, the next probe time when open, and the latest
    transitions, each with its time, reason and the attempt that caused it (docs/delivery-
    semantics.md#circuit-breaker).

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BreakerHistory | Error | FieldErrors
    """

    return sync_detailed(
        subscription_id=subscription_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[BreakerHistory | Error | FieldErrors]:
    """Read a push subscription's circuit breaker and its history

     The state (`closed`, `open`, `half_open`), why, the next probe time when open, and the latest
    transitions, each with its time, reason and the attempt that caused it (docs/delivery-
    semantics.md#circuit-breaker).

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BreakerHistory | Error | FieldErrors]
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
) -> BreakerHistory | Error | FieldErrors | None:
    """Read a push subscription's circuit breaker and its history

     The state (`closed`, `open`, `half_open`), why, the next probe time when open, and the latest
    transitions, each with its time, reason and the attempt that caused it (docs/delivery-
    semantics.md#circuit-breaker).

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BreakerHistory | Error | FieldErrors
    """

    return (
        await asyncio_detailed(
            subscription_id=subscription_id,
            client=client,
        )
    ).parsed
