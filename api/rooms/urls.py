from __future__ import annotations

from django.urls import path

from api.rooms import views

urlpatterns = [
    path("rooms/", views.RoomListView.as_view(), name="room-list"),
    path("rooms/<int:room_id>/", views.RoomDetailView.as_view(), name="room-detail"),
    path("rooms/<int:room_id>/event-types/", views.EventTypeListView.as_view(), name="event-type-list"),
    path("rooms/<int:room_id>/event-types/<int:event_type_id>/", views.EventTypeDetailView.as_view(),
         name="event-type-detail"),
]
