from __future__ import annotations

from django.urls import path

from api.subscriptions import views

urlpatterns = [
    path("rooms/<int:room_id>/subscriptions/", views.SubscriptionListView.as_view(), name="subscription-list"),
    path("subscriptions/<int:subscription_id>/", views.SubscriptionDetailView.as_view(), name="subscription-detail"),
    path("subscriptions/<int:subscription_id>/pause/", views.PauseView.as_view(), name="subscription-pause"),
    path("subscriptions/<int:subscription_id>/resume/", views.ResumeView.as_view(), name="subscription-resume"),
    path("subscriptions/<int:subscription_id>/rotate-secret/", views.RotateSecretView.as_view(),
         name="subscription-rotate-secret"),
    path("subscriptions/<int:subscription_id>/end-secret-overlap/", views.EndSecretOverlapView.as_view(),
         name="subscription-end-secret-overlap"),
    path("subscriptions/<int:subscription_id>/breaker/", views.BreakerView.as_view(), name="subscription-breaker"),
]
