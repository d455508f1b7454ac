from __future__ import annotations

from django.urls import path

from delivery import api

urlpatterns = [
    path("rooms/<int:room_id>/messages/", api.PublishView.as_view(), name="publish"),
    path("rooms/<int:room_id>/messages/batch/", api.BatchPublishView.as_view(), name="publish-batch"),
    path("messages/", api.MessageLogView.as_view(), name="message-log"),
    path("messages/<uuid:message_id>/", api.MessageDetailView.as_view(), name="message-detail"),
]
