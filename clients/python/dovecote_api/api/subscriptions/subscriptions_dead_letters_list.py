import datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...models.paginated_dead_letter_list import PaginatedDeadLetterList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    subscription_id: int,
    *,
    cursor: str | Unset = UNSET,
    error: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["error"] = error

    params["page_size"] = page_size

    json_since: str | Unset = UNSET
    if not isinstance(since, Unset):
        json_since = since.isoformat()
    params["since"] = json_since

    json_until: str | Unset = UNSET
    if not isinstance(until, Unset):
        json_until = until.isoformat()
    params["until"] = json_until

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/subscriptions/{subscription_id}/dead-letters/".format(
            subscription_id=quote(str(subscription_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | FieldErrors | PaginatedDeadLetterList | None:
    if response.status_code == 200:
        response_200 = PaginatedDeadLetterList.from_dict(response.json())

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
) -> Response[Error | FieldErrors | PaginatedDeadLetterList]:
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
    cursor: str | Unset = UNSET,
    error: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Response[Error | FieldErrors | PaginatedDeadLetterList]:
    """
    Args:
        subscription_id (int):
        cursor (str | Unset):
        error (str | Unset):
        page_size (int | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PaginatedDeadLetterList]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
        cursor=cursor,
        error=error,
        page_size=page_size,
        since=since,
        until=until,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    error: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Error | FieldErrors | PaginatedDeadLetterList | None:
    """
    Args:
        subscription_id (int):
        cursor (str | Unset):
        error (str | Unset):
        page_size (int | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PaginatedDeadLetterList
    """

    return sync_detailed(
        subscription_id=subscription_id,
        client=client,
        cursor=cursor,
        error=error,
        page_size=page_size,
        since=since,
        until=until,
    ).parsed


async def asyncio_detailed(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    error: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Response[Error | FieldErrors | PaginatedDeadLetterList]:
    """
    Args:
        subscription_id (int):
        cursor (str | Unset):
        error (str | Unset):
        page_size (int | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PaginatedDeadLetterList]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
        cursor=cursor,
        error=error,
        page_size=page_size,
        since=since,
        until=until,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    error: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Error | FieldErrors | PaginatedDeadLetterList | None:
    """
    Args:
        subscription_id (int):
        cursor (str | Unset):
        error (str | Unset):
        page_size (int | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PaginatedDeadLetterList
    """

    return (
        await asyncio_detailed(
            subscription_id=subscription_id,
            client=client,
            cursor=cursor,
            error=error,
            page_size=page_size,
            since=since,
            until=until,
        )
    ).parsed
