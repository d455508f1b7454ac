from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...models.publish_reply import PublishReply
from ...models.publish_request import PublishRequest
from ...types import UNSET, Response, Unset


def _get_kwargs(
    room_id: int,
    *,
    body: PublishRequest,
    x_correlation_id: str | Unset = UNSET,
    traceparent: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(x_correlation_id, Unset):
        headers["X-Correlation-ID"] = x_correlation_id

    if not isinstance(traceparent, Unset):
        headers["traceparent"] = traceparent

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/rooms/{room_id}/messages/".format(
            room_id=quote(str(room_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | FieldErrors | PublishReply | None:
    if response.status_code == 202:
        response_202 = PublishReply.from_dict(response.json())

        return response_202

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

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | FieldErrors | PublishReply]:
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
    body: PublishRequest,
    x_correlation_id: str | Unset = UNSET,
    traceparent: str | Unset = UNSET,
) -> Response[Error | FieldErrors | PublishReply]:
    """Publish an event to a room

    Args:
        room_id (int):
        x_correlation_id (str | Unset):
        traceparent (str | Unset):
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PublishReply]
    """

    kwargs = _get_kwargs(
        room_id=room_id,
        body=body,
        x_correlation_id=x_correlation_id,
        traceparent=traceparent,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    room_id: int,
    *,
    client: AuthenticatedClient,
    body: PublishRequest,
    x_correlation_id: str | Unset = UNSET,
    traceparent: str | Unset = UNSET,
) -> Error | FieldErrors | PublishReply | None:
    """Publish an event to a room

    Args:
        room_id (int):
        x_correlation_id (str | Unset):
        traceparent (str | Unset):
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PublishReply
    """

    return sync_detailed(
        room_id=room_id,
        client=client,
        body=body,
        x_correlation_id=x_correlation_id,
        traceparent=traceparent,
    ).parsed


async def asyncio_detailed(
    room_id: int,
    *,
    client: AuthenticatedClient,
    body: PublishRequest,
    x_correlation_id: str | Unset = UNSET,
    traceparent: str | Unset = UNSET,
) -> Response[Error | FieldErrors | PublishReply]:
    """Publish an event to a room

    Args:
        room_id (int):
        x_correlation_id (str | Unset):
        traceparent (str | Unset):
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | PublishReply]
    """

    kwargs = _get_kwargs(
        room_id=room_id,
        body=body,
        x_correlation_id=x_correlation_id,
        traceparent=traceparent,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    room_id: int,
    *,
    client: AuthenticatedClient,
    body: PublishRequest,
    x_correlation_id: str | Unset = UNSET,
    traceparent: str | Unset = UNSET,
) -> Error | FieldErrors | PublishReply | None:
    """Publish an event to a room

    Args:
        room_id (int):
        x_correlation_id (str | Unset):
        traceparent (str | Unset):
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | PublishReply
    """

    return (
        await asyncio_detailed(
            room_id=room_id,
            client=client,
            body=body,
            x_correlation_id=x_correlation_id,
            traceparent=traceparent,
        )
    ).parsed
