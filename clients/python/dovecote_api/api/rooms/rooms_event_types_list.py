from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...models.paginated_event_type_list import PaginatedEventTypeList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    room_id: int,
    *,
    cursor: str | Unset = UNSET,
    name: str | Unset = UNSET,
    ordering: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    version: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["name"] = name

    params["ordering"] = ordering

    params["page_size"] = page_size

    params["version"] = version

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/rooms/{room_id}/event-types/".format(
            room_id=quote(str(room_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | FieldErrors | PaginatedEventTypeList | None:
    if response.status_code == 200:
        response_200 = PaginatedEventTypeList.from_dict(response.json())

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
) -> Response[Error | FieldErrors | PaginatedEventTypeList]:
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
    cursor: str | Unset = UNSET,
    name: str | Unset = UNSET,
    ordering: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    version: str | Unset = UNSET,
) -> Response[Error | FieldErrors | PaginatedEventTypeList]:
    """List a room's event types

    Args:
        room_id (int):
        cursor (str | Unset):
        name (str | Unset):
        ordering (str | Unset):
        page_size (int | Unset):
        version (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PaginatedEventTypeList]
    """

    kwargs = _get_kwargs(
        room_id=room_id,
        cursor=cursor,
        name=name,
        ordering=ordering,
        page_size=page_size,
        version=version,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    room_id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    name: str | Unset = UNSET,
    ordering: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    version: str | Unset = UNSET,
) -> Error | FieldErrors | PaginatedEventTypeList | None:
    """List a room's event types

    Args:
        room_id (int):
        cursor (str | Unset):
        name (str | Unset):
        ordering (str | Unset):
        page_size (int | Unset):
        version (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PaginatedEventTypeList
    """

    return sync_detailed(
        room_id=room_id,
        client=client,
        cursor=cursor,
        name=name,
        ordering=ordering,
        page_size=page_size,
        version=version,
    ).parsed


async def asyncio_detailed(
    room_id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    name: str | Unset = UNSET,
    ordering: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    version: str | Unset = UNSET,
) -> Response[Error | FieldErrors | PaginatedEventTypeList]:
    """List a room's event types

    Args:
        room_id (int):
        cursor (str | Unset):
        name (str | Unset):
        ordering (str | Unset):
        page_size (int | Unset):
        version (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PaginatedEventTypeList]
    """

    kwargs = _get_kwargs(
        room_id=room_id,
        cursor=cursor,
        name=name,
        ordering=ordering,
        page_size=page_size,
        version=version,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    room_id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    name: str | Unset = UNSET,
    ordering: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    version: str | Unset = UNSET,
) -> Error | FieldErrors | PaginatedEventTypeList | None:
    """List a room's event types

    Args:
        room_id (int):
        cursor (str | Unset):
        name (str | Unset):
        ordering (str | Unset):
        page_size (int | Unset):
        version (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PaginatedEventTypeList
    """

    return (
        await asyncio_detailed(
            room_id=room_id,
            client=client,
            cursor=cursor,
            name=name,
            ordering=ordering,
            page_size=page_size,
            version=version,
        )
    ).parsed
