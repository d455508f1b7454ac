"""The operator UI's URLs, mounted at the site root."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from console import api_keys, dashboard, dead_letters, login, messages, reports, rooms, site, subscriptions

app_name = "console"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("favicon.ico", site.favicon, name="favicon"),
    path("login/", login.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="console:login"), name="logout"),
    path("rooms/", rooms.room_list, name="room-list"),
    path("rooms/new/", rooms.room_create, name="room-create"),
    path("rooms/preview/", rooms.room_schedule_preview, name="room-preview"),
    path("rooms/<int:room_id>/", rooms.room_detail, name="room-detail"),
    path("rooms/<int:room_id>/edit/", rooms.room_edit, name="room-edit"),
    path("rooms/<int:room_id>/delete/", rooms.room_delete, name="room-delete"),
    path("rooms/<int:room_id>/event-types/", rooms.event_type_add, name="event-type-add"),
    path("rooms/<int:room_id>/subscriptions/new/", subscriptions.subscription_create, name="subscription-create"),
    path("rooms/<int:room_id>/subscriptions/preview/", subscriptions.subscription_schedule_preview,
         name="subscription-preview"),
    path("rooms/<int:room_id>/subscriptions/filter-check/", subscriptions.subscription_filter_check,
         name="subscription-filter-check"),
    path("subscriptions/", subscriptions.subscription_list, name="subscription-list"),
    path("subscriptions/<int:subscription_id>/", subscriptions.subscription_detail, name="subscription-detail"),
    path("subscriptions/<int:subscription_id>/edit/", subscriptions.subscription_edit, name="subscription-edit"),
    path("subscriptions/<int:subscription_id>/delete/", subscriptions.subscription_delete,
         name="subscription-delete"),
    path("subscriptions/<int:subscription_id>/pause/", subscriptions.subscription_pause, name="subscription-pause"),
    path("subscriptions/<int:subscription_id>/resume/", subscriptions.subscription_resume,
         name="subscription-resume"),
    path("subscriptions/<int:subscription_id>/rotate-secret/", subscriptions.subscription_rotate_secret,
         name="subscription-rotate-secret"),
    path("subscriptions/<int:subscription_id>/end-secret-overlap/", subscriptions.subscription_end_secret_overlap,
         name="subscription-end-secret-overlap"),
    path("subscriptions/<int:subscription_id>/secret/", subscriptions.subscription_secret,
         name="subscription-secret"),
    path("subscriptions/<int:subscription_id>/release-key/", subscriptions.subscription_release_key,
         name="subscription-release-key"),
    path("subscriptions/<int:subscription_id>/test-event/", subscriptions.subscription_test_event,
         name="subscription-test-event"),
    path("subscriptions/<int:subscription_id>/dead-letters/", dead_letters.dead_letter_list,
         name="dead-letter-list"),
    path("subscriptions/<int:subscription_id>/dead-letters/action/", dead_letters.dead_letter_action,
         name="dead-letter-action"),
    path("dead-letters/", dead_letters.dead_letter_index, name="dead-letter-index"),
    path("messages/", messages.message_list, name="message-list"),
    path("messages/<uuid:message_id>/", messages.message_detail, name="message-detail"),
    path("messages/<uuid:message_id>/republish/", messages.message_republish, name="message-republish"),
    path("reports/", reports.reports, name="reports"),
    path("reports/refresh/", reports.reports_refresh, name="reports-refresh"),
    path("api-keys/", api_keys.api_key_list, name="api-key-list"),
    path("api-keys/<int:key_id>/revoke/", api_keys.api_key_revoke, name="api-key-revoke"),
]

# Static files (the UI's CSS and htmx) are served by WhiteNoise's middleware (dovecote/settings.py: STORAGES).
