from __future__ import annotations

from django.urls import path

from api.delivery import views

urlpatterns = [
    path("rooms/<int:room_id>/messages/", views.PublishView.as_view(), name="publish"),
    path("rooms/<int:room_id>/messages/batch/", views.BatchPublishView.as_view(), name="publish-batch"),
    path("messages/", views.MessageLogView.as_view(), name="message-log"),
    path("whoami/", views.WhoAmIView.as_view(), name="whoami"),
    path("messages/<uuid:message_id>/", views.MessageDetailView.as_view(), name="message-detail"),
    path("messages/<uuid:message_id>/republish/", views.RepublishView.as_view(), name="message-republish"),
    path("subscriptions/<int:subscription_id>/pull/", views.PullView.as_view(), name="pull"),
    path("subscriptions/<int:subscription_id>/ack/", views.AckView.as_view(), name="ack"),
    path("subscriptions/<int:subscription_id>/nack/", views.NackView.as_view(), name="nack"),
    path("subscriptions/<int:subscription_id>/extend/", views.ExtendView.as_view(), name="extend"),
    path("subscriptions/<int:subscription_id>/dead-letters/", views.DeadLetterListView.as_view(), name="dead-letters"),
    path("subscriptions/<int:subscription_id>/parked-keys/", views.ParkedKeysView.as_view(), name="parked-keys"),
    path("subscriptions/<int:subscription_id>/parked-keys/release/", views.ReleaseKeyView.as_view(),
         name="parked-keys-release"),
    path("subscriptions/<int:subscription_id>/dead-letters/replay/", views.DeadLetterReplayView.as_view(),
         name="dead-letters-replay"),
    path("subscriptions/<int:subscription_id>/dead-letters/purge/", views.DeadLetterPurgeView.as_view(),
         name="dead-letters-purge"),
]
