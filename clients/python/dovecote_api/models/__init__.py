"""Contains all the data models used in inputs/outputs"""

from .ack_failure import AckFailure
from .ack_request import AckRequest
from .action_enum import ActionEnum
from .archived_message import ArchivedMessage
from .archived_message_archive_location import ArchivedMessageArchiveLocation
from .attempt import Attempt
from .batch_publish_request import BatchPublishRequest
from .batch_reply import BatchReply
from .breaker import Breaker
from .breaker_history import BreakerHistory
from .breaker_on_disable_enum import BreakerOnDisableEnum
from .breaker_request import BreakerRequest
from .breaker_state_enum import BreakerStateEnum
from .breaker_transition import BreakerTransition
from .dead_letter import DeadLetter
from .dead_letter_action_reply import DeadLetterActionReply
from .dead_letter_selection_request import DeadLetterSelectionRequest
from .delivery_row import DeliveryRow
from .delivery_status_enum import DeliveryStatusEnum
from .destination import Destination
from .destination_detail import DestinationDetail
from .endpoint import Endpoint
from .error import Error
from .error_report_row import ErrorReportRow
from .event_type import EventType
from .event_type_filter import EventTypeFilter
from .event_type_filter_request import EventTypeFilterRequest
from .event_type_request import EventTypeRequest
from .extend_request import ExtendRequest
from .field_errors import FieldErrors
from .hourly import Hourly
from .latency import Latency
from .level_enum import LevelEnum
from .message_detail import MessageDetail
from .messages_list_status import MessagesListStatus
from .mode_enum import ModeEnum
from .nack_request import NackRequest
from .ordering_enum import OrderingEnum
from .outcome_enum import OutcomeEnum
from .paginated_dead_letter_list import PaginatedDeadLetterList
from .paginated_delivery_row_list import PaginatedDeliveryRowList
from .paginated_endpoint_list import PaginatedEndpointList
from .paginated_error_report_row_list import PaginatedErrorReportRowList
from .paginated_event_type_list import PaginatedEventTypeList
from .paginated_hourly_list import PaginatedHourlyList
from .paginated_latency_list import PaginatedLatencyList
from .paginated_retry_cost_list import PaginatedRetryCostList
from .paginated_room_list import PaginatedRoomList
from .paginated_run_list import PaginatedRunList
from .paginated_subscription_list import PaginatedSubscriptionList
from .parked_key import ParkedKey
from .patched_room_request import PatchedRoomRequest
from .patched_subscription_request import PatchedSubscriptionRequest
from .patched_subscription_request_filter_type_0 import PatchedSubscriptionRequestFilterType0
from .publish_reply import PublishReply
from .publish_request import PublishRequest
from .pull_reply import PullReply
from .pull_request import PullRequest
from .pulled_message import PulledMessage
from .release_key_request import ReleaseKeyRequest
from .released_key import ReleasedKey
from .reports_latency_list_level import ReportsLatencyListLevel
from .reports_retry_cost_list_by import ReportsRetryCostListBy
from .retry_cost import RetryCost
from .room import Room
from .room_deleted import RoomDeleted
from .room_request import RoomRequest
from .rooms_subscriptions_list_status import RoomsSubscriptionsListStatus
from .rooms_subscriptions_list_type import RoomsSubscriptionsListType
from .rotate_secret_request import RotateSecretRequest
from .run import Run
from .run_status_enum import RunStatusEnum
from .settled import Settled
from .subscription import Subscription
from .subscription_deleted import SubscriptionDeleted
from .subscription_filter_type_0 import SubscriptionFilterType0
from .subscription_request import SubscriptionRequest
from .subscription_request_filter_type_0 import SubscriptionRequestFilterType0
from .subscription_status_enum import SubscriptionStatusEnum
from .type_enum import TypeEnum
from .who_am_i import WhoAmI

__all__ = (
    "AckFailure",
    "AckRequest",
    "ActionEnum",
    "ArchivedMessage",
    "ArchivedMessageArchiveLocation",
    "Attempt",
    "BatchPublishRequest",
    "BatchReply",
    "Breaker",
    "BreakerHistory",
    "BreakerOnDisableEnum",
    "BreakerRequest",
    "BreakerStateEnum",
    "BreakerTransition",
    "DeadLetter",
    "DeadLetterActionReply",
    "DeadLetterSelectionRequest",
    "DeliveryRow",
    "DeliveryStatusEnum",
    "Destination",
    "DestinationDetail",
    "Endpoint",
    "Error",
    "ErrorReportRow",
    "EventType",
    "EventTypeFilter",
    "EventTypeFilterRequest",
    "EventTypeRequest",
    "ExtendRequest",
    "FieldErrors",
    "Hourly",
    "Latency",
    "LevelEnum",
    "MessageDetail",
    "MessagesListStatus",
    "ModeEnum",
    "NackRequest",
    "OrderingEnum",
    "OutcomeEnum",
    "PaginatedDeadLetterList",
    "PaginatedDeliveryRowList",
    "PaginatedEndpointList",
    "PaginatedErrorReportRowList",
    "PaginatedEventTypeList",
    "PaginatedHourlyList",
    "PaginatedLatencyList",
    "PaginatedRetryCostList",
    "PaginatedRoomList",
    "PaginatedRunList",
    "PaginatedSubscriptionList",
    "ParkedKey",
    "PatchedRoomRequest",
    "PatchedSubscriptionRequest",
    "PatchedSubscriptionRequestFilterType0",
    "PublishReply",
    "PublishRequest",
    "PulledMessage",
    "PullReply",
    "PullRequest",
    "ReleasedKey",
    "ReleaseKeyRequest",
    "ReportsLatencyListLevel",
    "ReportsRetryCostListBy",
    "RetryCost",
    "Room",
    "RoomDeleted",
    "RoomRequest",
    "RoomsSubscriptionsListStatus",
    "RoomsSubscriptionsListType",
    "RotateSecretRequest",
    "Run",
    "RunStatusEnum",
    "Settled",
    "Subscription",
    "SubscriptionDeleted",
    "SubscriptionFilterType0",
    "SubscriptionRequest",
    "SubscriptionRequestFilterType0",
    "SubscriptionStatusEnum",
    "TypeEnum",
    "WhoAmI",
)
