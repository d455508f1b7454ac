from __future__ import annotations

from django.urls import path

from rooms import api

urlpatterns = [
    path("rooms/", api.RoomListView.as_view(), name="room-list"),
    path("rooms/<int:room_id>/", api.RoomDetailView.as_view(), name="room-detail"),
    path("rooms/<int:room_id>/event-types/", api.EventTypeListView.as_view(), name="event-type-list"),
    path("rooms/<int:room_id>/event-types/<int:event_type_id>/", api.EventTypeDetailView.as_view(),
         name="event-type-detail"),
]
