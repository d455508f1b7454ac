from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.dead_letter_action_reply import DeadLetterActionReply
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...types import Response


def _get_kwargs(
    subscription_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/api/v1/subscriptions/{subscription_id}/dead-letters/".format(
            subscription_id=quote(str(subscription_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DeadLetterActionReply | Error | FieldErrors | None:
    if response.status_code == 200:
        response_200 = DeadLetterActionReply.from_dict(response.json())

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
) -> Response[DeadLetterActionReply | Error | FieldErrors]:
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
) -> Response[DeadLetterActionReply | Error | FieldErrors]:
    """Purge dead letters (deprecated: use POST …/dead-letters/purge/)

     Takes the same JSON body as `POST /subscriptions/{id}/dead-letters/purge/`, which replaces it:
    OpenAPI 3.0 cannot describe a DELETE body, so generated clients cannot call this one. It keeps
    working until 2027-06-01; its replies carry `Deprecation`, `Sunset` and a `Link` to the successor.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeadLetterActionReply | Error | FieldErrors]
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
) -> DeadLetterActionReply | Error | FieldErrors | None:
    """Purge dead letters (deprecated: use POST …/dead-letters/purge/)

     Takes the same JSON body as `POST /subscriptions/{id}/dead-letters/purge/`, which replaces it:
    OpenAPI 3.0 cannot describe a DELETE body, so generated clients cannot call this one. It keeps
    working until 2027-06-01; its replies carry `Deprecation`, `Sunset` and a `Link` to the successor.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeadLetterActionReply | Error | FieldErrors
    """

    return sync_detailed(
        subscription_id=subscription_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[DeadLetterActionReply | Error | FieldErrors]:
    """Purge dead letters (deprecated: use POST …/dead-letters/purge/)

     Takes the same JSON body as `POST /subscriptions/{id}/dead-letters/purge/`, which replaces it:
    OpenAPI 3.0 cannot describe a DELETE body, so generated clients cannot call this one. It keeps
    working until 2027-06-01; its replies carry `Deprecation`, `Sunset` and a `Link` to the successor.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeadLetterActionReply | Error | FieldErrors]
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
) -> DeadLetterActionReply | Error | FieldErrors | None:
    """Purge dead letters (deprecated: use POST …/dead-letters/purge/)

     Takes the same JSON body as `POST /subscriptions/{id}/dead-letters/purge/`, which replaces it:
    OpenAPI 3.0 cannot describe a DELETE body, so generated clients cannot call this one. It keeps
    working until 2027-06-01; its replies carry `Deprecation`, `Sunset` and a `Link` to the successor.

    Args:
        subscription_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeadLetterActionReply | Error | FieldErrors
    """

    return (
        await asyncio_detailed(
            subscription_id=subscription_id,
            client=client,
        )
    ).parsed
