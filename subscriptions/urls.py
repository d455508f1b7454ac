from __future__ import annotations

from django.urls import path

from subscriptions import api

urlpatterns = [
    path("rooms/<int:room_id>/subscriptions/", api.SubscriptionListView.as_view(), name="subscription-list"),
    path("subscriptions/<int:subscription_id>/", api.SubscriptionDetailView.as_view(), name="subscription-detail"),
    path("subscriptions/<int:subscription_id>/pause/", api.PauseView.as_view(), name="subscription-pause"),
    path("subscriptions/<int:subscription_id>/resume/", api.ResumeView.as_view(), name="subscription-resume"),
    path("subscriptions/<int:subscription_id>/rotate-secret/", api.RotateSecretView.as_view(),
         name="subscription-rotate-secret"),
]
