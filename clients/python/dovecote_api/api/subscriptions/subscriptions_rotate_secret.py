from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.field_errors import FieldErrors
from ...models.rotate_secret_request import RotateSecretRequest
from ...models.subscription import Subscription
from ...types import UNSET, Response, Unset


def _get_kwargs(
    subscription_id: int,
    *,
    body: RotateSecretRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/subscriptions/{subscription_id}/rotate-secret/".format(
            subscription_id=quote(str(subscription_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | FieldErrors | Subscription | None:
    if response.status_code == 200:
        response_200 = Subscription.from_dict(response.json())

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
    subscription_id: int,
    *,
    client: AuthenticatedClient,
    body: RotateSecretRequest | Unset = UNSET,
) -> Response[Error | FieldErrors | Subscription]:
    """Replace a push subscription's signing secret, with an overlap

     The reply shows the new secret in full. Deliveries are signed with it from the next attempt on, on
    every worker. The old secret keeps signing each push too, a second signature in `webhook-signature`,
    for `overlap_seconds` (default 24 hours): receivers verifying with either secret accept it.
    `previous_secret_until` in the reply says when the old secret stops being used; end-secret-overlap
    ends it early. Rotating during an overlap drops the oldest secret.

    Args:
        subscription_id (int):
        body (RotateSecretRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | Subscription]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
    body: RotateSecretRequest | Unset = UNSET,
) -> Error | FieldErrors | Subscription | None:
    """Replace a push subscription's signing secret, with an overlap

     The reply shows the new secret in full. Deliveries are signed with it from the next attempt on, on
    every worker. The old secret keeps signing each push too, a second signature in `webhook-signature`,
    for `overlap_seconds` (default 24 hours): receivers verifying with either secret accept it.
    `previous_secret_until` in the reply says when the old secret stops being used; end-secret-overlap
    ends it early. Rotating during an overlap drops the oldest secret.

    Args:
        subscription_id (int):
        body (RotateSecretRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | Subscription
    """

    return sync_detailed(
        subscription_id=subscription_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
    body: RotateSecretRequest | Unset = UNSET,
) -> Response[Error | FieldErrors | Subscription]:
    """Replace a push subscription's signing secret, with an overlap

     The reply shows the new secret in full. Deliveries are signed with it from the next attempt on, on
    every worker. The old secret keeps signing each push too, a second signature in `webhook-signature`,
    for `overlap_seconds` (default 24 hours): receivers verifying with either secret accept it.
    `previous_secret_until` in the reply says when the old secret stops being used; end-secret-overlap
    ends it early. Rotating during an overlap drops the oldest secret.

    Args:
        subscription_id (int):
        body (RotateSecretRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FieldErrors | Subscription]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    subscription_id: int,
    *,
    client: AuthenticatedClient,
    body: RotateSecretRequest | Unset = UNSET,
) -> Error | FieldErrors | Subscription | None:
    """Replace a push subscription's signing secret, with an overlap

     The reply shows the new secret in full. Deliveries are signed with it from the next attempt on, on
    every worker. The old secret keeps signing each push too, a second signature in `webhook-signature`,
    for `overlap_seconds` (default 24 hours): receivers verifying with either secret accept it.
    `previous_secret_until` in the reply says when the old secret stops being used; end-secret-overlap
    ends it early. Rotating during an overlap drops the oldest secret.

    Args:
        subscription_id (int):
        body (RotateSecretRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FieldErrors | Subscription
    """

    return (
        await asyncio_detailed(
            subscription_id=subscription_id,
            client=client,
            body=body,
        )
    ).parsed
