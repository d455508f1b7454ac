import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...models.messages_list_status import MessagesListStatus
from ...models.paginated_delivery_row_list import PaginatedDeliveryRowList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    correlation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    room: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    status: MessagesListStatus | Unset = UNSET,
    subscription: int | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["correlation_id"] = correlation_id

    params["cursor"] = cursor

    params["event_type"] = event_type

    params["page_size"] = page_size

    params["room"] = room

    json_since: str | Unset = UNSET
    if not isinstance(since, Unset):
        json_since = since.isoformat()
    params["since"] = json_since

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status

    params["status"] = json_status

    params["subscription"] = subscription

    json_until: str | Unset = UNSET
    if not isinstance(until, Unset):
        json_until = until.isoformat()
    params["until"] = json_until

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/messages/",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | FieldErrors | PaginatedDeliveryRowList | None:
    if response.status_code == 200:
        response_200 = PaginatedDeliveryRowList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = FieldErrors.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

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
) -> Response[Error | FieldErrors | PaginatedDeliveryRowList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    correlation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    room: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    status: MessagesListStatus | Unset = UNSET,
    subscription: int | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Response[Error | FieldErrors | PaginatedDeliveryRowList]:
    """One row per destination, newest first.

    Args:
        correlation_id (str | Unset):
        cursor (str | Unset):
        event_type (str | Unset):
        page_size (int | Unset):
        room (int | Unset):
        since (datetime.datetime | Unset):
        status (MessagesListStatus | Unset):
        subscription (int | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PaginatedDeliveryRowList]
    """

    kwargs = _get_kwargs(
        correlation_id=correlation_id,
        cursor=cursor,
        event_type=event_type,
        page_size=page_size,
        room=room,
        since=since,
        status=status,
        subscription=subscription,
        until=until,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    correlation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    room: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    status: MessagesListStatus | Unset = UNSET,
    subscription: int | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Error | FieldErrors | PaginatedDeliveryRowList | None:
    """One row per destination, newest first.

    Args:
        correlation_id (str | Unset):
        cursor (str | Unset):
        event_type (str | Unset):
        page_size (int | Unset):
        room (int | Unset):
        since (datetime.datetime | Unset):
        status (MessagesListStatus | Unset):
        subscription (int | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PaginatedDeliveryRowList
    """

    return sync_detailed(
        client=client,
        correlation_id=correlation_id,
        cursor=cursor,
        event_type=event_type,
        page_size=page_size,
        room=room,
        since=since,
        status=status,
        subscription=subscription,
        until=until,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    correlation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    room: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    status: MessagesListStatus | Unset = UNSET,
    subscription: int | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Response[Error | FieldErrors | PaginatedDeliveryRowList]:
    """One row per destination, newest first.

    Args:
        correlation_id (str | Unset):
        cursor (str | Unset):
        event_type (str | Unset):
        page_size (int | Unset):
        room (int | Unset):
        since (datetime.datetime | Unset):
        status (MessagesListStatus | Unset):
        subscription (int | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PaginatedDeliveryRowList]
    """

    kwargs = _get_kwargs(
        correlation_id=correlation_id,
        cursor=cursor,
        event_type=event_type,
        page_size=page_size,
        room=room,
        since=since,
        status=status,
        subscription=subscription,
        until=until,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    correlation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    room: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    status: MessagesListStatus | Unset = UNSET,
    subscription: int | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
) -> Error | FieldErrors | PaginatedDeliveryRowList | None:
    """One row per destination, newest first.

    Args:
        correlation_id (str | Unset):
        cursor (str | Unset):
        event_type (str | Unset):
        page_size (int | Unset):
        room (int | Unset):
        since (datetime.datetime | Unset):
        status (MessagesListStatus | Unset):
        subscription (int | Unset):
        until (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PaginatedDeliveryRowList
    """

    return (
        await asyncio_detailed(
            client=client,
            correlation_id=correlation_id,
            cursor=cursor,
            event_type=event_type,
            page_size=page_size,
            room=room,
            since=since,
            status=status,
            subscription=subscription,
            until=until,
        )
    ).parsed
