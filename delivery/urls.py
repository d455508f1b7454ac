from __future__ import annotations

from django.urls import path

from delivery import api

urlpatterns = [
    path("rooms/<int:room_id>/messages/", api.PublishView.as_view(), name="publish"),
    path("rooms/<int:room_id>/messages/batch/", api.BatchPublishView.as_view(), name="publish-batch"),
    path("messages/", api.MessageLogView.as_view(), name="message-log"),
    path("whoami/", api.WhoAmIView.as_view(), name="whoami"),
    path("messages/<uuid:message_id>/", api.MessageDetailView.as_view(), name="message-detail"),
    path("subscriptions/<int:subscription_id>/pull/", api.PullView.as_view(), name="pull"),
    path("subscriptions/<int:subscription_id>/ack/", api.AckView.as_view(), name="ack"),
    path("subscriptions/<int:subscription_id>/nack/", api.NackView.as_view(), name="nack"),
    path("subscriptions/<int:subscription_id>/extend/", api.ExtendView.as_view(), name="extend"),
    path("subscriptions/<int:subscription_id>/dead-letters/", api.DeadLetterListView.as_view(), name="dead-letters"),
    path("subscriptions/<int:subscription_id>/dead-letters/replay/", api.DeadLetterReplayView.as_view(),
         name="dead-letters-replay"),
    path("subscriptions/<int:subscription_id>/dead-letters/purge/", api.DeadLetterPurgeView.as_view(),
         name="dead-letters-purge"),
]
